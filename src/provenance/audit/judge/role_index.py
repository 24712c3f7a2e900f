"""The in-scope evidence of one role, indexed once per scope (the judge's fast lookups).

A scope (checkpoint, hardware, deployment kind) has hundreds of records but a few
dozen distinct major FlagSets per role: :class:`RoleIndex` groups the records by
them, so a role's distance to every group is one diff *size* (set operations), and
keeps the setters of each flag and key for the reasons. :class:`Signatures` does the
same for a tuple of roles (the nearest evidence over all roles of a combination).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from provenance.audit.index import IndexedRecord
from provenance.audit.verdicts import EvidenceRef, FlagProvenance, Reason
from provenance.model.flags import FlagSet


def evidence_ref(record: IndexedRecord) -> EvidenceRef:
    """The shared reference to ``record`` (one object per record, not per use)."""
    return record.ref


@dataclass(eq=False)
class RoleIndex:
    """The in-scope records that have one evidence role, indexed once per scope and role.

    Records are grouped by their major FlagSet of the role (a scope has a few dozen
    distinct ones for hundreds of records): a diff size depends on the FlagSet alone, so
    distances are computed once per group, and the group's record that wins a tie
    (validated first, then lowest id) stands for it. Groups are kept in the order of
    those records, so the nearest group is the first one at the smallest distance.
    """

    role: str
    candidates: tuple[IndexedRecord, ...]
    #: distinct major FlagSet → its records, in candidate order
    groups: dict[FlagSet, tuple[IndexedRecord, ...]]
    #: the distinct major FlagSets, in tie-break order of their :attr:`best` records
    order: tuple[FlagSet, ...]
    #: distinct major FlagSet → the record nearest-evidence ties resolve to
    best: dict[FlagSet, IndexedRecord]
    #: ``(key, value)`` → the records that set it, as references, in candidate order
    setters: dict[tuple[str, str], tuple[EvidenceRef, ...]]
    #: key → the records that set it, in candidate order
    by_key: dict[str, tuple[IndexedRecord, ...]]
    provenance: dict[tuple[str, str], FlagProvenance] = field(default_factory=dict)
    flag_reasons: dict[tuple[str, str], Reason | None] = field(default_factory=dict)
    missing: dict[tuple[str, str], Reason] = field(default_factory=dict)
    #: distinct major FlagSet → its position in :attr:`order`
    position: dict[FlagSet, int] = field(init=False, repr=False)
    #: per FlagSet of :attr:`order`: its size, key set and item set (:meth:`distances`)
    _sets: list[tuple[int, frozenset[str], frozenset[tuple[str, str]]]] = field(
        init=False, repr=False
    )

    def __post_init__(self) -> None:
        self.position = {flags: i for i, flags in enumerate(self.order)}
        self._sets = [(len(g), g.key_set(), g.item_set()) for g in self.order]

    @classmethod
    def build(cls, role: str, records: Sequence[IndexedRecord]) -> RoleIndex:
        candidates = tuple(r for r in records if role in r.major)
        groups: dict[FlagSet, list[IndexedRecord]] = {}
        setters: dict[tuple[str, str], list[EvidenceRef]] = {}
        by_key: dict[str, list[IndexedRecord]] = {}
        for record in candidates:
            flags = record.major[role]
            groups.setdefault(flags, []).append(record)
            for item in flags.items():
                # the alternatives of one record (an ``IndexedRecord`` each, one after the
                # other) count once as setters of a value they share
                refs = setters.setdefault(item, [])
                if not refs or refs[-1] is not record.ref:
                    refs.append(evidence_ref(record))
                    by_key.setdefault(item[0], []).append(record)
        best = {flags: min(found, key=tie_break) for flags, found in groups.items()}
        return cls(
            role=role,
            candidates=candidates,
            groups={flags: tuple(found) for flags, found in groups.items()},
            order=tuple(sorted(best, key=lambda flags: tie_break(best[flags]))),
            best=best,
            setters={item: tuple(refs) for item, refs in setters.items()},
            by_key={key: tuple(found) for key, found in by_key.items()},
        )

    def distances(self, flags: FlagSet) -> list[int]:
        """``flags.diff_size(group)`` for every group of :attr:`order` (inlined)."""
        length, keys, items = len(flags), flags.key_set(), flags.item_set()
        return [
            length + size - len(keys & group_keys) - len(items & group_items)
            for size, group_keys, group_items in self._sets
        ]

    def supersets(self, flags: FlagSet) -> list[int]:
        """Positions in :attr:`order` of the groups that have every flag of ``flags``."""
        wanted = flags.item_set()
        return [i for i, (_, _, group_items) in enumerate(self._sets) if wanted <= group_items]

    def nearest(self, distances: list[int], positions: Sequence[int] = ()) -> IndexedRecord:
        """The record at the smallest distance, among the groups at ``positions`` (all when
        empty); ties: validated first, then lowest id (the order of :attr:`order`)."""
        if positions:
            position = min(positions, key=distances.__getitem__)
        else:
            position = distances.index(min(distances))
        return self.best[self.order[position]]


@dataclass(frozen=True, eq=False)
class Signatures:
    """The in-scope records that have every role of a tuple of roles, one per distinct tuple
    of their major FlagSets (the one ties resolve to), in tie-break order."""

    records: list[IndexedRecord]
    #: per role of the tuple: each record's FlagSet as a position in that role's index
    columns: tuple[list[int], ...]
    #: how many of :attr:`records` are validated: the first ones (tie-break order puts
    #: validated records first), so the nearest validated point is searched in a prefix
    validated: int = 0


def tie_break(record: IndexedRecord) -> tuple[bool, str]:
    """Between evidence points at the same distance: validated first, then the lowest id."""
    return (not record.validated, record.id)
