"""Role-level judgement: one evidence role's major flags against the in-scope evidence.

Reason rules for a role whose major flags R have no exact match in scope
(``docs/audit.md``):

* ``no-evidence``: no in-scope evidence point has this role at all;
* ``flag-unevidenced``: no in-scope point sets the key of a recipe flag;
* ``value-mismatch``: in-scope points set the key, none to the recipe's value
  (``evidence_value`` lists the values seen);
* ``never-jointly-observed``: every recipe flag is set, with its value, by
  some in-scope point, but no single point sets them all;
* ``missing-flag``: a major flag of the nearest point (the nearest point
  that has all recipe flags, if any) that the recipe lacks.

Compared defaults (``provenance.normalise.policy.COMPARED_DEFAULTS``): a key with a
vLLM default that one side leaves unset reads as that default. The normaliser drops
an explicit ``--tensor-parallel-size 1``, so against evidence at 8 the recipe's
``tensor_parallel_size`` is a ``value-mismatch`` (1 vs 8), not a ``missing-flag``;
a recipe at 8 against evidence that leaves it unset is a ``value-mismatch`` (8 vs
1), not ``flag-unevidenced``; the nearest point's diff shows such a key as changed.

Version-dependent defaults (:class:`~provenance.normalise.vllm_policy.VersionDefaults`):
an explicit flag at the default of the vLLM version a record ran equals its absence. The
evidence index drops a record's own (``EvidenceIndex.build``); a recipe's, which runs on
no particular version, is read against each record: a role whose flags write such a
default (its *view*, usually empty) is judged against the in-scope records *read at their
version* (:func:`read_at_version`: a record that leaves the flag out and whose version's
default is the recipe's value runs it, so it is shown as setting it). Where a record's
version is unknown and the value is some version's default, the ``missing-flag``,
``flag-unevidenced`` and ``value-mismatch`` reasons say so (:func:`version_note`).

Reasons and flag provenance are built once per role index and flag
(:class:`~provenance.audit.judge.role_index.RoleIndex` keeps them) and shared.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from provenance.audit.index import IndexedRecord
from provenance.audit.judge.reasons import ordered, prs_of, with_conditions
from provenance.audit.judge.role_index import RoleIndex, Signatures
from provenance.audit.verdicts import FlagProvenance, NearestEvidence, Reason, RoleFlags
from provenance.model.flags import FlagSet
from provenance.model.reasons import ReasonCode
from provenance.model.scope import DeploymentKind
from provenance.normalise.policy import COMPARED_DEFAULTS
from provenance.normalise.vllm_policy import unknown_version_note

if TYPE_CHECKING:
    from provenance.normalise.vllm_policy import VersionDefaults

#: A role's items that are some vLLM version's default of a version-dependent flag.
View = frozenset[tuple[str, str]]
NO_VIEW: View = frozenset()

#: The policy class of a flag key (``Policy.classify``), as text.
ClassifyFn = Callable[[str], str]


@dataclass(frozen=True, eq=False)
class RoleJudgement:
    """One evidence role's major flags judged against the in-scope evidence."""

    role: str
    flags: FlagSet
    #: the in-scope records of the role, indexed (the setters of each flag among them)
    index: RoleIndex
    candidates: tuple[IndexedRecord, ...]
    exact: tuple[IndexedRecord, ...]
    provenance: tuple[FlagProvenance, ...]
    reasons: tuple[Reason, ...]
    #: the report's view of this role (one shared object per judgement)
    role_flags: RoleFlags
    #: :attr:`reasons` in report order (:func:`~provenance.audit.judge.reasons.ordered`)
    ordered_reasons: tuple[Reason, ...] = ()
    #: diff size from :attr:`flags` to each distinct major FlagSet of the role in scope,
    #: in the order of the scope's role index (``RoleIndex.order``)
    distances: list[int] = field(default_factory=list)
    #: the items of :attr:`flags` that are some vLLM version's default, and what reads a
    #: record at its version (:attr:`index` holds the records read so): usually none
    view: View = NO_VIEW
    versions: VersionDefaults | None = None
    #: per (record id, its major flags of the role): alternatives of one record differ
    _nearest: dict[tuple[str, FlagSet], NearestEvidence] = field(default_factory=dict, repr=False)
    #: (signatures, position of this role in them) → :meth:`distances_to`
    _vectors: dict[tuple[Signatures, int], list[int]] = field(default_factory=dict, repr=False)

    def evidence_flags(self, record: IndexedRecord) -> FlagSet:
        """``record``'s flags of this role as this judgement compares them (read at the
        record's vLLM version when :attr:`view` is not empty)."""
        if self.view and self.versions is not None:
            return read_at_version(record.major[self.role], record, self.view, self.versions)
        return record.major[self.role]

    def nearest_evidence(self, record: IndexedRecord) -> NearestEvidence:
        """This role's difference from ``record`` (built once per record)."""
        memo = (record.id, record.major[self.role])
        found = self._nearest.get(memo)
        if found is None:
            only_recipe, only_evidence, changed = with_compared_defaults(
                *self.flags.diff_parts(self.evidence_flags(record))
            )
            found = self._nearest[memo] = NearestEvidence(
                record=record.id,
                config_key=record.config_key,
                prs=record.prs,
                role=self.role,
                distance=len(only_recipe) + len(only_evidence) + len(changed),
                validated=record.validated,
                only_recipe=only_recipe,
                only_evidence=only_evidence,
                changed=changed,
            )
        return found

    def distances_to(self, signatures: Signatures, position: int) -> list[int]:
        """The diff size from each record of ``signatures``, whose ``position``-th role is
        this judgement's (remembered per signatures)."""
        memo = (signatures, position)
        found = self._vectors.get(memo)
        if found is None:
            distances = self.distances
            found = self._vectors[memo] = [distances[i] for i in signatures.columns[position]]
        return found


def read_at_version(
    flags: FlagSet, record: IndexedRecord, view: View, versions: VersionDefaults
) -> FlagSet:
    """``flags`` (``record``'s, of one role) with each item of ``view`` (a recipe's explicit
    version-dependent defaults) that the record leaves out and runs by default at the vLLM
    version of its image."""
    image = record.record.image
    added = {k: v for k, v in view if k not in flags and versions.runs(k, v, image)}
    return flags.merged(FlagSet.of_strings(added)) if added else flags


def records_at_version(
    records: Iterable[IndexedRecord], role: str, view: View, versions: VersionDefaults
) -> list[IndexedRecord]:
    """``records`` with ``role`` read at their version (:func:`read_at_version`): a copy of
    each record it changes, the record itself otherwise."""
    found = []
    for record in records:
        flags = record.major.get(role)
        read = flags if flags is None else read_at_version(flags, record, view, versions)
        if read is not flags and read is not None:
            record = replace(record, major={**record.major, role: read})
        found.append(record)
    return found


def version_note(
    index: RoleIndex,
    key: str,
    value: str,
    records: Iterable[IndexedRecord],
    versions: VersionDefaults | None,
) -> str:
    """``vLLM's default of <key> depends on the version (…); the evidence's vLLM version
    is unknown (image …)`` when one of ``records`` may run ``key`` at ``value`` by default
    (it leaves the key out, its version is unknown and ``value`` is some version's
    default); else the empty text."""
    if versions is None or not versions.may_default(key, value):
        return ""
    role = index.role
    images = [
        r.record.image
        for r in records
        if key not in r.major[role] and versions.unknown(key, value, r.record.image)
    ]
    return unknown_version_note(key, images) if images else ""


def joined(*parts: str) -> str:
    """The non-empty ``parts`` of a reason's detail, joined by ``; ``."""
    return "; ".join(part for part in parts if part)


def with_compared_defaults(
    only_recipe: dict[str, str],
    only_evidence: dict[str, str],
    changed: dict[str, tuple[str, str]],
) -> tuple[dict[str, str], dict[str, str], dict[str, tuple[str, str]]]:
    """A diff with every key one side leaves at its compared default read as changed
    (the unset side at vLLM's default): ``tensor_parallel_size`` 1 → 8, not only-evidence."""
    if COMPARED_DEFAULTS.keys().isdisjoint(only_recipe) and COMPARED_DEFAULTS.keys().isdisjoint(
        only_evidence
    ):
        return only_recipe, only_evidence, changed
    moved = dict(changed)
    for key in [k for k in only_recipe if k in COMPARED_DEFAULTS]:
        moved[key] = (only_recipe.pop(key), COMPARED_DEFAULTS[key])
    for key in [k for k in only_evidence if k in COMPARED_DEFAULTS]:
        moved[key] = (COMPARED_DEFAULTS[key], only_evidence.pop(key))
    return only_recipe, only_evidence, dict(sorted(moved.items()))


def judge_role(
    index: RoleIndex,
    kind: DeploymentKind,
    flags: FlagSet,
    class_of: ClassifyFn,
    versions: VersionDefaults | None = None,
    view: View = NO_VIEW,
) -> RoleJudgement:
    """``flags`` of ``index``'s role judged against the records of ``index`` (read at their
    vLLM version by ``view``, the items of ``flags`` that are some version's default)."""
    role = index.role
    exact = index.groups.get(flags, ())
    known = index.provenance
    provenance = tuple(
        known.get(item) or flag_provenance(index, item, class_of) for item in flags.items()
    )
    distances = index.distances(flags)
    reasons: tuple[Reason, ...] = ()
    if not index.candidates:
        reasons = (
            Reason(
                code=ReasonCode.NO_EVIDENCE,
                role=role,
                detail=f"no {kind} evidence point with a {role} role for this "
                "checkpoint and hardware",
            ),
        )
    elif not exact:
        reasons = tuple(_flag_reasons(index, flags, distances, versions))
    return RoleJudgement(
        role=role,
        flags=flags,
        index=index,
        candidates=index.candidates,
        exact=exact,
        provenance=provenance,
        reasons=reasons,
        role_flags=role_flags(role, provenance),
        ordered_reasons=ordered(reasons),
        distances=distances,
        view=view,
        versions=versions,
    )


def flag_provenance(
    index: RoleIndex, item: tuple[str, str], class_of: ClassifyFn
) -> FlagProvenance:
    """One flag of the role and the in-scope records that set it (one object per index)."""
    found = index.provenance.get(item)
    if found is None:
        key, value = item
        found = index.provenance[item] = FlagProvenance(
            key=key, value=value, cls=class_of(key), evidence=index.setters.get(item, ())
        )
    return found


def role_flags(role: str, provenance: tuple[FlagProvenance, ...]) -> RoleFlags:
    """The report's view of one role."""
    return RoleFlags(role=role, flags=provenance)


def _flag_reason(
    index: RoleIndex, item: tuple[str, str], versions: VersionDefaults | None
) -> Reason | None:
    """``flag-unevidenced`` or ``value-mismatch`` for one recipe flag (``None``: evidenced)."""
    if item in index.flag_reasons:
        return index.flag_reasons[item]
    key, value = item
    role = index.role
    setters = index.by_key.get(key, ())
    default = COMPARED_DEFAULTS.get(key)
    # records that leave a key with a compared default unset run it at that default
    unset = [r for r in index.candidates if key not in r.major[role]] if default is not None else []
    reason: Reason | None = None
    if not setters and not unset:
        reason = Reason(
            code=ReasonCode.FLAG_UNEVIDENCED,
            role=role,
            flag=key,
            recipe_value=value,
            detail=joined(
                "no in-scope evidence point sets this flag",
                version_note(index, key, value, index.candidates, versions),
            ),
        )
    elif item not in index.setters and not (unset and value == default):
        seen = {r.major[role][key] for r in setters}
        if unset and default is not None:
            seen.add(default)
        reason = Reason(
            code=ReasonCode.VALUE_MISMATCH,
            role=role,
            flag=key,
            recipe_value=value,
            evidence_value=", ".join(sorted(seen)),
            sources=prs_of([*setters, *unset]),
            detail=(
                f"in-scope evidence that leaves it unset runs vLLM's default {default}"
                if unset
                else version_note(index, key, value, index.candidates, versions)
            ),
        )
    if reason is not None and reason.code is ReasonCode.VALUE_MISMATCH:
        reason = with_conditions(reason, setters)
    index.flag_reasons[item] = reason
    return reason


def _flag_reasons(
    index: RoleIndex, flags: FlagSet, distances: list[int], versions: VersionDefaults | None
) -> list[Reason]:
    role = index.role
    reasons = [
        reason
        for reason in (_flag_reason(index, item, versions) for item in flags.items())
        if reason is not None
    ]
    supersets = index.supersets(flags)
    if not reasons and not supersets:
        nearest = index.nearest(distances)
        diff = flags.diff(nearest.major[role])
        lacking = {**diff.only_left, **{k: v for k, (v, _) in diff.changed.items()}}
        elsewhere = (ref for item in lacking.items() for ref in index.setters.get(item, ()))
        reasons.append(
            Reason(
                code=ReasonCode.NEVER_JOINTLY_OBSERVED,
                role=role,
                sources=prs_of([nearest, *elsewhere]),
                record=nearest.id,
                detail=f"every {role} flag is evidenced somewhere in scope, but no single "
                f"evidence point sets them all; the nearest ({nearest.config_key}) lacks "
                + ", ".join(f"{k}={v}" for k, v in sorted(lacking.items())),
            )
        )
    basis = index.nearest(distances, supersets)
    for key, evidence_value in basis.major[role].items():
        if key not in flags:
            reasons.append(_missing_flag(index, basis, key, evidence_value, versions))
    return reasons


def _missing_flag(
    index: RoleIndex,
    basis: IndexedRecord,
    key: str,
    evidence_value: str,
    versions: VersionDefaults | None = None,
) -> Reason:
    """``missing-flag``: ``key`` is set by the nearest evidence point, not by the recipe
    (``value-mismatch`` when the recipe runs the key at its compared default)."""
    memo = (basis.id, key)
    found = index.missing.get(memo)
    default = COMPARED_DEFAULTS.get(key)
    if found is None and default is not None:
        found = index.missing[memo] = Reason(
            code=ReasonCode.VALUE_MISMATCH,
            role=index.role,
            flag=key,
            recipe_value=default,
            evidence_value=evidence_value,
            sources=basis.prs,
            record=basis.id,
            detail=f"the recipe runs vLLM's default {default} (explicit or unset); the "
            f"nearest evidence point ({basis.config_key}) sets {evidence_value}",
        )
    if found is None:
        found = index.missing[memo] = Reason(
            code=ReasonCode.MISSING_FLAG,
            role=index.role,
            flag=key,
            evidence_value=evidence_value,
            sources=basis.prs,
            record=basis.id,
            detail=joined(
                f"set by the nearest evidence point ({basis.config_key}), not by the recipe",
                _missing_note(key, evidence_value, basis, versions),
            ),
        )
    return found


def _missing_note(
    key: str, value: str, basis: IndexedRecord, versions: VersionDefaults | None
) -> str:
    """The :func:`version_note` of a flag the nearest point sets and the recipe leaves out:
    said when the point's version is unknown and ``value`` is some version's default."""
    image = basis.record.image
    if versions is None or not versions.unknown(key, value, image):
        return ""
    return unknown_version_note(key, [image])
