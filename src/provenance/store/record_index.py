"""The evidence store's index: checkpoint → the ids of the records that ran it.

``<evidence>/index.json`` (schema ``provenance.evidence.index/v1``) lets an audit load
only the records whose checkpoint a recipe can select, so its time depends on the
evidence in scope, not on the size of the store. Keys are :func:`checkpoint_key`\\ s
(the lower-cased repository name after alias resolution): two checkpoints that
:func:`same_checkpoint` matches always share one, so the records under the keys of a
recipe's model ids are a superset of what it can be judged against.

The file carries ``digest``, the SHA-256 of its canonical content without it, so a
damaged or hand-edited index is refused. Ingest rewrites it atomically, under the
writer lock, after the records it indexes are stored (incrementally when the old
index still describes the store). Trust model:

* an audit (:func:`load_scoped`) checks the digest, that every record the index lists
  is present (by name: a directory listing, no file is read) and that every record it
  loads has the checkpoint it is listed under; any failure is an IntegrityError
  (exit 4) naming the index. A record listed under the wrong checkpoint is only
  noticed when that checkpoint's records are loaded;
* record files present but not listed are what an ingest killed between storing its
  records and rewriting the index leaves (ingest never deletes a record): the audit
  reads and proves those records (a forged one is still an IntegrityError), keeps the
  ones in scope — the index rebuilt in memory — and says so with a
  :class:`StaleIndexWarning` (one line on stderr); it writes nothing;
* ``provenance verify`` (:func:`check_index`) rebuilds the index from every record
  and compares: it stays complete. An index that is only stale that way, every record
  sound, is rewritten (:func:`repair_stale_index`) and reported as a warning.

Without an index (a store written before it existed, or by hand) the audit loads
every record and keeps the ones in scope: the same result, at the old cost; verify
reports the index missing. ``provenance evidence index`` writes it.
"""

from __future__ import annotations

import hashlib
import json
import warnings
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from provenance.errors import IntegrityError, ProvenanceError, ProvenanceWarning
from provenance.model.record import EvidenceRecord, canonical_json
from provenance.model.scope import checkpoint_key
from provenance.store.atomic import atomic_write_bytes
from provenance.store.evidence import INDEX_FILE, MAX_RECORD_BYTES, EvidenceStore
from provenance.store.verified import VerifiedRecords

INDEX_SCHEMA: Literal["provenance.evidence.index/v1"] = "provenance.evidence.index/v1"
_REBUILD_HINT = "run `provenance evidence index` to rebuild it, then `provenance verify`"


class StaleIndexWarning(ProvenanceWarning):
    """The index misses record files present in the store (an interrupted ingest); the
    command went on with the index rebuilt in memory, or rewritten."""


class RecordIndex(BaseModel):
    """The index file (see the module docstring)."""

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)

    schema_: Literal["provenance.evidence.index/v1"] = Field(default=INDEX_SCHEMA, alias="schema")
    #: how many records the index lists
    records: int
    #: checkpoint key -> sorted record ids
    checkpoints: dict[str, tuple[str, ...]]
    #: sha256:<hex> of the canonical JSON of the other fields
    digest: str = ""

    def ids(self) -> set[str]:
        return {record_id for ids in self.checkpoints.values() for record_id in ids}

    def computed_digest(self) -> str:
        content = self.model_dump(mode="json", by_alias=True, exclude={"digest"})
        return "sha256:" + hashlib.sha256(canonical_json(content)).hexdigest()


def index_path(store: EvidenceStore) -> Path:
    return store.root / INDEX_FILE


def build_index(records: Iterable[EvidenceRecord]) -> RecordIndex:
    """The index of ``records`` (each must carry its id)."""
    by_key: dict[str, set[str]] = {}
    for record in records:
        by_key.setdefault(checkpoint_key(record.checkpoint), set()).add(record.id)
    return _sealed(by_key)


def _sealed(by_key: Mapping[str, Collection[str]]) -> RecordIndex:
    checkpoints = {key: tuple(sorted(ids)) for key, ids in sorted(by_key.items()) if ids}
    index = RecordIndex(records=sum(len(i) for i in checkpoints.values()), checkpoints=checkpoints)
    return index.model_copy(update={"digest": index.computed_digest()})


def index_bytes(index: RecordIndex) -> bytes:
    data = index.model_dump(mode="json", by_alias=True)
    return (json.dumps(data, sort_keys=True, indent=1, ensure_ascii=False) + "\n").encode("utf-8")


def read_index(store: EvidenceStore) -> RecordIndex | None:
    """The index, or None when there is none; IntegrityError naming it when it is
    unreadable, malformed or does not match its digest."""
    path = index_path(store)
    if not (path.exists() or path.is_symlink()):
        return None
    try:
        if path.stat().st_size > MAX_RECORD_BYTES * 16:
            raise IntegrityError(f"{path}: evidence index is too large to be one")
        raw = path.read_bytes()
    except OSError as exc:
        raise IntegrityError(f"{path}: cannot read the evidence index: {exc.strerror}") from None
    try:
        index = RecordIndex.model_validate_json(raw)
    except ValidationError as exc:
        error = exc.errors()[0]
        loc = ".".join(str(p) for p in error["loc"])
        raise IntegrityError(
            f"{path}: not an evidence index ({loc + ': ' if loc else ''}{error['msg']})",
            hint=_REBUILD_HINT,
        ) from None
    if index.digest != index.computed_digest():
        raise IntegrityError(
            f"{path}: evidence index does not match its digest (modified)", hint=_REBUILD_HINT
        )
    if index.records != len(index.ids()):
        raise IntegrityError(
            f"{path}: evidence index says {index.records} records but lists {len(index.ids())}",
            hint=_REBUILD_HINT,
        )
    return index


def write_index(store: EvidenceStore, index: RecordIndex) -> bool:
    """Write ``index`` atomically (hold the writer lock); False when already so."""
    path = index_path(store)
    data = index_bytes(index)
    try:
        if path.stat().st_size == len(data) and path.read_bytes() == data:
            return False
    except FileNotFoundError:
        pass
    atomic_write_bytes(path, data)
    return True


def rebuild_index(store: EvidenceStore) -> RecordIndex:
    """The index of every record of the store (each read and proven in full: a writer
    touches no cache of the reader's)."""
    return build_index(store.load_all().values())


def update_index(store: EvidenceStore, added: Iterable[EvidenceRecord]) -> bool:
    """Bring the index up to date after ``added`` were stored; True when it was rewritten.

    When the old index plus ``added`` lists exactly the record files present, only
    ``added`` is indexed (an incremental ingest reads no other record); otherwise the
    index is rebuilt from every record.
    """
    present = set(store.ids())
    try:
        old = read_index(store)
    except IntegrityError:
        old = None
    new = list(added)
    if old is not None and old.ids() | {r.id for r in new} == present:
        by_key: dict[str, set[str]] = {k: set(v) for k, v in old.checkpoints.items()}
        for record in new:
            by_key.setdefault(checkpoint_key(record.checkpoint), set()).add(record.id)
        index = _sealed(by_key)
    else:
        index = rebuild_index(store)
    return write_index(store, index)


def reindex(ledger_root: Path, evidence_root: Path) -> tuple[RecordIndex, bool]:
    """Rebuild and write the index of the store at ``evidence_root``, under the writer lock
    of ``ledger_root``; the index and whether the file changed."""
    from provenance.store.lock import writer_lock

    store = EvidenceStore(evidence_root)
    with writer_lock(ledger_root):
        index = rebuild_index(store)
        return index, write_index(store, index)


@dataclass(frozen=True)
class ScopedRecords:
    """The records of some checkpoints, and the ids of every record file present."""

    records: dict[str, EvidenceRecord]
    present: frozenset[str]
    indexed: bool


def load_scoped(
    store: EvidenceStore,
    model_ids: Collection[str],
    verified: VerifiedRecords | None = None,
    present: frozenset[str] | None = None,
) -> ScopedRecords:
    """The records whose checkpoint key is one of ``model_ids``' (see the module docstring).
    ``present``: the store's record ids when the caller has already listed them."""
    keys = {checkpoint_key(model_id) for model_id in model_ids}
    if present is None:
        present = frozenset(store.ids())
    index = read_index(store)
    if index is None:
        every = store.load_all(verified)
        return ScopedRecords(
            {i: r for i, r in every.items() if checkpoint_key(r.checkpoint) in keys},
            present,
            indexed=False,
        )
    path = index_path(store)
    indexed = index.ids()
    unlisted, missing = present - indexed, indexed - present
    if missing:
        raise IntegrityError(
            f"{path}: evidence index is stale: {len(unlisted)} record file(s) not listed, "
            f"{len(missing)} listed record(s) missing from {store.root}",
            hint=_REBUILD_HINT,
        )
    wanted = {record_id: key for key in keys for record_id in index.checkpoints.get(key, ())}
    records = store.load_ids(sorted(wanted), verified)
    for record_id, record in records.items():
        if checkpoint_key(record.checkpoint) != wanted[record_id]:
            raise IntegrityError(
                f"{path}: lists {record_id} under checkpoint {wanted[record_id]!r}, "
                f"but the record ran {record.checkpoint!r}",
                hint=_REBUILD_HINT,
            )
    if unlisted:
        # An ingest killed before it rewrote the index: read and prove the records it
        # did not list, keep those in scope (the index rebuilt in memory).
        extra = store.load_ids(sorted(unlisted), verified)
        records.update(
            (record_id, record)
            for record_id, record in extra.items()
            if checkpoint_key(record.checkpoint) in keys
        )
        warnings.warn(
            StaleIndexWarning(
                f"{path}: evidence index is stale: {len(unlisted)} record file(s) not listed "
                "(an interrupted ingest); rebuilt in memory for this run "
                "(`provenance evidence index` or `provenance verify` rewrites it)"
            ),
            stacklevel=2,
        )
    return ScopedRecords(records, present, indexed=True)


def only_unlisted(store: EvidenceStore, stored: Mapping[str, EvidenceRecord]) -> int:
    """How many sound records ``stored`` the index does not list, when that is all that is
    wrong with it (an interrupted ingest; digest, listed records and checkpoints right);
    0 otherwise."""
    try:
        index = read_index(store)
    except IntegrityError:
        return 0
    if index is None:
        return 0
    unlisted = {i: r for i, r in stored.items() if i not in index.ids()}
    if not unlisted:
        return 0
    listed = {i: r for i, r in stored.items() if i not in unlisted}
    return len(unlisted) if build_index(listed.values()) == index else 0


def repair_stale_index(ledger_root: Path, store: EvidenceStore) -> bool:
    """Rewrite a stale index atomically under the writer lock, without waiting for it;
    False when the lock is held or the index cannot be written (read-only store)."""
    from provenance.store.lock import writer_lock

    try:
        with writer_lock(ledger_root, timeout=0):
            update_index(store, ())
    except (ProvenanceError, OSError):
        return False
    return True


def check_index(store: EvidenceStore, stored: Mapping[str, EvidenceRecord]) -> list[str]:
    """What is wrong with the index given every sound record ``stored`` (verify's check);
    empty when it is exactly the index of them. A missing index is one problem."""
    path = index_path(store)
    try:
        index = read_index(store)
    except IntegrityError as exc:
        return [exc.message]
    if index is None:
        return [f"{path}: no evidence index (audits load every record); {_REBUILD_HINT}"]
    expected = build_index(stored.values())
    if index == expected:
        return []
    problems = []
    listed = index.ids()
    if unlisted := sorted(set(stored) - listed):
        problems.append(f"{path}: {len(unlisted)} record(s) not listed, first {unlisted[0]}")
    if extra := sorted(listed - set(stored)):
        problems.append(f"{path}: lists {len(extra)} record(s) not in the store, first {extra[0]}")
    misplaced = [
        (key, record_id)
        for key, ids in index.checkpoints.items()
        for record_id in ids
        if record_id in stored and checkpoint_key(stored[record_id].checkpoint) != key
    ]
    if misplaced:
        key, record_id = misplaced[0]
        problems.append(
            f"{path}: {len(misplaced)} record(s) under the wrong checkpoint, "
            f"first {record_id} under {key!r}"
        )
    return problems or [f"{path}: does not match the records of the store"]
