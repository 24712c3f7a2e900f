"""Record files already proven good, remembered by the digest of their exact bytes.

Proving one evidence record file (``EvidenceStore.load_all``) means parsing its
JSON, serialising the content canonically again, hashing it and comparing the
hash with the file's name and ``id`` field. The outcome is a pure function of
three things: the file's name, its exact bytes and the code that checks them.
So a file whose name and raw SHA-256 were proven before, by the same code, would
be proven again: for it, the audit computes the SHA-256 of the raw bytes (about
1 µs per KiB) instead of the two JSON passes, and validates the record from
those bytes directly. A file changed by even one byte has another raw digest
and is proven in full, like a file never seen.

The proven pairs live in the user's cache, not in the ledger
(:func:`provenance.ledger.paths.default_cache_dir`), one file per checker
version (:func:`checker_version`: the SHA-256 of the checking code's source and
of the Python and pydantic versions), ``verified-records/<version>.txt``, one
``<record hex> <raw hex>`` line per pair. A clean machine (a CI runner) has no
such file and proves everything. The file is local data, not evidence: anything
malformed in it makes the whole file count as empty; it is rewritten atomically,
only when new pairs were proven, and a failed write only costs the next audit
the full proof. Deleting the directory is always safe. ``PROVENANCE_CACHE_DIR``
relocates it; ``PROVENANCE_NO_CACHE=1`` turns it off.
"""

from __future__ import annotations

import hashlib
import os
import platform
import re
from functools import cache
from pathlib import Path

from provenance.ledger.atomic import atomic_write_bytes
from provenance.ledger.paths import default_cache_dir

NO_CACHE_ENV = "PROVENANCE_NO_CACHE"
#: Bumped when the layout of the file changes (also part of the checker version).
FORMAT = "provenance.verified-records/v1"
#: The modules whose code decides whether a record file is good: the store's checks,
#: the record model and every ``provenance`` module they import (a test keeps this
#: equal to the static import closure of ``provenance.ledger.store``).
CHECKER_MODULES = (
    "provenance",
    "provenance.defaults",
    "provenance.errors",
    "provenance.escaping",
    "provenance.evidence",
    "provenance.evidence.record",
    "provenance.flags",
    "provenance.flags.model",
    "provenance.ledger",
    "provenance.ledger.atomic",
    "provenance.ledger.paths",
    "provenance.ledger.store",
    "provenance.ledger.verified",
)
#: At most this many pairs are kept: beyond it, only the pairs of the last load survive.
MAX_PAIRS = 200_000
#: A file larger than this is not read (it cannot be one of ours).
MAX_FILE_BYTES = MAX_PAIRS * 130 + 4096
_LINE = re.compile(r"[0-9a-f]{64} [0-9a-f]{64}")


def module_source(name: str) -> Path:
    """The source file of ``provenance`` module ``name`` (a package's ``__init__.py``)."""
    import provenance

    root = Path(provenance.__file__).parent
    base = root.joinpath(*name.split(".")[1:])
    package = base / "__init__.py"
    return package if package.is_file() else base.with_suffix(".py")


@cache
def checker_version() -> str:
    """The SHA-256 over :data:`FORMAT`, the checking code's source, Python and pydantic."""
    import pydantic

    digest = hashlib.sha256(f"{FORMAT}\0{platform.python_version()}\0{pydantic.VERSION}".encode())
    for name in CHECKER_MODULES:
        data = module_source(name).read_bytes()
        digest.update(f"\0{name}\0{len(data)}\0".encode())
        digest.update(data)
    return digest.hexdigest()


class VerifiedRecords:
    """The proven ``(record id hex, raw bytes hex)`` pairs of one checker version.

    ``path`` is ``None`` for a set that is neither read nor written (no cache).
    """

    def __init__(self, path: Path | None, pairs: frozenset[str] = frozenset()) -> None:
        self.path = path
        self._known = pairs
        self._seen: set[str] = set()
        self._new = False

    @classmethod
    def open(cls, cache_dir: Path | None = None) -> VerifiedRecords:
        """The pairs cached for this checker version (none when caching is off)."""
        if os.environ.get(NO_CACHE_ENV, "") not in ("", "0"):
            return cls(None)
        root = default_cache_dir() if cache_dir is None else cache_dir
        path = root / "verified-records" / f"{checker_version()}.txt"
        return cls(path, _read_pairs(path))

    def known(self, record_hex: str, raw_hex: str) -> bool:
        """Whether this file (by record id and raw digest) was proven before; notes it seen."""
        pair = f"{record_hex} {raw_hex}"
        self._seen.add(pair)
        return pair in self._known

    def proven(self, record_hex: str, raw_hex: str) -> None:
        """Remember that this file has just been proven in full."""
        self._seen.add(f"{record_hex} {raw_hex}")
        self._new = True

    def save(self) -> None:
        """Write the pairs back if new ones were proven (best effort, atomic)."""
        if self.path is None or not self._new:
            return
        pairs = self._known | self._seen
        if len(pairs) > MAX_PAIRS:
            pairs = frozenset(self._seen)
        data = "".join(f"{pair}\n" for pair in sorted(pairs)).encode("ascii")
        try:
            atomic_write_bytes(self.path, data)
        except OSError:
            return  # read-only or full: the next load proves everything again
        self._known, self._new = frozenset(pairs), False


def _read_pairs(path: Path) -> frozenset[str]:
    """The pairs in ``path``; empty when it is absent, too large or not entirely well formed."""
    try:
        if path.stat().st_size > MAX_FILE_BYTES:
            return frozenset()
        text = path.read_bytes().decode("ascii")
    except (OSError, UnicodeDecodeError):
        return frozenset()
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    if not all(_LINE.fullmatch(line) for line in lines):
        return frozenset()
    return frozenset(lines)
