"""Combination-level judgement: one :class:`Outcome` per distinct combination key.

For ``pd_cluster`` prefill and decode must be matched by the *same* evidence point
(otherwise ``never-jointly-observed``); an exact match whose role shape differs is
``topology-mismatch`` (also when the flags match an evidence point of another
deployment kind); an exact match with no green sweep (or a partial extraction) is
``evidence-not-validated``. The nearest evidence is the single point closest over all
roles: the nearest validated one when one is in scope, the nearest overall beside it when
that is another (unvalidated, closer) point. :class:`Judge` memoises every level (scope
candidates, role indexes, role judgements, outcomes) against one evidence index.

A role whose flags write a default that depends on the vLLM version (its *view*,
:mod:`provenance.audit.judge.roles`) is judged against the in-scope records read at their
version, in an index of its own per scope, role and view; every other role (on the
embedded data, all but a handful) takes the shared per-scope index unchanged.
"""

from __future__ import annotations

import operator
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property

from provenance.audit.index import EvidenceIndex, IndexedRecord
from provenance.audit.judge.reachability import unreachable_reason
from provenance.audit.judge.reasons import ordered, prs_of
from provenance.audit.judge.role_index import RoleIndex, Signatures, evidence_ref, tie_break
from provenance.audit.judge.roles import (
    NO_VIEW,
    ClassifyFn,
    RoleJudgement,
    View,
    flag_provenance,
    judge_role,
    read_at_version,
    records_at_version,
    role_flags,
)
from provenance.audit.keys import CombinationKey
from provenance.audit.verdicts import EvidenceRef, NearestEvidence, Reason, RoleFlags
from provenance.model.flags import FlagSet
from provenance.model.reasons import ReasonCode, VerdictKind
from provenance.model.scope import (
    DeploymentKind,
    RoleShape,
    Scope,
    checkpoint_key,
    recipe_role_shape,
    record_role_shape,
    shape_matches,
)


@dataclass(frozen=True, eq=False)
class Outcome:
    """The verdict shared by every combination with the same key."""

    verdict: VerdictKind
    roles: tuple[RoleFlags, ...]
    reasons: tuple[Reason, ...]
    #: the nearest validated point when one is in scope, else the nearest overall
    nearest: tuple[NearestEvidence, ...]
    evidence: tuple[EvidenceRef, ...]
    scope: Scope
    role_flags: tuple[tuple[str, FlagSet], ...]
    #: the role judgements behind :attr:`roles` (none when the scope has no evidence)
    judgements: tuple[RoleJudgement, ...] = ()
    #: the nearest point overall when it differs from :attr:`nearest` (not validated)
    nearest_overall: tuple[NearestEvidence, ...] = ()

    @cached_property
    def reason_codes(self) -> tuple[str, ...]:
        """The distinct reason codes, in report order (computed once: declarations are
        matched against them for every combination with this outcome)."""
        return tuple(dict.fromkeys(str(r.code) for r in self.reasons))


class Judge:
    """Memoised judgements against one evidence graph."""

    def __init__(
        self,
        graph: EvidenceIndex,
        classify: ClassifyFn,
        gpus_per_node: Mapping[str, int] | None = None,
    ) -> None:
        self.graph = graph
        self.classify = classify
        #: hardware id -> GPUs per node (the recipes taxonomy), for reachability
        self.gpus_per_node = gpus_per_node or {}
        #: the version-dependent defaults the graph's records were read at (None: not read)
        self.versions = graph.versions
        self._unreachable: dict[tuple[str, str, DeploymentKind], Reason | None] = {}
        self._candidates: dict[tuple[str, str, DeploymentKind], list[IndexedRecord]] = {}
        self._any_kind: dict[tuple[str, str], dict[tuple[str, FlagSet], list[IndexedRecord]]] = {}
        self._indexes: dict[tuple[str, str, DeploymentKind, str], RoleIndex] = {}
        self._view_indexes: dict[tuple[str, str, DeploymentKind, str, View], RoleIndex] = {}
        #: whether some role judged so far has a view (else no combination needs one)
        self._viewed = False
        self._signatures: dict[tuple[str, str, DeploymentKind, tuple[str, ...]], Signatures] = {}
        self._signatures_by_view: dict[
            tuple[str, str, DeploymentKind, tuple[tuple[str, View], ...]], Signatures
        ] = {}
        self._roles: dict[tuple[str, str, DeploymentKind, str, FlagSet], RoleJudgement] = {}
        self._no_candidates: dict[str, RoleIndex] = {}
        self._unevidenced: dict[tuple[DeploymentKind, str, FlagSet], RoleJudgement] = {}
        self._unevidenced_roles: dict[tuple[str, FlagSet], RoleFlags] = {}
        self._outcomes: dict[CombinationKey, Outcome] = {}
        self._classes: dict[str, str] = {}
        self._scopes: dict[tuple[str, str, DeploymentKind], Scope] = {}
        self._no_scope: dict[tuple[DeploymentKind, str], Reason] = {}

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

    def _index(self, model_id: str, hardware: str, kind: DeploymentKind, role: str) -> RoleIndex:
        key = (model_id, hardware, kind, role)
        found = self._indexes.get(key)
        if found is None:
            found = RoleIndex.build(role, self.candidates(model_id, hardware, kind))
            if not found.candidates:  # one per role: its caches serve every such scope
                found = self._no_candidates.setdefault(role, found)
            self._indexes[key] = found
        return found

    def _view(self, flags: FlagSet) -> View:
        """The items of a role's ``flags`` that are some vLLM version's default of a flag
        whose default depends on the version (usually none: then the role is judged
        against the shared index)."""
        return NO_VIEW if self.versions is None else self.versions.versioned(flags)

    def _view_index(
        self, model_id: str, hardware: str, kind: DeploymentKind, role: str, view: View
    ) -> RoleIndex:
        """The in-scope records of ``role`` read at their vLLM version by ``view``."""
        key = (model_id, hardware, kind, role, view)
        found = self._view_indexes.get(key)
        if found is None:
            assert self.versions is not None
            records = records_at_version(
                self.candidates(model_id, hardware, kind), role, view, self.versions
            )
            found = self._view_indexes[key] = RoleIndex.build(role, records)
        return found

    def setters(
        self, model_id: str, hardware: str, kind: DeploymentKind, role: str
    ) -> dict[tuple[str, str], tuple[EvidenceRef, ...]]:
        """``(key, value)`` → the in-scope records whose ``role`` sets it, in candidate order."""
        return self._index(model_id, hardware, kind, role).setters

    def _class_of(self, key: str) -> str:
        found = self._classes.get(key)
        if found is None:
            found = self._classes[key] = self.classify(key)
        return found

    # Role level -------------------------------------------------------------
    def role(
        self, model_id: str, hardware: str, kind: DeploymentKind, role: str, flags: FlagSet
    ) -> RoleJudgement:
        key = (model_id, hardware, kind, role, flags)
        judged = self._roles.get(key)
        if judged is None:
            index = self._index(model_id, hardware, kind, role)
            view = self._view(flags) if index.candidates else NO_VIEW
            if view:
                self._viewed = True
                index = self._view_index(model_id, hardware, kind, role, view)
                judged = judge_role(index, kind, flags, self._class_of, self.versions, view)
            elif index.candidates:
                judged = judge_role(index, kind, flags, self._class_of, self.versions)
            else:  # the same for every scope of this kind without the role: judged once
                shared = (kind, role, flags)
                judged = self._unevidenced.get(shared)
                if judged is None:
                    judged = self._unevidenced[shared] = judge_role(
                        index, kind, flags, self._class_of, self.versions
                    )
            self._roles[key] = judged
        return judged

    def _nearest_evidence(
        self, key: CombinationKey, judgements: Sequence[RoleJudgement]
    ) -> tuple[tuple[NearestEvidence, ...], tuple[NearestEvidence, ...]]:
        """The single evidence point closest over all roles, with each role's difference:
        the nearest validated one when one is in scope (else the nearest overall), and the
        nearest overall when that is another point (else empty).

        Closest: the smallest sum of the roles' diff sizes; ties go to a validated point,
        then to the lowest id. Points with the same major FlagSets in every role are at
        the same distance, so one per such signature is scored (:meth:`_signatures`): the
        one ties resolve to, validated if any of them is.
        """
        if not judgements:
            return (), ()
        roles = tuple(j.role for j in judgements)
        if self._viewed and any(j.view for j in judgements):
            signatures = self._view_signatures(key.model_id, key.hardware, key.kind, judgements)
        else:
            signatures = self._signature_records(key.model_id, key.hardware, key.kind, roles)
        records = signatures.records
        if not records:
            return (), ()
        totals = judgements[0].distances_to(signatures, 0)
        for position in range(1, len(judgements)):
            vector = judgements[position].distances_to(signatures, position)
            totals = list(map(operator.add, totals, vector))
        best = records[totals.index(min(totals))]
        overall = tuple([j.nearest_evidence(best) for j in judgements])
        if best.validated:
            return overall, ()
        validated = signatures.validated
        if not validated:
            return overall, ()
        # records are in tie-break order, validated first: the first at the smallest total
        # among the first ``validated`` is the nearest validated point (it wins a tie)
        chosen = records[totals.index(min(totals[:validated]))]
        return tuple([j.nearest_evidence(chosen) for j in judgements]), overall

    def _signature_records(
        self, model_id: str, hardware: str, kind: DeploymentKind, roles: tuple[str, ...]
    ) -> Signatures:
        """One record per distinct tuple of major FlagSets of ``roles`` among the in-scope
        records that have all of them: the one ties resolve to, in tie-break order."""
        memo = (model_id, hardware, kind, roles)
        found = self._signatures.get(memo)
        if found is None:
            best: dict[tuple[FlagSet, ...], IndexedRecord] = {}
            for record in self.candidates(model_id, hardware, kind):
                major = record.major
                if all(role in major for role in roles):
                    signature = tuple(major[role] for role in roles)
                    held = best.get(signature)
                    if held is None or tie_break(record) < tie_break(held):
                        best[signature] = record
            records = sorted(best.values(), key=tie_break)
            columns = []
            for role in roles:
                position = self._index(model_id, hardware, kind, role).position
                columns.append([position[r.major[role]] for r in records])
            validated = sum(1 for record in records if record.validated)
            found = self._signatures[memo] = Signatures(records, tuple(columns), validated)
        return found

    def _view_signatures(
        self,
        model_id: str,
        hardware: str,
        kind: DeploymentKind,
        judgements: Sequence[RoleJudgement],
    ) -> Signatures:
        """:meth:`_signature_records` for roles of which some have a view: each record's
        FlagSet of each judgement as that judgement reads it (at the record's version)."""
        memo = (model_id, hardware, kind, tuple((j.role, j.view) for j in judgements))
        found = self._signatures_by_view.get(memo)
        if found is None:
            best: dict[tuple[FlagSet, ...], IndexedRecord] = {}
            for record in self.candidates(model_id, hardware, kind):
                if all(j.role in record.major for j in judgements):
                    signature = tuple(j.evidence_flags(record) for j in judgements)
                    held = best.get(signature)
                    if held is None or tie_break(record) < tie_break(held):
                        best[signature] = record
            records = sorted(best.values(), key=tie_break)
            columns = tuple(
                [j.index.position[j.evidence_flags(r)] for r in records] for j in judgements
            )
            validated = sum(1 for record in records if record.validated)
            found = self._signatures_by_view[memo] = Signatures(records, columns, validated)
        return found

    # Combination level ------------------------------------------------------
    def outcome(self, key: CombinationKey) -> Outcome:
        found = self._outcomes.get(key)
        if found is None:
            found = self._judge_combination(key)
            self._outcomes[key] = found
        return found

    def _judge_combination(self, key: CombinationKey) -> Outcome:
        model_id, hardware, kind = key.model_id, key.hardware, key.kind
        role_flags = tuple([(role, flags) for role, flagsets in key.roles for flags in flagsets])
        if role_flags and not self.candidates(model_id, hardware, kind):
            return self._judge_without_evidence(key, role_flags)
        known = self._roles
        judgements: list[RoleJudgement] = [
            known.get((model_id, hardware, kind, role, flags))
            or self.role(model_id, hardware, kind, role, flags)
            for role, flags in role_flags
        ]
        # Reasons of the roles (``role_reasons``) and of the combination (``reasons``) are
        # kept apart so that the roles' own, already ordered, need not be sorted again.
        role_reasons = False
        reasons: list[Reason] = []
        evidence: tuple[EvidenceRef, ...] = ()
        if not judgements:
            reasons.append(
                Reason(code=ReasonCode.NO_EVIDENCE, detail="the combination renders no command")
            )
        else:
            role_reasons = True
            if all(j.exact for j in judgements):  # then no role has a reason of its own
                recipe_shape = recipe_role_shape(kind, key.node_count)
                reasons.extend(self._joint_reasons(judgements, recipe_shape))
                if not reasons:
                    joint = joint_records(judgements)
                    evidence = tuple(
                        evidence_ref(r)
                        for r in joint
                        if fits_shape(r, judgements, recipe_shape) and is_usable(r)
                    )
        if not evidence:
            views = [j.view for j in judgements] if self._viewed else None
            reasons.extend(self._other_kind_reasons(key, role_flags, views))
            if judgements:
                unreachable = self.unreachable(model_id, hardware, kind)
                if unreachable is not None:
                    reasons.append(unreachable)
        verdict = VerdictKind.RECOMMENDED if evidence else VerdictKind.GUIDE_ONLY
        if (
            verdict is VerdictKind.GUIDE_ONLY
            and not reasons
            and not (role_reasons and any(j.reasons for j in judgements))
        ):  # defensive: never silent
            reasons.append(Reason(code=ReasonCode.NO_EVIDENCE, detail="no evidence point matched"))
        nearest, overall = ((), ()) if evidence else self._nearest_evidence(key, judgements)
        return Outcome(
            verdict=verdict,
            roles=tuple(j.role_flags for j in judgements),
            reasons=ordered(reasons, judgements if role_reasons else ()),
            nearest=nearest,
            evidence=evidence,
            scope=self._scope(model_id, hardware, kind),
            role_flags=role_flags,
            judgements=tuple(judgements),
            nearest_overall=overall,
        )

    def unreachable(self, model_id: str, hardware: str, kind: DeploymentKind) -> Reason | None:
        """The ``unreachable`` reason of this scope's guide-only combinations, if no
        in-scope evidence point has a shape the schema can express (once per scope)."""
        key = (model_id, hardware, kind)
        if key not in self._unreachable:
            self._unreachable[key] = unreachable_reason(
                self.candidates(model_id, hardware, kind),
                kind,
                self.gpus_per_node.get(hardware.lower()),
            )
        return self._unreachable[key]

    def _judge_without_evidence(
        self, key: CombinationKey, role_flags: tuple[tuple[str, FlagSet], ...]
    ) -> Outcome:
        """A combination whose scope has no evidence point: only its flags (for the report)
        and the other deployment kinds matter, so its roles are not judged one by one."""
        reasons = [self._no_scope_evidence(key.kind, key.hardware)]
        reasons.extend(self._other_kind_reasons(key, role_flags))
        known = self._unevidenced_roles
        return Outcome(
            verdict=VerdictKind.GUIDE_ONLY,
            roles=tuple([known.get(item) or self._unevidenced_role(*item) for item in role_flags]),
            reasons=ordered(reasons),
            nearest=(),
            evidence=(),
            scope=self._scope(key.model_id, key.hardware, key.kind),
            role_flags=role_flags,
        )

    def _unevidenced_role(self, role: str, flags: FlagSet) -> RoleFlags:
        """A role's flags, none of them evidenced (one object per role and FlagSet)."""
        found = self._unevidenced_roles.get((role, flags))
        if found is None:
            index = self._no_candidates.get(role)
            if index is None:
                index = self._no_candidates[role] = RoleIndex.build(role, ())
            provenance = tuple(
                flag_provenance(index, item, self._class_of) for item in flags.items()
            )
            found = self._unevidenced_roles[(role, flags)] = role_flags(role, provenance)
        return found

    def _scope(self, model_id: str, hardware: str, kind: DeploymentKind) -> Scope:
        key = (model_id, hardware, kind)
        found = self._scopes.get(key)
        if found is None:
            found = self._scopes[key] = self.scope_of(model_id, hardware, kind)
        return found

    def _no_scope_evidence(self, kind: DeploymentKind, hardware: str) -> Reason:
        key = (kind, hardware)
        found = self._no_scope.get(key)
        if found is None:
            found = self._no_scope[key] = Reason(
                code=ReasonCode.NO_EVIDENCE,
                detail=f"no {kind} evidence for this checkpoint on {hardware}",
            )
        return found

    @staticmethod
    def _joint_reasons(judgements: Sequence[RoleJudgement], shape: RoleShape) -> list[Reason]:
        joint = joint_records(judgements)
        if not joint:
            by_role = "; ".join(
                f"{j.role} by {', '.join(sorted({r.config_key for r in j.exact}))}"
                for j in judgements
            )
            return [
                Reason(
                    code=ReasonCode.NEVER_JOINTLY_OBSERVED,
                    sources=prs_of([r for j in judgements for r in j.exact]),
                    detail="each role matches an evidence point exactly, but no single "
                    f"deployment has them together: {by_role}",
                )
            ]
        shaped = [r for r in joint if fits_shape(r, judgements, shape)]
        if not shaped:
            first = joint[0]
            return [
                Reason(
                    code=ReasonCode.TOPOLOGY_MISMATCH,
                    role=j.role,
                    recipe_value=shape.describe(),
                    evidence_value=record_role_shape(first.record.topology, j.role).describe(),
                    sources=prs_of(joint),
                    detail="the flags match exactly but the deployment shape differs",
                )
                for j in judgements
                if not shape_matches(shape, record_role_shape(first.record.topology, j.role))
            ]
        usable = [r for r in shaped if is_usable(r)]
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
                    sources=prs_of(shaped),
                    detail=detail,
                )
            ]
        return []

    def _other_kind_reasons(
        self,
        key: CombinationKey,
        role_flags: Sequence[tuple[str, FlagSet]],
        views: Sequence[View] | None = (),
    ) -> list[Reason]:
        """``topology-mismatch``: the flags match a point of another deployment kind.
        ``views``: each role's view (``()``: compute them; ``None``: none has one)."""
        if not role_flags:
            return []
        role, flags = role_flags[0]
        index = self._any_kind.get((key.model_id, key.hardware))
        if index is None:
            self.any_kind(key.model_id, key.hardware, key.kind, role, flags)
            index = self._any_kind[(key.model_id, key.hardware)]
        if not index:  # no record of this checkpoint and hardware at all
            return []
        if views == () and self.versions is not None:
            views = [self._view(flags) for _, flags in role_flags]
        if views and any(views):
            others = self._other_kind_at_version(key, role_flags, views)
        else:
            same_flags = index.get((role, flags))
            if not same_flags:
                return []
            others = [
                r
                for r in same_flags
                if r.scope.kind != key.kind and all(r.major.get(k) == f for k, f in role_flags)
            ]
        if not others:
            return []
        kinds = sorted({r.scope.kind for r in others})
        return [
            Reason(
                code=ReasonCode.TOPOLOGY_MISMATCH,
                recipe_value=key.kind,
                evidence_value=", ".join(kinds),
                sources=prs_of(others),
                detail="the flags match an evidence point of another deployment kind",
            )
        ]

    def _other_kind_at_version(
        self,
        key: CombinationKey,
        role_flags: Sequence[tuple[str, FlagSet]],
        views: Sequence[View],
    ) -> list[IndexedRecord]:
        """Records of another deployment kind (same checkpoint and hardware) whose roles
        are exactly ``role_flags``, each read at the record's vLLM version by its view
        (``views``, one per role; rare: a recipe writes a version-dependent default)."""
        assert self.versions is not None
        versions = self.versions
        scope = self.scope_of(key.model_id, key.hardware, key.kind)
        return [
            r
            for r in self.graph.same_checkpoint_hardware(scope, key.model_id)
            if r.scope.kind != key.kind
            and all(
                role in r.major and read_at_version(r.major[role], r, view, versions) == flags
                for (role, flags), view in zip(role_flags, views, strict=True)
            )
        ]


def joint_records(judgements: Sequence[RoleJudgement]) -> list[IndexedRecord]:
    """Records that match every role exactly (the same deployment for all roles)."""
    if not judgements:
        return []
    ids = set.intersection(*({r.id for r in j.exact} for j in judgements))
    return [r for r in judgements[0].exact if r.id in ids]


def fits_shape(
    record: IndexedRecord, judgements: Sequence[RoleJudgement], shape: RoleShape
) -> bool:
    return all(
        shape_matches(shape, record_role_shape(record.record.topology, j.role)) for j in judgements
    )


def is_usable(record: IndexedRecord) -> bool:
    return record.validated and not record.record.is_partial
