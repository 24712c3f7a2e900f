"""Ledger entry files already parsed, remembered by the digest of their exact bytes.

Parsing one ledger entry file (``Ledger.load_entry_file``) means composing and
constructing its YAML under ``provenance.safe_yaml``'s limits, checking its schema,
validating the ``LedgerEntry`` and checking that the file name matches the entry's
PR: about 0.6 ms a file, nearly all of it YAML. The entry is a pure function of
three things: the file's name, its exact bytes and the loading code. So for a file
whose name and raw SHA-256 were parsed before by the same code, the audit hashes
the bytes it read and validates the entry from the JSON remembered for them
(``LedgerEntry.model_validate_json``, ~0.02 ms). A file changed by even one byte,
or renamed, has another key and is parsed in full (its errors name file:line), like
a file never seen.

The entries live in the user's cache, one file per loader version
(:func:`loader_version`: the SHA-256 of the loading code's source and of the Python,
pydantic and PyYAML versions), ``ledger-entries/<version>.json``: ``{"format": …,
"entries": {"<file name> <raw hex>": "<entry JSON>"}}``. An entry is remembered only
when its JSON validates back to an equal entry (not, say, one holding a lone
surrogate or a NaN). How the file is read, bounded and written, and
``PROVENANCE_NO_CACHE``: :mod:`provenance.store.local_cache`. Only the audit reads
the ledger through it; ``provenance verify`` and the writers always parse in full.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from functools import cache

from pydantic import ValidationError
from pydantic_core import PydanticSerializationError

from provenance.model.ledger import LedgerEntry
from provenance.store.local_cache import LocalCache, code_version, file_key

#: Bumped when the layout of the file changes (also part of the loader version).
FORMAT = "provenance.ledger-entries/v1"
#: The modules whose code decides what entry a file holds: the ledger directory, the
#: YAML loader, the ledger model and every ``provenance`` module they import (a test
#: keeps this equal to the static import closure of ``provenance.store.ledger``).
LOADER_MODULES = (
    "provenance",
    "provenance.errors",
    "provenance.escaping",
    "provenance.model",
    "provenance.model.ledger",
    "provenance.model.reasons",
    "provenance.safe_yaml",
    "provenance.store",
    "provenance.store.atomic",
    "provenance.store.embedded",
    "provenance.store.entry_cache",
    "provenance.store.ledger",
    "provenance.store.local_cache",
    "provenance.store.paths",
)
#: At most this many entries are kept: beyond it, only the entries of the last load survive.
MAX_ENTRIES = 10_000
#: A file larger than this is not read (it cannot be one of ours).
MAX_FILE_BYTES = 64 * 1024 * 1024
_KEY = re.compile(r"[^/\x00]+ [0-9a-f]{64}")


@cache
def loader_version() -> str:
    """The SHA-256 over :data:`FORMAT`, the loading code's source, Python, pydantic, PyYAML."""
    import yaml

    from provenance.safe_yaml import HAVE_LIBYAML

    return code_version(
        FORMAT, LOADER_MODULES, f"pyyaml {yaml.__version__}", f"libyaml {HAVE_LIBYAML}"
    )


class ParsedEntries(LocalCache[str]):
    """The entries (as JSON) of the ledger files parsed before, by file name and raw digest.

    ``path`` is ``None`` for a cache that is neither read nor written (caching off).
    """

    DIRECTORY = "ledger-entries"
    SUFFIX = ".json"

    @classmethod
    def version(cls) -> str:
        return loader_version()

    @classmethod
    def decode(cls, data: bytes) -> dict[str, str] | None:
        try:
            document = json.loads(data.decode("ascii"))  # as written: nothing else is ours
        except (ValueError, RecursionError):
            return None
        if not isinstance(document, dict) or document.keys() != {"format", "entries"}:
            return None
        entries = document["entries"]
        if document["format"] != FORMAT or not isinstance(entries, dict):
            return None
        if not all(_KEY.fullmatch(k) and isinstance(v, str) for k, v in entries.items()):
            return None
        return entries

    @classmethod
    def encode(cls, outcomes: Mapping[str, str]) -> bytes:
        document = {"format": FORMAT, "entries": dict(outcomes)}
        return json.dumps(document, ensure_ascii=True, indent=0).encode("ascii")

    @classmethod
    def max_items(cls) -> int:
        return MAX_ENTRIES

    @classmethod
    def max_bytes(cls) -> int:
        return MAX_FILE_BYTES

    def entry(self, name: str, raw: bytes) -> LedgerEntry | None:
        """The entry parsed before from file ``name`` holding exactly ``raw``, if any."""
        text = self._lookup(file_key(name, raw))
        if text is None:
            return None
        try:
            return LedgerEntry.model_validate_json(text)
        except ValidationError:
            return None  # not ours after all: the full parse decides

    def parsed(self, name: str, raw: bytes, entry: LedgerEntry) -> None:
        """Remember the entry just parsed in full from file ``name`` holding ``raw``."""
        try:
            text = entry.model_dump_json(by_alias=True)
            same = LedgerEntry.model_validate_json(text) == entry
        except (PydanticSerializationError, ValidationError):
            same = False  # e.g. a lone surrogate, an infinity
        if same:
            self._remember(file_key(name, raw), text)
