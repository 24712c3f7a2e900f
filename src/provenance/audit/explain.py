"""``provenance explain``: one combination's verdict, step by step.

Steps, in the order the audit takes them:

1. the rendered argv and env of every process (recipe engine);
2. each evidence role's normalised major flags (flags layer + policy), and every key
   present on either side that was *not* compared — tuning, harness or functional by
   the policy, or major but inert in the role's context — so nothing is ignored
   silently;
3. the scope: checkpoint, hardware, deployment kind and the evidence points in it;
4. every candidate evidence point: per role, what differs (recipe-only,
   evidence-only, changed values), whether the role shape matches, whether it
   is validated — and so whether it matches;
5. the verdict, its reasons and the nearest evidence point.

The selection is resolved by enumerating the recipe with the given filters and
picking the one reachable selection that matches (see
:func:`provenance.cli.audit.explain`), so an unreachable selection is refused
rather than explained.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping

from pydantic import BaseModel, ConfigDict, Field

from provenance.audit.declarations import DeclarationMatcher
from provenance.audit.index import EvidenceIndex
from provenance.audit.judge import Judge
from provenance.audit.normaliser import RoleNormaliser
from provenance.audit.tally import Tally
from provenance.audit.verdicts import EvidenceRef, NearestEvidence, Reason, RoleFlags
from provenance.audit.walks.selections import SelectionWalk
from provenance.model.combination import RenderResult, RoleCommand, Selection
from provenance.model.flags import FlagSet
from provenance.model.ledger import Declarations
from provenance.model.reasons import VerdictKind
from provenance.model.scope import (
    EVIDENCE_ROLE,
    ROLE_ORDER,
    recipe_role_shape,
    record_role_shape,
    shape_matches,
)

EXPLAIN_SCHEMA = "provenance.explain/v1"


class RoleDifference(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    role: str
    only_recipe: dict[str, str] = Field(default_factory=dict)
    only_evidence: dict[str, str] = Field(default_factory=dict)
    changed: dict[str, tuple[str, str]] = Field(default_factory=dict)
    recipe_shape: str
    evidence_shape: str
    shape_matches: bool

    @property
    def exact(self) -> bool:
        return not (self.only_recipe or self.only_evidence or self.changed)


#: The class a major key is reported under when a context rule makes it inert.
INERT_CLASS = "major, inert in this role"


class NotCompared(BaseModel):
    """A key the verdict did not compare: present in the recipe's processes of ``role``
    or in an in-scope evidence point's ``role``, and not a major flag there (its policy
    class, or :data:`INERT_CLASS`)."""

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)

    role: str
    key: str
    cls: str = Field(alias="class")
    #: the distinct values the recipe's processes of ``role`` give it (empty: not set)
    recipe: tuple[str, ...] = ()
    #: the distinct values of the in-scope evidence points that set it
    evidence: tuple[str, ...] = ()
    #: how many in-scope evidence points set it
    evidence_points: int = 0


class CandidateEvidence(BaseModel):
    """One in-scope evidence point and how it compares with the combination."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    record: str
    config_key: str
    prs: tuple[str, ...] = ()
    validated: bool
    partial: bool
    roles: tuple[RoleDifference, ...]
    matches: bool
    why: str


class Explanation(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)

    schema_: str = Field(default=EXPLAIN_SCHEMA, alias="schema")
    recipe: str
    selection: Selection
    commands: tuple[RoleCommand, ...]
    major: dict[str, tuple[dict[str, str], ...]]
    checkpoint: str
    hardware: str
    kind: str
    candidates: tuple[CandidateEvidence, ...]
    verdict: VerdictKind
    roles: tuple[RoleFlags, ...]
    reasons: tuple[Reason, ...]
    nearest: tuple[NearestEvidence, ...]
    evidence: tuple[EvidenceRef, ...]
    declared_by: str | None = None
    nearest_overall: tuple[NearestEvidence, ...] = ()
    not_compared: tuple[NotCompared, ...] = ()


def _ignored(flags: FlagSet, role: str, normaliser: RoleNormaliser) -> dict[str, str]:
    """Key → class of every key of ``flags`` (one process of ``role``, all its flags) that
    its comparison leaves out: not major, or major but inert in the role's context (the
    compared flags are the same without it)."""
    ignored = {k: normaliser.classify(k) for k in flags if normaliser.classify(k) != "major"}
    major = normaliser.major(flags)
    compared = normaliser.in_context(major, role)
    for key in major:
        if normaliser.in_context(major.without([key]), role) == compared:
            ignored[key] = INERT_CLASS
    return ignored


def not_compared(
    commands: Iterable[RoleCommand],
    evidence: Iterable[Mapping[str, FlagSet]],
    normaliser: RoleNormaliser,
) -> tuple[NotCompared, ...]:
    """Every key present on either side (the recipe's processes, the in-scope evidence
    points' roles) that no comparison of the combination used, per evidence role."""
    from provenance.normalise.canonical import normalise_argv

    classes: dict[tuple[str, str], str] = {}
    recipe: dict[tuple[str, str], set[str]] = defaultdict(set)
    found: dict[tuple[str, str], set[str]] = defaultdict(set)
    points: dict[tuple[str, str], int] = defaultdict(int)
    for command in commands:
        if command.argv is None:
            continue
        role = EVIDENCE_ROLE.get(command.role, command.role)
        flags = normalise_argv(command.argv, command.env).flags
        for key, cls in _ignored(flags, role, normaliser).items():
            classes.setdefault((role, key), cls)
            recipe[role, key].add(flags[key])
    for roles in evidence:
        for role, flags in roles.items():
            for key, cls in _ignored(flags, role, normaliser).items():
                classes.setdefault((role, key), cls)
                found[role, key].add(flags[key])
                points[role, key] += 1
    ordered = sorted(classes, key=lambda rk: (ROLE_ORDER.get(rk[0], 9), rk[0], rk[1]))
    return tuple(
        NotCompared(
            role=role,
            key=key,
            cls=classes[role, key],
            recipe=tuple(sorted(recipe.get((role, key), ()))),
            evidence=tuple(sorted(found.get((role, key), ()))),
            evidence_points=points.get((role, key), 0),
        )
        for role, key in ordered
    )


def explain(
    recipe: str,
    selection: Selection,
    result: RenderResult,
    graph: EvidenceIndex,
    normaliser: RoleNormaliser,
    declarations: Declarations | None = None,
    *,
    gpus_per_node: Mapping[str, int] | None = None,
) -> Explanation:
    """Explain the verdict of one rendered combination (``gpus_per_node``: hardware id ->
    GPUs per node, as the audit's, for reachability)."""
    judge = Judge(graph, normaliser.classify, gpus_per_node)
    matcher = DeclarationMatcher(declarations or Declarations())
    walk = SelectionWalk(Tally(recipe, judge, matcher), normaliser)
    key = walk.key_of(selection, result)
    outcome = judge.outcome(key)
    declared = (
        None
        if outcome.verdict is VerdictKind.RECOMMENDED
        else matcher.declared_by(recipe, selection, outcome.reason_codes)
    )
    shape = recipe_role_shape(key.kind, key.node_count)
    candidates = []
    in_scope = judge.candidates(key.model_id, key.hardware, key.kind)
    for record in in_scope:
        differences = []
        for role, flagsets in key.roles:
            evidence_shape = record_role_shape(record.record.topology, role)
            evidence_flags = record.major.get(role)
            for flags in flagsets:
                if evidence_flags is None:
                    differences.append(
                        RoleDifference(
                            role=role,
                            only_recipe=dict(flags),
                            recipe_shape=shape.describe(),
                            evidence_shape="role absent",
                            shape_matches=False,
                        )
                    )
                    continue
                diff = flags.diff(evidence_flags)
                differences.append(
                    RoleDifference(
                        role=role,
                        only_recipe=dict(diff.only_left),
                        only_evidence=dict(diff.only_right),
                        changed=dict(diff.changed),
                        recipe_shape=shape.describe(),
                        evidence_shape=evidence_shape.describe(),
                        shape_matches=shape_matches(shape, evidence_shape),
                    )
                )
        exact = bool(differences) and all(d.exact for d in differences)
        shaped = all(d.shape_matches for d in differences)
        if not exact:
            size = sum(
                len(d.only_recipe) + len(d.only_evidence) + len(d.changed) for d in differences
            )
            why = f"flags differ ({size} difference{'s' if size != 1 else ''})"
        elif not shaped:
            why = "flags match exactly, deployment shape differs"
        elif record.record.is_partial:
            why = "flags match exactly, but the extraction is partial"
        elif not record.validated:
            why = "flags match exactly, but no green sweep is recorded"
        else:
            why = "exact match, validated"
        candidates.append(
            CandidateEvidence(
                record=record.id,
                config_key=record.config_key,
                prs=record.prs,
                validated=record.validated,
                partial=record.record.is_partial,
                roles=tuple(differences),
                matches=exact and shaped and record.validated and not record.record.is_partial,
                why=why,
            )
        )
    candidates.sort(
        key=lambda c: (
            not c.matches,
            sum(len(d.only_recipe) + len(d.only_evidence) + len(d.changed) for d in c.roles),
            c.config_key,
        )
    )
    return Explanation(
        recipe=recipe,
        selection=selection,
        commands=result.roles,
        major={role: tuple(dict(f) for f in flagsets) for role, flagsets in key.roles},
        checkpoint=key.model_id,
        hardware=key.hardware,
        kind=key.kind,
        candidates=tuple(candidates),
        verdict=outcome.verdict,
        roles=outcome.roles,
        reasons=outcome.reasons,
        nearest=outcome.nearest,
        evidence=outcome.evidence,
        declared_by=declared,
        nearest_overall=outcome.nearest_overall,
        not_compared=not_compared(
            result.roles, [record.record.roles for record in in_scope], normaliser
        ),
    )
