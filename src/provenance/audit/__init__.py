"""The audit: every combination of a recipe → recommended or guide-only, with reasons.

The data flows one way, and the modules are named after its steps (an
import-linter contract in ``pyproject.toml`` keeps every import pointing down it):

``normaliser``
    the adapter to the flags layer: a rendered process → its major FlagSet;
``keys``
    a deployment's processes → its :class:`~provenance.audit.keys.CombinationKey`;
``judge``
    a combination key → its :class:`~provenance.audit.judge.Outcome` (role-level and
    combination-level rules, memoised);
``tally``
    per key: its outcome, counts, an example; grouped into verdict entries;
``reverse``, ``claims``, ``summary``
    what the report derives from the tally alone;
``walks``
    the two walks over a recipe's cross-product that feed the tally (selection by
    selection, and by shape cell);
``pipeline``
    :func:`~provenance.audit.pipeline.audit` and its wiring (inputs, evidence loading).

Beside them: ``index`` (the evidence index the judge reads), ``verdicts`` (the report
models), ``declarations`` (reviewed guide-only acknowledgements) and ``explain`` (one
combination, step by step).
"""
