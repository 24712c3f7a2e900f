"""Role-level and combination-level judgements (pure, memoisable).

Verdicts depend only on the scope (checkpoint, hardware, deployment kind), the
recipe's per-role major FlagSets and the recipe's role shape, never on the
rest of the selection. :class:`Judge` therefore computes

* one :class:`RoleJudgement` per distinct (scope, model id, evidence role, major FlagSet), and
* one :class:`Outcome` per distinct combination key (scope, model id, node
  count, per-role major FlagSets),

and the validator shares them across every combination with the same key.

Reason rules for one role whose major flags R have no exact match in scope
(``docs/audit.md``):

* ``no-evidence``: no in-scope evidence point has this role at all;
* ``flag-unevidenced``: no in-scope point sets the key of a recipe flag;
* ``value-mismatch``: in-scope points set the key, none to the recipe's value
  (``evidence_value`` lists the values seen);
* ``never-jointly-observed``: every recipe flag is set, with its value, by
  some in-scope point, but no single point sets them all;
* ``missing-flag``: a major flag of the nearest point (the nearest point
  that has all recipe flags, if any) that the recipe lacks.

At combination level: for ``pd_cluster`` prefill and decode must be matched by
the *same* evidence point (otherwise ``never-jointly-observed``); an exact
match whose role shape differs is ``topology-mismatch`` (also when the flags
match an evidence point of another deployment kind); an exact match with no
green sweep (or a partial extraction) is ``evidence-not-validated``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from provenance.audit.model import (
    EvidenceRef,
    FlagProvenance,
    NearestEvidence,
    Reason,
    ReasonCode,
    RoleFlags,
    VerdictKind,
)
from provenance.audit.scope import (
    ROLE_ORDER,
    DeploymentKind,
    RoleShape,
    Scope,
    checkpoint_key,
    recipe_role_shape,
    record_role_shape,
    shape_matches,
)
from provenance.flags.model import FlagSet, FlagSetDiff
from provenance.graph import EvidenceGraph, IndexedRecord

#: The policy class of a flag key (``Policy.classify``), as text.
ClassifyFn = Callable[[str], str]

_CODE_ORDER = {code: i for i, code in enumerate(ReasonCode)}


def _prs(records: Sequence[IndexedRecord]) -> tuple[str, ...]:
    seen: dict[str, None] = {}
    for record in records:
        for pr in record.prs:
            seen.setdefault(pr, None)
    return tuple(sorted(seen, key=_pr_sort_key))


def _pr_sort_key(pr: str) -> tuple[str, int]:
    repo, _, number = pr.partition("#")
    return (repo, int(number) if number.isdigit() else 0)


def evidence_ref(record: IndexedRecord) -> EvidenceRef:
    """The shared reference to ``record`` (one object per record, not per use)."""
    return record.ref


@dataclass(frozen=True, eq=False)
class RoleJudgement:
    """One evidence role's major flags judged against the in-scope evidence."""

    role: str
    flags: FlagSet
    candidates: tuple[IndexedRecord, ...]
    exact: tuple[IndexedRecord, ...]
    provenance: tuple[FlagProvenance, ...]
    reasons: tuple[Reason, ...]
    diffs: Mapping[str, FlagSetDiff] = field(default_factory=dict)


@dataclass(frozen=True, eq=False)
class Outcome:
    """The verdict shared by every combination with the same key."""

    verdict: VerdictKind
    roles: tuple[RoleFlags, ...]
    reasons: tuple[Reason, ...]
    nearest: tuple[NearestEvidence, ...]
    evidence: tuple[EvidenceRef, ...]
    scope: Scope
    role_flags: tuple[tuple[str, FlagSet], ...]

    @property
    def reason_codes(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(str(r.code) for r in self.reasons))


#: (evidence role, distinct major FlagSets of the processes of that role)
RoleKey = tuple[str, tuple[FlagSet, ...]]


@dataclass(frozen=True)
class CombinationKey:
    """What a verdict depends on (hash computed once: keys are looked up per combination)."""

    model_id: str
    hardware: str
    kind: DeploymentKind
    node_count: int | None
    roles: tuple[RoleKey, ...]
    _hash: int = field(init=False, repr=False, compare=False, default=0)

    def __post_init__(self) -> None:
        object.__setattr__(
            self,
            "_hash",
            hash((self.model_id, self.hardware, self.kind, self.node_count, self.roles)),
        )

    def __hash__(self) -> int:
        return self._hash


class Judge:
    """Memoised judgements against one evidence graph."""

    def __init__(self, graph: EvidenceGraph, classify: ClassifyFn) -> None:
        self.graph = graph
        self.classify = classify
        self._candidates: dict[tuple[str, str, DeploymentKind], list[IndexedRecord]] = {}
        self._any_kind: dict[tuple[str, str], dict[tuple[str, FlagSet], list[IndexedRecord]]] = {}
        self._setters: dict[
            tuple[str, str, DeploymentKind, str], dict[tuple[str, str], tuple[EvidenceRef, ...]]
        ] = {}
        self._roles: dict[tuple[str, str, DeploymentKind, str, FlagSet], RoleJudgement] = {}
        self._outcomes: dict[CombinationKey, Outcome] = {}

    # Candidates -----------------------------------------------------------
    def scope_of(self, model_id: str, hardware: str, kind: DeploymentKind) -> Scope:
        return Scope(checkpoint_key(model_id), hardware.lower(), kind)

    def candidates(self, model_id: str, hardware: str, kind: DeploymentKind) -> list[IndexedRecord]:
        key = (model_id, hardware, kind)
        found = self._candidates.get(key)
        if found is None:
            found = self.graph.in_scope(self.scope_of(model_id, hardware, kind), model_id)
            self._candidates[key] = found
        return found

    def any_kind(
        self, model_id: str, hardware: str, kind: DeploymentKind, role: str, flags: FlagSet
    ) -> list[IndexedRecord]:
        """Records of any deployment kind for this checkpoint and hardware whose ``role`` has
        exactly ``flags`` (indexed once per checkpoint and hardware)."""
        key = (model_id, hardware)
        index = self._any_kind.get(key)
        if index is None:
            index = {}
            scope = self.scope_of(model_id, hardware, kind)
            for record in self.graph.same_checkpoint_hardware(scope, model_id):
                for record_role, record_flags in record.major.items():
                    index.setdefault((record_role, record_flags), []).append(record)
            self._any_kind[key] = index
        return index.get((role, flags), [])

    def setters(
        self, model_id: str, hardware: str, kind: DeploymentKind, role: str
    ) -> dict[tuple[str, str], tuple[EvidenceRef, ...]]:
        """``(key, value)`` → the in-scope records whose ``role`` sets it, in candidate order."""
        index_key = (model_id, hardware, kind, role)
        found = self._setters.get(index_key)
        if found is None:
            lists: dict[tuple[str, str], list[EvidenceRef]] = {}
            for record in self.candidates(model_id, hardware, kind):
                flags = record.major.get(role)
                if flags is not None:
                    for item in flags.items():
                        lists.setdefault(item, []).append(evidence_ref(record))
            found = {item: tuple(refs) for item, refs in lists.items()}
            self._setters[index_key] = found
        return found

    # Role level -------------------------------------------------------------
    def role(
        self, model_id: str, hardware: str, kind: DeploymentKind, role: str, flags: FlagSet
    ) -> RoleJudgement:
        key = (model_id, hardware, kind, role, flags)
        judged = self._roles.get(key)
        if judged is None:
            judged = self._judge_role(model_id, hardware, kind, role, flags)
            self._roles[key] = judged
        return judged

    def _judge_role(
        self, model_id: str, hardware: str, kind: DeploymentKind, role: str, flags: FlagSet
    ) -> RoleJudgement:
        candidates = tuple(r for r in self.candidates(model_id, hardware, kind) if role in r.major)
        exact = tuple(r for r in candidates if r.major[role] == flags)
        setters = self.setters(model_id, hardware, kind, role)
        provenance = tuple(
            FlagProvenance(
                key=key,
                value=value,
                cls=self.classify(key),
                evidence=setters.get((key, value), ()),
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
            reasons.extend(self._flag_reasons(role, flags, candidates, diffs))
        return RoleJudgement(
            role=role,
            flags=flags,
            candidates=candidates,
            exact=exact,
            provenance=provenance,
            reasons=tuple(reasons),
            diffs=diffs,
        )

    @staticmethod
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
                seen = sorted({r.major[role][key] for r in setters})
                reasons.append(
                    Reason(
                        code=ReasonCode.VALUE_MISMATCH,
                        role=role,
                        flag=key,
                        recipe_value=value,
                        evidence_value=", ".join(seen),
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
                    detail=f"set by the nearest evidence point ({basis.config_key}), "
                    "not by the recipe",
                )
            )
        return reasons

    # Combination level ------------------------------------------------------
    def outcome(self, key: CombinationKey) -> Outcome:
        found = self._outcomes.get(key)
        if found is None:
            found = self._judge_combination(key)
            self._outcomes[key] = found
        return found

    def _judge_combination(self, key: CombinationKey) -> Outcome:
        scope = self.scope_of(key.model_id, key.hardware, key.kind)
        judgements: list[RoleJudgement] = [
            self.role(key.model_id, key.hardware, key.kind, role, flags)
            for role, flagsets in key.roles
            for flags in flagsets
        ]
        roles = tuple(
            RoleFlags(
                role=j.role,
                node_rank=None,
                flags=j.provenance,
            )
            for j in judgements
        )
        role_flags = tuple((j.role, j.flags) for j in judgements)
        reasons: list[Reason] = []
        evidence: tuple[EvidenceRef, ...] = ()
        candidates = self.candidates(key.model_id, key.hardware, key.kind)
        recipe_shape = recipe_role_shape(key.kind, key.node_count)
        if not judgements:
            reasons.append(
                Reason(code=ReasonCode.NO_EVIDENCE, detail="the combination renders no command")
            )
        elif not candidates:
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
                reasons.extend(self._joint_reasons(judgements, recipe_shape))
                if not reasons:
                    joint = _joint(judgements)
                    evidence = tuple(
                        evidence_ref(r)
                        for r in joint
                        if _shape_ok(r, judgements, recipe_shape) and _usable(r)
                    )
        if not evidence:
            reasons.extend(self._other_kind_reasons(key, judgements))
        verdict = VerdictKind.RECOMMENDED if evidence else VerdictKind.GUIDE_ONLY
        if verdict is VerdictKind.GUIDE_ONLY and not reasons:  # defensive: never silent
            reasons.append(Reason(code=ReasonCode.NO_EVIDENCE, detail="no evidence point matched"))
        nearest = () if evidence else _nearest_evidence(judgements)
        ordered = sorted(
            dict.fromkeys(reasons),
            key=lambda r: (
                ROLE_ORDER.get(r.role or "", -1),
                _CODE_ORDER[r.code],
                r.flag or "",
            ),
        )
        return Outcome(
            verdict=verdict,
            roles=roles,
            reasons=tuple(ordered),
            nearest=nearest,
            evidence=evidence,
            scope=scope,
            role_flags=role_flags,
        )

    @staticmethod
    def _joint_reasons(judgements: Sequence[RoleJudgement], shape: RoleShape) -> list[Reason]:
        joint = _joint(judgements)
        if not joint:
            by_role = "; ".join(
                f"{j.role} by {', '.join(sorted({r.config_key for r in j.exact}))}"
                for j in judgements
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
            return [
                Reason(
                    code=ReasonCode.TOPOLOGY_MISMATCH,
                    role=j.role,
                    recipe_value=shape.describe(),
                    evidence_value=record_role_shape(first.record.topology, j.role).describe(),
                    sources=_prs(joint),
                    detail="the flags match exactly but the deployment shape differs",
                )
                for j in judgements
                if not shape_matches(shape, record_role_shape(first.record.topology, j.role))
            ]
        usable = [r for r in shaped if _usable(r)]
        if not usable:
            partial = [r for r in shaped if r.record.is_partial]
            detail = (
                "exact match, but its extraction is partial "
                f"({', '.join(m.construct_name for r in partial for m in r.record.partial)})"
                if partial and all(r.validated for r in shaped)
                else "exact match, but no green sweep run is recorded for its PR"
            )
            return [
                Reason(
                    code=ReasonCode.EVIDENCE_NOT_VALIDATED,
                    sources=_prs(shaped),
                    detail=detail,
                )
            ]
        return []

    def _other_kind_reasons(
        self, key: CombinationKey, judgements: Sequence[RoleJudgement]
    ) -> list[Reason]:
        if not judgements:
            return []
        first = judgements[0]
        others = [
            r
            for r in self.any_kind(key.model_id, key.hardware, key.kind, first.role, first.flags)
            if r.scope.kind != key.kind and all(r.major.get(j.role) == j.flags for j in judgements)
        ]
        if not others:
            return []
        kinds = sorted({r.scope.kind for r in others})
        return [
            Reason(
                code=ReasonCode.TOPOLOGY_MISMATCH,
                recipe_value=key.kind,
                evidence_value=", ".join(kinds),
                sources=_prs(others),
                detail="the flags match an evidence point of another deployment kind",
            )
        ]


def _joint(judgements: Sequence[RoleJudgement]) -> list[IndexedRecord]:
    """Records that match every role exactly (the same deployment for all roles)."""
    if not judgements:
        return []
    ids = set.intersection(*({r.id for r in j.exact} for j in judgements))
    return [r for r in judgements[0].exact if r.id in ids]


def _shape_ok(record: IndexedRecord, judgements: Sequence[RoleJudgement], shape: RoleShape) -> bool:
    return all(
        shape_matches(shape, record_role_shape(record.record.topology, j.role)) for j in judgements
    )


def _usable(record: IndexedRecord) -> bool:
    return record.validated and not record.record.is_partial


def _nearest(records: Sequence[IndexedRecord], diffs: Mapping[str, FlagSetDiff]) -> IndexedRecord:
    return min(records, key=lambda r: (diffs[r.id].size, not r.validated, r.id))


def _nearest_evidence(judgements: Sequence[RoleJudgement]) -> tuple[NearestEvidence, ...]:
    """The single evidence point closest over all roles, with each role's difference."""
    if not judgements:
        return ()
    common = set.intersection(*({r.id for r in j.candidates} for j in judgements))
    if not common:
        return ()
    by_id = {r.id: r for r in judgements[0].candidates}

    def total(record_id: str) -> tuple[int, bool, str]:
        return (
            sum(j.diffs[record_id].size for j in judgements),
            not by_id[record_id].validated,
            record_id,
        )

    best = by_id[min(common, key=total)]
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
