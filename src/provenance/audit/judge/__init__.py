"""The judge: combination keys → verdicts (pure, memoised).

The second step of the audit's flow (keys → judge → tally → walks → pipeline).
Verdicts depend only on the scope (checkpoint, hardware, deployment kind), the
recipe's per-role major FlagSets and the recipe's role shape, never on the rest of
the selection. :class:`Judge` therefore computes

* one :class:`RoleJudgement` per distinct (scope, model id, evidence role, major
  FlagSet) — :mod:`~provenance.audit.judge.roles` holds the role-level rules;
* one :class:`Outcome` per distinct combination key —
  :mod:`~provenance.audit.judge.combinations` holds the combination-level rules;

and the tally shares them across every combination with the same key.

Speed (issue 8): the in-scope records of each role are indexed once per scope
(:mod:`~provenance.audit.judge.role_index`): grouped by their major FlagSet (a few
dozen distinct ones for hundreds of records), with the setters of each flag and key.
A role's distance to every group is a diff *size* (:meth:`FlagSet.diff_size`, set
operations); full diffs are built only for the records a report names (the nearest
point, the basis of ``missing-flag``). Reasons and flag provenance are built once per
index and flag and shared, as are the judgements of roles whose scope has no
candidate. ``tests/audit/judge_reference.py`` keeps the brute-force judge these must
agree with.
"""

from provenance.audit.judge.combinations import Judge, Outcome
from provenance.audit.judge.roles import ClassifyFn, RoleJudgement

__all__ = ["ClassifyFn", "Judge", "Outcome", "RoleJudgement"]
