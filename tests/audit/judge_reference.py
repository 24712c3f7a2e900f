"""The judge as it was before its indexes (issue 8), kept as the oracle of the equivalence tests.

Every role's major flags are diffed in full (``FlagSet.diff``) against every in-scope
candidate, the reasons scan the candidates flag by flag, and the nearest evidence
sums full diff sizes over every common candidate: slow, but a direct reading of the
rules in ``provenance.audit.judge``'s docstring. :class:`ReferenceJudge` reuses only
what the indexes did not change (candidate lists, the any-kind index, the joint
rules). :func:`reference_distinct` and :func:`reference_nearest` are the reverse
direction's brute-force search for the nearest audited combination.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from provenance.audit.index import EvidenceIndex, IndexedRecord
from provenance.audit.judge import (
    ClassifyFn,
    CombinationKey,
    Judge,
    Outcome,
    _joint,
    _prs,
    _shape_ok,
    _usable,
)
from provenance.audit.verdicts import (
    EvidenceRef,
    FlagProvenance,
    NearestEvidence,
    Reason,
    RoleFlags,
)
from provenance.model.flags import FlagSet, FlagSetDiff
from provenance.model.reasons import ReasonCode, VerdictKind
from provenance.model.scope import ROLE_ORDER, DeploymentKind, recipe_role_shape

if TYPE_CHECKING:
    from provenance.audit.validator import _Seen

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

    def __init__(self, graph: EvidenceIndex, classify: ClassifyFn) -> None:
        self.judge = Judge(graph, classify)
        self.classify = classify

    def role(
        self, model_id: str, hardware: str, kind: DeploymentKind, role: str, flags: FlagSet
    ) -> ReferenceRole:
        in_scope = self.judge.candidates(model_id, hardware, kind)
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
        judge = self.judge
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
        elif not judge.candidates(key.model_id, key.hardware, key.kind):
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
                reasons.extend(judge._joint_reasons(judgements, shape))  # type: ignore[arg-type]
                if not reasons:
                    evidence = tuple(
                        r.ref
                        for r in _joint(judgements)  # type: ignore[arg-type]
                        if _shape_ok(r, judgements, shape) and _usable(r)  # type: ignore[arg-type]
                    )
        if not evidence:
            reasons.extend(self._other_kind_reasons(key, judgements))
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
            nearest=() if evidence else _nearest_evidence(judgements),
            evidence=evidence,
            scope=judge.scope_of(key.model_id, key.hardware, key.kind),
            role_flags=tuple((j.role, j.flags) for j in judgements),
        )

    def _other_kind_reasons(
        self, key: CombinationKey, judgements: Sequence[ReferenceRole]
    ) -> list[Reason]:
        if not judgements:
            return []
        first = judgements[0]
        others = [
            r
            for r in self.judge.any_kind(
                key.model_id, key.hardware, key.kind, first.role, first.flags
            )
            if r.scope.kind != key.kind and all(r.major.get(j.role) == j.flags for j in judgements)
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


def _flag_reasons(
    role: str,
    flags: FlagSet,
    candidates: Sequence[IndexedRecord],
    diffs: Mapping[str, FlagSetDiff],
) -> list[Reason]:
    reasons: list[Reason] = []
    for key, value in flags.items():
        setters = [r for r in candidates if key in r.major[role]]
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
                detail=f"every {role} flag is evidenced somewhere in scope, but no single "
                f"evidence point sets them all; the nearest ({nearest.config_key}) lacks "
                + ", ".join(f"{k}={v}" for k, v in sorted(lacking.items())),
            )
        )
    basis = _nearest(supersets or candidates, diffs)
    for key, evidence_value in diffs[basis.id].only_right.items():
        reasons.append(
            Reason(
                code=ReasonCode.MISSING_FLAG,
                role=role,
                flag=key,
                evidence_value=evidence_value,
                sources=basis.prs,
                detail=f"set by the nearest evidence point ({basis.config_key}), not by the recipe",
            )
        )
    return reasons


def _nearest(records: Sequence[IndexedRecord], diffs: Mapping[str, FlagSetDiff]) -> IndexedRecord:
    return min(records, key=lambda r: (diffs[r.id].size, not r.validated, r.id))


def _nearest_evidence(judgements: Sequence[ReferenceRole]) -> tuple[NearestEvidence, ...]:
    if not judgements:
        return ()
    common = set.intersection(*({r.id for r in j.candidates} for j in judgements))
    if not common:
        return ()
    by_id = {r.id: r for r in judgements[0].candidates}
    best = by_id[
        min(
            common,
            key=lambda i: (sum(j.diffs[i].size for j in judgements), not by_id[i].validated, i),
        )
    ]
    return tuple(
        NearestEvidence(
            record=best.id,
            config_key=best.config_key,
            prs=best.prs,
            role=j.role,
            distance=j.diffs[best.id].size,
            only_recipe=dict(j.diffs[best.id].only_left),
            only_evidence=dict(j.diffs[best.id].only_right),
            changed=dict(j.diffs[best.id].changed),
        )
        for j in judgements
    )


# Reverse direction ------------------------------------------------------------------


def reference_distinct(
    candidates: Sequence[tuple[CombinationKey, _Seen]],
) -> list[tuple[dict[str, FlagSet], _Seen]]:
    """Every audited combination, none skipped (stands in for ``distinct_combinations``)."""
    return [({role: flagsets[0] for role, flagsets in key.roles}, seen) for key, seen in candidates]


def reference_nearest(
    roles: Sequence[tuple[str, FlagSet]], compared: Sequence[tuple[dict[str, FlagSet], _Seen]]
) -> tuple[int, str, _Seen]:
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
