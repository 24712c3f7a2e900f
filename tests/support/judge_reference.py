"""The judge as it was before its indexes (issue 8), kept as the oracle of the equivalence tests.

Every role's major flags are diffed in full (``FlagSet.diff``) against every in-scope
candidate, the reasons scan the candidates flag by flag, and the nearest evidence
sums full diff sizes over every common candidate: slow, but a direct reading of the
rules in ``provenance.audit.judge``'s docstrings; ``unreachable`` applies the public
expressibility rule to every in-scope point. It uses none of the judge's code:
only the evidence index's queries (records in a scope, records of a checkpoint and
hardware) and the report models. :func:`reference_distinct` and
:func:`reference_nearest` are the reverse direction's brute-force search for the
nearest audited combination.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from provenance.audit.index import EvidenceIndex, IndexedRecord
from provenance.audit.judge import ClassifyFn, Outcome
from provenance.audit.judge.reachability import expressibility_problems
from provenance.audit.keys import CombinationKey
from provenance.audit.verdicts import (
    EvidenceRef,
    FlagProvenance,
    NearestEvidence,
    Reason,
    RoleFlags,
)
from provenance.model.flags import FlagSet, FlagSetDiff
from provenance.model.reasons import ReasonCode, VerdictKind
from provenance.model.scope import (
    ROLE_ORDER,
    DeploymentKind,
    RoleShape,
    Scope,
    checkpoint_key,
    recipe_role_shape,
    record_role_shape,
    shape_matches,
)
from provenance.normalise.policy import COMPARED_DEFAULTS

if TYPE_CHECKING:
    from provenance.audit.tally import KeyTally

_CODE_ORDER = {code: i for i, code in enumerate(ReasonCode)}


@dataclass(frozen=True, eq=False)
class ReferenceRole:
    role: str
    flags: FlagSet
    candidates: tuple[IndexedRecord, ...]
    exact: tuple[IndexedRecord, ...]
    provenance: tuple[FlagProvenance, ...]
    reasons: tuple[Reason, ...]
    diffs: Mapping[str, FlagSetDiff]


class ReferenceJudge:
    """``Judge.outcome`` by brute force."""

    def __init__(
        self,
        graph: EvidenceIndex,
        classify: ClassifyFn,
        gpus_per_node: Mapping[str, int] | None = None,
    ) -> None:
        self.graph = graph
        self.classify = classify
        self.gpus_per_node = gpus_per_node or {}

    @staticmethod
    def scope_of(model_id: str, hardware: str, kind: DeploymentKind) -> Scope:
        return Scope(checkpoint_key(model_id), hardware.lower(), kind)

    def candidates(self, model_id: str, hardware: str, kind: DeploymentKind) -> list[IndexedRecord]:
        return self.graph.in_scope(self.scope_of(model_id, hardware, kind), model_id)

    def role(
        self, model_id: str, hardware: str, kind: DeploymentKind, role: str, flags: FlagSet
    ) -> ReferenceRole:
        in_scope = self.candidates(model_id, hardware, kind)
        candidates = tuple(r for r in in_scope if role in r.major)
        exact = tuple(r for r in candidates if r.major[role] == flags)
        provenance = tuple(
            FlagProvenance(
                key=key,
                value=value,
                cls=self.classify(key),
                evidence=tuple(r.ref for r in candidates if r.major[role].get(key) == value),
            )
            for key, value in flags.items()
        )
        diffs = {r.id: flags.diff(r.major[role]) for r in candidates}
        reasons: list[Reason] = []
        if not candidates:
            reasons.append(
                Reason(
                    code=ReasonCode.NO_EVIDENCE,
                    role=role,
                    detail=f"no {kind} evidence point with a {role} role for this "
                    "checkpoint and hardware",
                )
            )
        elif not exact:
            reasons.extend(_flag_reasons(role, flags, candidates, diffs))
        return ReferenceRole(role, flags, candidates, exact, provenance, tuple(reasons), diffs)

    def outcome(self, key: CombinationKey) -> Outcome:
        judgements = [
            self.role(key.model_id, key.hardware, key.kind, role, flags)
            for role, flagsets in key.roles
            for flags in flagsets
        ]
        reasons: list[Reason] = []
        evidence: tuple[EvidenceRef, ...] = ()
        shape = recipe_role_shape(key.kind, key.node_count)
        if not judgements:
            reasons.append(
                Reason(code=ReasonCode.NO_EVIDENCE, detail="the combination renders no command")
            )
        elif not self.candidates(key.model_id, key.hardware, key.kind):
            reasons.append(
                Reason(
                    code=ReasonCode.NO_EVIDENCE,
                    detail=f"no {key.kind} evidence for this checkpoint on {key.hardware}",
                )
            )
        else:
            for judgement in judgements:
                reasons.extend(judgement.reasons)
            if all(j.exact for j in judgements):
                reasons.extend(_joint_reasons(judgements, shape))
                if not reasons:
                    evidence = tuple(
                        r.ref
                        for r in _joint(judgements)
                        if _shape_ok(r, judgements, shape) and _usable(r)
                    )
        if not evidence:
            reasons.extend(self._other_kind_reasons(key, judgements))
            if judgements:
                reasons.extend(self._unreachable(key))
        verdict = VerdictKind.RECOMMENDED if evidence else VerdictKind.GUIDE_ONLY
        if verdict is VerdictKind.GUIDE_ONLY and not reasons:
            reasons.append(Reason(code=ReasonCode.NO_EVIDENCE, detail="no evidence point matched"))
        ordered = sorted(
            dict.fromkeys(reasons),
            key=lambda r: (ROLE_ORDER.get(r.role or "", -1), _CODE_ORDER[r.code], r.flag or ""),
        )
        return Outcome(
            verdict=verdict,
            roles=tuple(
                RoleFlags(role=j.role, node_rank=None, flags=j.provenance) for j in judgements
            ),
            reasons=tuple(ordered),
            nearest=() if evidence else _nearest_evidence(judgements, validated_only=True),
            evidence=evidence,
            scope=self.scope_of(key.model_id, key.hardware, key.kind),
            role_flags=tuple((j.role, j.flags) for j in judgements),
            nearest_overall=() if evidence else _nearest_overall(judgements),
        )

    def _unreachable(self, key: CombinationKey) -> list[Reason]:
        """``unreachable`` when the scope has evidence and the schema can express none of
        its shapes: the most frequent problems (up to 2), each with its share."""
        records = self.candidates(key.model_id, key.hardware, key.kind)
        per_node = self.gpus_per_node.get(key.hardware.lower())
        problems = [expressibility_problems(r.record.topology, per_node) for r in records]
        if not records or not all(problems):
            return []
        share = {p: sum(1 for found in problems if p in found) for found in problems for p in found}
        ranked = sorted(share, key=lambda p: (-share[p], p))
        total = len(records)
        named = [
            ("every point" if share[p] == total else f"{share[p]} of {total}") + f": {p}"
            for p in ranked[:2]
        ]
        if len(ranked) > 2:
            named.append(f"{len(ranked) - 2} more shape problem(s)")
        return [
            Reason(
                code=ReasonCode.UNREACHABLE,
                sources=_prs(records),
                detail=f"none of the {total} in-scope {key.kind} evidence point(s) has a shape "
                f"the recipe schema can express ({' | '.join(named)}); its flag reasons are "
                "secondary: no flag edit reaches evidence",
            )
        ]

    def _other_kind_reasons(
        self, key: CombinationKey, judgements: Sequence[ReferenceRole]
    ) -> list[Reason]:
        if not judgements:
            return []
        first = judgements[0]
        scope = self.scope_of(key.model_id, key.hardware, key.kind)
        others = [
            r
            for r in self.graph.same_checkpoint_hardware(scope, key.model_id)
            if r.major.get(first.role) == first.flags
            and r.scope.kind != key.kind
            and all(r.major.get(j.role) == j.flags for j in judgements)
        ]
        if not others:
            return []
        return [
            Reason(
                code=ReasonCode.TOPOLOGY_MISMATCH,
                recipe_value=key.kind,
                evidence_value=", ".join(sorted({r.scope.kind for r in others})),
                sources=_prs(others),
                detail="the flags match an evidence point of another deployment kind",
            )
        ]


def _prs(records: Sequence[IndexedRecord]) -> tuple[str, ...]:
    """Every PR behind ``records``, once, by repository then number."""
    prs = {pr for record in records for pr in record.prs}

    def order(pr: str) -> tuple[str, int, str]:
        repo, _, number = pr.partition("#")
        return (repo, int(number) if number.isdigit() else 0, pr)

    return tuple(sorted(prs, key=order))


def _joint(judgements: Sequence[ReferenceRole]) -> list[IndexedRecord]:
    """The records every role matches exactly, in the first role's order."""
    return [
        r for r in judgements[0].exact if all(r.id in {o.id for o in j.exact} for j in judgements)
    ]


def _shape_ok(record: IndexedRecord, judgements: Sequence[ReferenceRole], shape: RoleShape) -> bool:
    return all(
        shape_matches(shape, record_role_shape(record.record.topology, j.role)) for j in judgements
    )


def _usable(record: IndexedRecord) -> bool:
    return record.validated and not record.record.is_partial


def _joint_reasons(judgements: Sequence[ReferenceRole], shape: RoleShape) -> list[Reason]:
    """Why roles that each match exactly are not one recommended deployment (if they are not)."""
    joint = _joint(judgements)
    if not joint:
        by_role = "; ".join(
            f"{j.role} by {', '.join(sorted({r.config_key for r in j.exact}))}" for j in judgements
        )
        return [
            Reason(
                code=ReasonCode.NEVER_JOINTLY_OBSERVED,
                sources=_prs([r for j in judgements for r in j.exact]),
                detail="each role matches an evidence point exactly, but no single "
                f"deployment has them together: {by_role}",
            )
        ]
    shaped = [r for r in joint if _shape_ok(r, judgements, shape)]
    if not shaped:
        first = joint[0]
        reasons = []
        for j in judgements:
            evidence_shape = record_role_shape(first.record.topology, j.role)
            if not shape_matches(shape, evidence_shape):
                reasons.append(
                    Reason(
                        code=ReasonCode.TOPOLOGY_MISMATCH,
                        role=j.role,
                        recipe_value=shape.describe(),
                        evidence_value=evidence_shape.describe(),
                        sources=_prs(joint),
                        detail="the flags match exactly but the deployment shape differs",
                    )
                )
        return reasons
    if any(_usable(r) for r in shaped):
        return []
    partial = [r for r in shaped if r.record.is_partial]
    if partial and all(r.validated for r in shaped):
        names = ", ".join(m.construct_name for r in partial for m in r.record.partial)
        detail = f"exact match, but its extraction is partial ({names})"
    else:
        detail = "exact match, but no green sweep run is recorded for its PR"
    return [Reason(code=ReasonCode.EVIDENCE_NOT_VALIDATED, sources=_prs(shaped), detail=detail)]


def _flag_reasons(
    role: str,
    flags: FlagSet,
    candidates: Sequence[IndexedRecord],
    diffs: Mapping[str, FlagSetDiff],
) -> list[Reason]:
    reasons: list[Reason] = []
    for key, value in flags.items():
        setters = [r for r in candidates if key in r.major[role]]
        default = COMPARED_DEFAULTS.get(key)
        if default is not None and len(setters) < len(candidates):
            # the records that leave it unset run vLLM's default
            values = {r.major[role].get(key, default) for r in candidates}
            if value not in values:
                reasons.append(
                    Reason(
                        code=ReasonCode.VALUE_MISMATCH,
                        role=role,
                        flag=key,
                        recipe_value=value,
                        evidence_value=", ".join(sorted(values)),
                        sources=_prs(candidates),
                        detail=f"in-scope evidence that leaves it unset runs vLLM's default "
                        f"{default}",
                    )
                )
            continue
        if not setters:
            reasons.append(
                Reason(
                    code=ReasonCode.FLAG_UNEVIDENCED,
                    role=role,
                    flag=key,
                    recipe_value=value,
                    detail="no in-scope evidence point sets this flag",
                )
            )
        elif not any(r.major[role][key] == value for r in setters):
            reasons.append(
                Reason(
                    code=ReasonCode.VALUE_MISMATCH,
                    role=role,
                    flag=key,
                    recipe_value=value,
                    evidence_value=", ".join(sorted({r.major[role][key] for r in setters})),
                    sources=_prs(setters),
                )
            )
    supersets = [r for r in candidates if not diffs[r.id].only_left and not diffs[r.id].changed]
    if not reasons and not supersets:
        nearest = _nearest(candidates, diffs)
        lacking = {
            **diffs[nearest.id].only_left,
            **{k: v for k, (v, _) in diffs[nearest.id].changed.items()},
        }
        elsewhere = [
            r for r in candidates if any(r.major[role].get(k) == v for k, v in lacking.items())
        ]
        reasons.append(
            Reason(
                code=ReasonCode.NEVER_JOINTLY_OBSERVED,
                role=role,
                sources=_prs([nearest, *elsewhere]),
                record=nearest.id,
                detail=f"every {role} flag is evidenced somewhere in scope, but no single "
                f"evidence point sets them all; the nearest ({nearest.config_key}) lacks "
                + ", ".join(f"{k}={v}" for k, v in sorted(lacking.items())),
            )
        )
    basis = _nearest(supersets or candidates, diffs)
    for key, evidence_value in diffs[basis.id].only_right.items():
        default = COMPARED_DEFAULTS.get(key)
        if default is not None:
            reasons.append(
                Reason(
                    code=ReasonCode.VALUE_MISMATCH,
                    role=role,
                    flag=key,
                    recipe_value=default,
                    evidence_value=evidence_value,
                    sources=basis.prs,
                    record=basis.id,
                    detail=f"the recipe runs vLLM's default {default} (explicit or unset); the "
                    f"nearest evidence point ({basis.config_key}) sets {evidence_value}",
                )
            )
            continue
        reasons.append(
            Reason(
                code=ReasonCode.MISSING_FLAG,
                role=role,
                flag=key,
                evidence_value=evidence_value,
                sources=basis.prs,
                record=basis.id,
                detail=f"set by the nearest evidence point ({basis.config_key}), not by the recipe",
            )
        )
    return reasons


def _nearest(records: Sequence[IndexedRecord], diffs: Mapping[str, FlagSetDiff]) -> IndexedRecord:
    return min(records, key=lambda r: (diffs[r.id].size, not r.validated, r.id))


def _nearest_evidence(
    judgements: Sequence[ReferenceRole], *, validated_only: bool = False
) -> tuple[NearestEvidence, ...]:
    """The common candidate at the smallest summed distance; with ``validated_only``, among
    the validated ones when there are any (the entry's ``nearest``)."""
    if not judgements:
        return ()
    common = set.intersection(*({r.id for r in j.candidates} for j in judgements))
    by_id = {r.id: r for r in judgements[0].candidates}
    if validated_only and any(by_id[i].validated for i in common):
        common = {i for i in common if by_id[i].validated}
    if not common:
        return ()
    best = by_id[
        min(
            common,
            key=lambda i: (sum(j.diffs[i].size for j in judgements), not by_id[i].validated, i),
        )
    ]
    return tuple(_nearest_of(best, j) for j in judgements)


def _nearest_overall(judgements: Sequence[ReferenceRole]) -> tuple[NearestEvidence, ...]:
    """The nearest common candidate of all, when it is not the nearest validated one."""
    overall = _nearest_evidence(judgements)
    if overall == _nearest_evidence(judgements, validated_only=True):
        return ()
    return overall


def _nearest_of(best: IndexedRecord, judgement: ReferenceRole) -> NearestEvidence:
    """``judgement``'s diff from ``best``, a key left at its compared default as changed."""
    diff = judgement.diffs[best.id]
    defaults = COMPARED_DEFAULTS
    changed = dict(diff.changed)
    changed.update({k: (v, defaults[k]) for k, v in diff.only_left.items() if k in defaults})
    changed.update({k: (defaults[k], v) for k, v in diff.only_right.items() if k in defaults})
    return NearestEvidence(
        record=best.id,
        config_key=best.config_key,
        prs=best.prs,
        role=judgement.role,
        distance=diff.size,
        validated=best.validated,
        only_recipe={k: v for k, v in diff.only_left.items() if k not in defaults},
        only_evidence={k: v for k, v in diff.only_right.items() if k not in defaults},
        changed=dict(sorted(changed.items())),
    )


# Reverse direction ------------------------------------------------------------------


def reference_distinct(
    candidates: Sequence[tuple[CombinationKey, KeyTally]],
) -> list[tuple[dict[str, FlagSet], KeyTally]]:
    """Every audited combination, none skipped (stands in for ``distinct_combinations``)."""
    return [({role: flagsets[0] for role, flagsets in key.roles}, seen) for key, seen in candidates]


def reference_nearest(
    roles: Sequence[tuple[str, FlagSet]], compared: Sequence[tuple[dict[str, FlagSet], KeyTally]]
) -> tuple[int, str, KeyTally]:
    """The first combination at the smallest full-diff distance (``nearest_combination``)."""
    scored = [(_describe(roles, recipe), seen) for recipe, seen in compared]
    (distance, text), seen = min(scored, key=lambda item: item[0][0])
    return distance, text, seen


def _describe(
    roles: Sequence[tuple[str, FlagSet]], recipe: Mapping[str, FlagSet]
) -> tuple[int, str]:
    total = 0
    parts = []
    for role, evidence_flags in roles:
        mine = recipe.get(role)
        if mine is None:
            total += len(evidence_flags) + 1
            parts.append(f"{role}: role not rendered")
            continue
        diff = evidence_flags.diff(mine)
        total += diff.size
        bits = [f"-{k}={v}" for k, v in diff.only_left.items()]
        bits += [f"+{k}={v}" for k, v in diff.only_right.items()]
        bits += [f"{k}: evidence {a}, recipe {b}" for k, (a, b) in diff.changed.items()]
        if bits:
            parts.append(f"{role}: {' '.join(bits)}")
    return total, "; ".join(parts)
