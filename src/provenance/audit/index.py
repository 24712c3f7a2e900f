"""The evidence index the audit uses: evidence records, ledger entries, exact matches.

Plain data: the audit looks records up by (checkpoint, hardware, deployment kind,
evidence role, major FlagSet) through :meth:`EvidenceIndex.exact`, or by scope. The
graph form (networkx, for ``provenance graph``) is built from it by
:mod:`provenance.report.graph_export`.

A record whose flags depend on a run-time condition of its launcher
(``EvidenceRecord.conditional``) is one match point per alternative
(``EvidenceRecord.alternatives()``, those with equal major flags once): each is an
:class:`IndexedRecord` of the same record, so a recipe that runs any value the
benchmark could have run matches exactly. :attr:`EvidenceIndex.records` keeps the
first per id.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from provenance.audit.verdicts import EvidenceRef
from provenance.model.flags import FlagSet
from provenance.model.ledger import LedgerEntry
from provenance.model.record import EvidenceRecord
from provenance.model.scope import Scope, record_scope, same_checkpoint

if TYPE_CHECKING:
    from provenance.normalise.vllm_policy import VersionDefaults

#: Reduces a role's full FlagSet to its major flags in the role's context
#: (``Policy.effective``: aliases applied, inert-in-context flags dropped).
MajorFn = Callable[[FlagSet, str], FlagSet]


@dataclass(frozen=True, eq=False)
class IndexedRecord:
    """An evidence record with what the judge needs precomputed."""

    record: EvidenceRecord
    scope: Scope
    major: Mapping[str, FlagSet]
    prs: tuple[str, ...]
    validated: bool
    ref: EvidenceRef

    @property
    def id(self) -> str:
        return self.record.id

    @property
    def config_key(self) -> str:
        return self.record.config_key


def _position(row: tuple[int, str, IndexedRecord]) -> int:
    return row[0]


@dataclass
class EvidenceIndex:
    """Evidence records, ledger entries and an exact-match index over them."""

    records: dict[str, IndexedRecord] = field(default_factory=dict)
    #: records every citing entry of which was reverted: not evidence (see the module)
    withdrawn: dict[str, IndexedRecord] = field(default_factory=dict)
    entries: tuple[LedgerEntry, ...] = ()
    #: the version-dependent defaults each record's major flags were read at (the judge
    #: reads a recipe's explicit default at each record's version); None: not applied
    versions: VersionDefaults | None = None
    _by_scope: dict[Scope, list[IndexedRecord]] = field(default_factory=dict)
    _by_checkpoint_hw: dict[tuple[str, str], list[IndexedRecord]] = field(default_factory=dict)
    _exact: dict[tuple[Scope, str, FlagSet], list[IndexedRecord]] = field(default_factory=dict)
    #: ``records`` grouped by lowercased hardware, each with its position in ``records``
    #: (built on the first :meth:`on_hardware`; the index is not changed after ``build``)
    _by_hardware: dict[str, list[tuple[int, IndexedRecord]]] | None = None

    @classmethod
    def build(
        cls,
        records: Iterable[EvidenceRecord],
        entries: Iterable[LedgerEntry],
        major: MajorFn,
        versions: VersionDefaults | None = None,
    ) -> EvidenceIndex:
        entry_list = tuple(sorted(entries, key=lambda e: (e.pr.repo, e.pr.number)))
        # per record, the entries citing it that were not reverted (``live``) and those
        # that were: a record cited only by reverted entries is withdrawn
        live_of: dict[str, list[LedgerEntry]] = defaultdict(list)
        reverted_of: dict[str, list[LedgerEntry]] = defaultdict(list)
        for entry in entry_list:
            citing = live_of if entry.reverted_by is None else reverted_of
            for record_id in entry.records:
                citing[record_id].append(entry)
        graph = cls(entries=entry_list, versions=versions)
        by_scope: dict[Scope, list[IndexedRecord]] = defaultdict(list)
        by_ckpt_hw: dict[tuple[str, str], list[IndexedRecord]] = defaultdict(list)
        exact: dict[tuple[Scope, str, FlagSet], list[IndexedRecord]] = defaultdict(list)
        # Records share scopes and role FlagSets (1,487 MiniMax-M3 records: 1,711 roles,
        # 719 distinct): reduce each distinct FlagSet once (``major`` is a pure function)
        # and use one Scope object per scope, so index lookups hit by identity.
        majors: dict[tuple[FlagSet, str], FlagSet] = {}
        scopes: dict[Scope, Scope] = {}
        for record in sorted(records, key=lambda r: r.id):
            if not record.id:
                record = record.with_id()
            scope = record_scope(record)
            scope = scopes.setdefault(scope, scope)
            linked = live_of.get(record.id, [])
            withdrawn = not linked and record.id in reverted_of
            prs = tuple(str(e.pr) for e in (reverted_of[record.id] if withdrawn else linked))
            validated = any(e.validates(record.id) for e in linked)
            ref = EvidenceRef(record=record.id, prs=prs)
            # one match point per alternative of a conditional record (see the module)
            points: dict[tuple[tuple[str, FlagSet], ...], IndexedRecord] = {}
            for roles in record.alternatives():
                reduced: dict[str, FlagSet] = {}
                for role, flags in sorted(roles.items()):
                    known = majors.get((flags, role))
                    if known is None:
                        known = majors[(flags, role)] = major(flags, role)
                    if versions is not None:  # an explicit default of its vLLM version: absent
                        known = versions.drop(known, record.image)
                    reduced[role] = known
                points.setdefault(
                    tuple(reduced.items()),
                    IndexedRecord(
                        record=record,
                        scope=scope,
                        major=reduced,
                        prs=prs,
                        validated=validated,
                        ref=ref,
                    ),
                )
            first = next(iter(points.values()))
            if withdrawn:
                graph.withdrawn[record.id] = first
                continue
            graph.records[record.id] = first
            for indexed in points.values():
                by_scope[scope].append(indexed)
                by_ckpt_hw[(scope.checkpoint, scope.hardware)].append(indexed)
                for role, flags in indexed.major.items():
                    exact[(scope, role, flags)].append(indexed)
        graph._by_scope = dict(by_scope)
        graph._by_checkpoint_hw = dict(by_ckpt_hw)
        graph._exact = dict(exact)
        return graph

    # Queries --------------------------------------------------------------
    def every_record(self) -> list[IndexedRecord]:
        """Every record, evidence and withdrawn, by id (the graph export shows both)."""
        return sorted([*self.records.values(), *self.withdrawn.values()], key=lambda r: r.id)

    def in_scope(self, scope: Scope, model_id: str) -> list[IndexedRecord]:
        """Records of exactly this scope whose checkpoint is ``model_id``."""
        return [
            r
            for r in self._by_scope.get(scope, ())
            if same_checkpoint(model_id, r.record.checkpoint)
        ]

    def same_checkpoint_hardware(self, scope: Scope, model_id: str) -> list[IndexedRecord]:
        """Records of any deployment kind for this checkpoint and hardware."""
        return [
            r
            for r in self._by_checkpoint_hw.get((scope.checkpoint, scope.hardware), ())
            if same_checkpoint(model_id, r.record.checkpoint)
        ]

    def on_hardware(self, hardware: Iterable[str]) -> list[tuple[str, IndexedRecord]]:
        """The records whose lowercased hardware is in ``hardware``, in the order of
        :attr:`records`, each with that hardware.

        A PR audit asks this twice per recipe of one index (328 times over 5,112 records
        for recipes #828), each time for the few hardware a recipe offers: the records
        are grouped by hardware once, so each call visits its own hardware's only."""
        if self._by_hardware is None:
            groups: dict[str, list[tuple[int, IndexedRecord]]] = defaultdict(list)
            for position, indexed in enumerate(self.records.values()):
                groups[indexed.record.hardware.lower()].append((position, indexed))
            self._by_hardware = dict(groups)
        picked = [
            (position, name, indexed)
            for name in set(hardware)
            for position, indexed in self._by_hardware.get(name, ())
        ]
        picked.sort(key=_position)
        return [(name, indexed) for _, name, indexed in picked]

    def exact(self, scope: Scope, role: str, flags: FlagSet) -> list[IndexedRecord]:
        """Records in ``scope`` whose ``role`` has exactly these major flags."""
        return self._exact.get((scope, role, flags), [])

    def scopes(self) -> list[Scope]:
        return sorted(self._by_scope, key=lambda s: (s.checkpoint, s.hardware, s.kind))
