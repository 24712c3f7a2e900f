"""The content-addressed evidence store: one JSON file per ``EvidenceRecord``.

Layout: ``<root>/<first 2 hex digits>/<remaining 62 hex digits>.json`` for the
record id ``sha256:<64 hex>``. Each file holds the record's pretty canonical
JSON (sorted keys, two-space indent, UTF-8, trailing newline) *including* its
``id``. The id is the SHA-256 of the canonical compact JSON of the record
without ``id`` (``EvidenceRecord.compute_id``), so a file is self-checking:
its name, its ``id`` field and the hash of its content must all agree.
``<root>/index.json`` is the checkpoint index (:mod:`provenance.store.record_index`).

Writes are atomic (``provenance.store.atomic``) and idempotent; callers that
write both evidence and ledger entries hold ``writer_lock`` and write the
evidence records first, so a crash can leave orphan records but never a ledger
reference to a missing record.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from provenance.errors import IntegrityError
from provenance.model.record import EvidenceRecord, canonical_json
from provenance.store.atomic import atomic_write_bytes, is_temp_name, remove_stale_temp_files
from provenance.store.verified import VerifiedRecords

ID_PREFIX = "sha256:"
#: The store's checkpoint index (``provenance.store.record_index``), at its root.
INDEX_FILE = "index.json"
#: Largest record file read. Real records are a few KiB; a file over this is
#: refused (corrupt) before it is read, so a hostile store cannot exhaust memory.
MAX_RECORD_BYTES = 4 * 1024 * 1024
_ID = re.compile(r"^sha256:[0-9a-f]{64}$")
_DIR = re.compile(r"^[0-9a-f]{2}$")
_FILE = re.compile(r"^[0-9a-f]{62}\.json$")


class RecordNotFoundError(IntegrityError):
    """A record id that should be in the store is not (a dangling reference)."""


def is_record_id(text: str) -> bool:
    return bool(_ID.match(text))


def record_file_bytes(record: EvidenceRecord) -> bytes:
    """The exact bytes stored for ``record`` (which must carry its id)."""
    data = record.model_dump(mode="json", by_alias=True)
    return (json.dumps(data, sort_keys=True, indent=2, ensure_ascii=False) + "\n").encode("utf-8")


@dataclass(frozen=True)
class RecordFileCheck:
    """The outcome of checking one file of the store.

    ``name_id`` is the id the file's location stands for (``None`` when the
    name is not a record name); ``record`` is set when the file parsed;
    ``problem`` is ``None`` when name, ``id`` field and content hash agree.
    """

    path: Path
    name_id: str | None
    record: EvidenceRecord | None
    problem: str | None

    @property
    def ok(self) -> bool:
        return self.problem is None


def _content_id(data: dict[str, Any]) -> str:
    content = {k: v for k, v in data.items() if k != "id"}
    return ID_PREFIX + hashlib.sha256(canonical_json(content)).hexdigest()


class EvidenceStore:
    """Content-addressed evidence records under ``root``."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)

    # Paths -----------------------------------------------------------------
    def path_of(self, record_id: str) -> Path:
        if not is_record_id(record_id):
            raise IntegrityError(f"not a record id: {record_id!r} (expected sha256:<64 hex>)")
        digest = record_id[len(ID_PREFIX) :]
        return self.root / digest[:2] / f"{digest[2:]}.json"

    def id_of(self, path: Path) -> str | None:
        """The id a file location stands for, or ``None`` if it is not a record name."""
        if not (_DIR.match(path.parent.name) and _FILE.match(path.name)):
            return None
        return f"{ID_PREFIX}{path.parent.name}{path.name[:-5]}"

    # Writing ---------------------------------------------------------------
    def put(self, record: EvidenceRecord) -> tuple[str, bool]:
        """Store ``record``; return its id and whether the file was (re)written.

        Idempotent: storing an equal record again writes nothing. A file that
        exists with other bytes (damaged or tampered) is replaced by the
        correct content, since the id fixes what the content must be.
        """
        stamped = record.with_id()
        data = record_file_bytes(stamped)
        path = self.path_of(stamped.id)
        try:
            if path.stat().st_size == len(data) and path.read_bytes() == data:
                return stamped.id, False
        except FileNotFoundError:
            pass
        atomic_write_bytes(path, data)
        return stamped.id, True

    # Reading ---------------------------------------------------------------
    def ids(self) -> list[str]:
        """Every record id present (by file name), sorted. Temporary files are skipped;
        a file or folder that cannot be named as a record (as ``load_all``) is an
        IntegrityError, never a silently shorter list."""
        ids = []
        for path, record_id in self._record_files():
            if record_id is None:
                raise IntegrityError(f"{path}: not a record file (expected <62 hex>.json)")
            ids.append(record_id)
        return sorted(ids)

    def __contains__(self, record_id: object) -> bool:
        return (
            isinstance(record_id, str)
            and is_record_id(record_id)
            and self.path_of(record_id).is_file()
        )

    def get(self, record_id: str) -> EvidenceRecord:
        """Load one record, re-hashing it; IntegrityError when it is missing or does not match."""
        path = self.path_of(record_id)
        if not path.is_file():
            raise RecordNotFoundError(f"evidence record {record_id} not found at {path}")
        check = self.check_file(path)
        if check.problem is not None or check.record is None:
            raise IntegrityError(f"{path}: {check.problem}")
        return check.record

    def iter_records(self, verified: VerifiedRecords | None = None) -> Iterator[EvidenceRecord]:
        """Every record in id order, hash-checked (the fast path of :meth:`load_all`)."""
        records = self.load_all(verified)
        for record_id in sorted(records):
            yield records[record_id]

    def load_all(self, verified: VerifiedRecords | None = None) -> dict[str, EvidenceRecord]:
        """Fast bulk load for the audit: every record by id, hash-checked.

        Checks the SHA-256 of each file's canonical content against its name and
        ``id`` field, then validates it once (pydantic-core). With ``verified``,
        a file whose name and exact bytes were proven before by the same code
        (:mod:`provenance.store.verified`) is only hashed raw and validated from
        its bytes; every other file is proven in full and remembered. Raises
        IntegrityError on the first file that does not check out.
        """
        records: dict[str, EvidenceRecord] = {}
        for file_path, name_id in self._record_files():
            if name_id is None:
                raise IntegrityError(
                    f"{file_path}: not a record file name (expected <62 hex>.json)"
                )
            records[name_id] = self._load_file(file_path, name_id, verified)
        if verified is not None:
            verified.save()
        return records

    def load_ids(
        self, record_ids: Iterable[str], verified: VerifiedRecords | None = None
    ) -> dict[str, EvidenceRecord]:
        """:meth:`load_all` for the records ``record_ids`` only (each must be stored:
        a missing one is a :class:`RecordNotFoundError`)."""
        records: dict[str, EvidenceRecord] = {}
        for record_id in record_ids:
            path = self.path_of(record_id)
            if not path.is_file():
                raise RecordNotFoundError(f"evidence record {record_id} not found at {path}")
            records[record_id] = self._load_file(str(path), record_id, verified)
        if verified is not None:
            verified.save()
        return records

    def _load_file(
        self, file_path: str, name_id: str, verified: VerifiedRecords | None
    ) -> EvidenceRecord:
        """One record file, hash-checked (the fast path when ``verified`` knows its bytes)."""
        raw, problem = _read_bytes(file_path)
        record = None
        if verified is not None and raw is not None:
            raw_hex = hashlib.sha256(raw).hexdigest()
            if verified.known(name_id[len(ID_PREFIX) :], raw_hex):
                record = _validated_json(raw, name_id)
        if record is None:
            record = self._proven(file_path, name_id, raw, problem)
            if verified is not None and raw is not None:
                verified.proven(name_id[len(ID_PREFIX) :], raw_hex)
        return record

    def _proven(
        self, path: str | Path, name_id: str, raw: bytes | None, problem: str | None
    ) -> EvidenceRecord:
        """The record in ``raw`` after the full check; IntegrityError naming ``path`` if not."""
        data = None
        if problem is None:
            data, problem = _parse_json(raw or b"")
        if problem is None:
            problem = self._raw_problem(data, name_id)
        if problem is not None:
            raise IntegrityError(f"{path}: {problem}")
        try:
            return EvidenceRecord.model_validate(data)
        except ValidationError as exc:
            raise IntegrityError(f"{path}: not an evidence record ({_first_error(exc)})") from None

    def check_file(self, path: Path) -> RecordFileCheck:
        """Full check of one file: name, JSON, model, ``id`` field, raw and model hashes."""
        name_id = self.id_of(path)
        data, problem = _read_json(path)
        if problem is not None:
            return RecordFileCheck(path, name_id, None, problem)
        try:
            record = EvidenceRecord.model_validate(data)
        except ValidationError as exc:
            return RecordFileCheck(
                path, name_id, None, f"not an evidence record ({_first_error(exc)})"
            )
        if name_id is None:
            return RecordFileCheck(
                path, None, record, "file name is not a record name (<2 hex>/<62 hex>.json)"
            )
        problem = self._raw_problem(data, name_id)
        if problem is None and record.compute_id() != name_id:
            problem = "content does not hash to its id after validation (non-canonical values)"
        return RecordFileCheck(path, name_id, record, problem)

    def check_all(self) -> Iterator[RecordFileCheck]:
        """:meth:`check_file` for every non-temporary file in the store, in path order."""
        for path in self._record_paths(strict=False):
            yield self.check_file(path)

    def leftover_temp_files(self) -> list[Path]:
        """Hidden temporary files left by interrupted writes (harmless; safe to delete)."""
        if not self.root.is_dir():
            return []
        return sorted(p for p in self.root.rglob("*") if p.is_file() and is_temp_name(p.name))

    def remove_stale_temp_files(self) -> list[Path]:
        """Delete temporary files of writers that no longer run (see ``atomic``)."""
        return remove_stale_temp_files(self.root)

    # Internals -------------------------------------------------------------
    @staticmethod
    def _raw_problem(data: Any, name_id: str) -> str | None:
        if not isinstance(data, dict):
            return "not a JSON object"
        stored_id = data.get("id")
        content_id = _content_id(data)
        if stored_id != name_id:
            return f"id field {stored_id!r} does not match the file name ({name_id})"
        if content_id != name_id:
            return f"content hashes to {content_id}, not to its id {name_id} (modified)"
        return None

    def _record_files(self, *, strict: bool = True) -> list[tuple[str, str | None]]:
        """``(path, record id or None)`` of the files of the store, sorted by path;
        ``strict`` keeps only ``<2 hex>/*.json``. Strings, not ``Path``: the bulk load
        reads thousands, and ``pathlib``'s per-file overhead was a fifth of it."""
        if not self.root.is_dir():
            return []
        files: list[tuple[str, str | None]] = []
        for sub in _sorted_entries(self.root):
            if sub.name.startswith(".") or sub.name == INDEX_FILE:
                continue  # (the index is checked by ``record_index``)
            record_dir = bool(_DIR.match(sub.name))
            is_dir = _is_dir(sub)
            if not is_dir:
                # an unresolvable entry (symlink loop) named like a record folder is
                # reported, never skipped: it may hide records
                if not strict or (is_dir is None and record_dir):
                    files.append((sub.path, None))
                continue
            if strict and not record_dir:
                continue
            for entry in _sorted_entries(sub.path):
                name = entry.name
                if name.startswith(".") or _is_file(entry) is False:
                    continue  # (an unresolvable entry is kept: reading it names the problem)
                if strict and not name.endswith(".json"):
                    continue
                named = record_dir and _FILE.match(name)
                files.append((entry.path, f"{ID_PREFIX}{sub.name}{name[:-5]}" if named else None))
        return files

    def _record_paths(self, *, strict: bool = True) -> list[Path]:
        """:meth:`_record_files` as paths."""
        return [Path(path) for path, _ in self._record_files(strict=strict)]


def _sorted_entries(folder: str | Path) -> list[os.DirEntry[str]]:
    """The entries of ``folder`` by name (``os.scandir``: no ``stat`` per entry for
    ``is_dir``/``is_file`` on most file systems)."""
    with os.scandir(folder) as entries:
        return sorted(entries, key=lambda entry: entry.name)


def _is_dir(entry: os.DirEntry[str]) -> bool | None:
    """``entry.is_dir()``; None when it cannot be resolved (a symlink loop: ELOOP)."""
    try:
        return entry.is_dir()
    except OSError:
        return None


def _is_file(entry: os.DirEntry[str]) -> bool | None:
    """``entry.is_file()``; None when it cannot be resolved (a symlink loop: ELOOP)."""
    try:
        return entry.is_file()
    except OSError:
        return None


def _read_bytes(path: str | Path) -> tuple[bytes | None, str | None]:
    """``(raw, None)`` or ``(None, problem)`` for one record file (size-limited: a file
    over the limit, or growing past it while read, is refused unread)."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        return None, f"cannot read: {exc.strerror}"
    try:
        size = os.fstat(fd).st_size
        if size > MAX_RECORD_BYTES:
            return None, f"file is {size} bytes, over the {MAX_RECORD_BYTES}-byte record limit"
        chunks = []
        total = 0
        while chunk := os.read(fd, max(size, 1 << 16)):
            chunks.append(chunk)
            total += len(chunk)
            if total > MAX_RECORD_BYTES:
                return None, f"file grew past the {MAX_RECORD_BYTES}-byte record limit"
        return b"".join(chunks), None
    except OSError as exc:
        return None, f"cannot read: {exc.strerror}"
    finally:
        os.close(fd)


def _parse_json(raw: bytes) -> tuple[Any, str | None]:
    """``(data, None)`` or ``(None, problem)`` for the bytes of one record file."""
    try:
        return json.loads(raw), None
    except ValueError as exc:  # JSONDecodeError, UnicodeDecodeError, int digit limit
        return None, f"not valid JSON ({exc})"
    except RecursionError:
        return None, "not valid JSON (nested too deeply)"


def _read_json(path: Path) -> tuple[Any, str | None]:
    """``(data, None)`` or ``(None, problem)`` for one record file."""
    raw, problem = _read_bytes(path)
    if raw is None:
        return None, problem
    return _parse_json(raw)


def _validated_json(raw: bytes, name_id: str) -> EvidenceRecord | None:
    """The record of bytes proven before, straight from JSON; ``None`` if that disagrees
    (then the caller proves the file in full, which names the problem)."""
    try:
        record = EvidenceRecord.model_validate_json(raw)
    except ValidationError:
        return None
    return record if record.id == name_id else None


def _first_error(exc: ValidationError) -> str:
    error = exc.errors()[0]
    loc = ".".join(str(p) for p in error["loc"])
    return f"{loc}: {error['msg']}" if loc else str(error["msg"])
