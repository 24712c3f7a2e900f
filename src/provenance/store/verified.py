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

The proven pairs live in the user's cache, not in the ledger, one file per checker
version (:func:`checker_version`: the SHA-256 of the checking code's source and
of the Python and pydantic versions), ``verified-records/<version>.txt``, one
``<record hex> <raw hex>`` line per pair. A clean machine (a CI runner) has no
such file and proves everything. How the file is read, bounded and written, and
``PROVENANCE_NO_CACHE``: :mod:`provenance.store.local_cache`.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache

from provenance.store.local_cache import LocalCache, code_version

#: Bumped when the layout of the file changes (also part of the checker version).
FORMAT = "provenance.verified-records/v1"
#: The modules whose code decides whether a record file is good: the store's checks,
#: the record model and every ``provenance`` module they import (a test keeps this
#: equal to the static import closure of ``provenance.store.evidence``).
CHECKER_MODULES = (
    "provenance",
    "provenance.errors",
    "provenance.escaping",
    "provenance.model",
    "provenance.model.flags",
    "provenance.model.ledger",
    "provenance.model.record",
    "provenance.store",
    "provenance.store.atomic",
    "provenance.store.embedded",
    "provenance.store.evidence",
    "provenance.store.local_cache",
    "provenance.store.paths",
    "provenance.store.verified",
)
#: At most this many pairs are kept: beyond it, only the pairs of the last load survive
#: (every audit reads the whole file: 50,000 pairs are 6.5 MB, about 10 ms).
MAX_PAIRS = 50_000
#: A file larger than this is not read (it cannot be one of ours).
MAX_FILE_BYTES = MAX_PAIRS * 130 + 4096
#: One line of the file: ``<record hex> <raw hex>\n``.
_LINE_BYTES = 64 + 1 + 64 + 1
_HEX = b"0123456789abcdef"


@cache
def checker_version() -> str:
    """The SHA-256 over :data:`FORMAT`, the checking code's source, Python and pydantic."""
    return code_version(FORMAT, CHECKER_MODULES)


class VerifiedRecords(LocalCache[bool]):
    """The proven ``(record id hex, raw bytes hex)`` pairs of one checker version.

    ``path`` is ``None`` for a set that is neither read nor written (no cache).
    """

    DIRECTORY = "verified-records"
    SUFFIX = ".txt"

    @classmethod
    def version(cls) -> str:
        return checker_version()

    @classmethod
    def decode(cls, data: bytes) -> dict[str, bool] | None:
        # every line is 64 hex digits, a space, 64 hex digits and a newline: checked
        # with a few passes in C over the whole file (a regex per line took 1 µs a line)
        count, rest = divmod(len(data), _LINE_BYTES)
        if (
            rest
            or data[64::_LINE_BYTES] != b" " * count
            or data[_LINE_BYTES - 1 :: _LINE_BYTES] != b"\n" * count
            or data.translate(None, _HEX) != b" \n" * count
        ):
            return None
        lines = data.decode("ascii").split("\n")
        lines.pop()  # the text after the last newline: empty
        return dict.fromkeys(lines, True)

    @classmethod
    def encode(cls, outcomes: Mapping[str, bool]) -> bytes:
        return "".join(f"{pair}\n" for pair in outcomes).encode("ascii")

    @classmethod
    def max_items(cls) -> int:
        return MAX_PAIRS

    @classmethod
    def max_bytes(cls) -> int:
        return MAX_FILE_BYTES

    def known(self, record_hex: str, raw_hex: str) -> bool:
        """Whether this file (by record id and raw digest) was proven before; notes it seen."""
        return self._lookup(f"{record_hex} {raw_hex}") is not None

    def proven(self, record_hex: str, raw_hex: str) -> None:
        """Remember that this file has just been proven in full."""
        self._remember(f"{record_hex} {raw_hex}", True)
