"""``provenance explain``: one combination's verdict, step by step.

Steps, in the order the audit takes them:

1. the rendered argv and env of every process (recipe engine);
2. each evidence role's normalised major flags (flags layer + policy);
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

from collections.abc import Mapping

from pydantic import BaseModel, ConfigDict, Field

from provenance.audit.declarations import DeclarationMatcher
from provenance.audit.index import EvidenceIndex
from provenance.audit.judge import Judge
from provenance.audit.normaliser import RoleNormaliser
from provenance.audit.tally import Tally
from provenance.audit.verdicts import EvidenceRef, NearestEvidence, Reason, RoleFlags
from provenance.audit.walks.selections import SelectionWalk
from provenance.model.combination import RenderResult, RoleCommand, Selection
from provenance.model.ledger import Declarations
from provenance.model.reasons import VerdictKind
from provenance.model.scope import (
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
    for record in judge.candidates(key.model_id, key.hardware, key.kind):
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
    )
