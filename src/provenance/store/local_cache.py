"""What the local caches of checked files share: a code version, a bounded read and a
best-effort atomic write of one file per code version.

A cache here remembers the outcome of checking a file (proving an evidence record
file, :mod:`provenance.store.verified`; parsing a ledger entry file,
:mod:`provenance.store.entry_cache`) under a key that holds the file's name and
the SHA-256 of its exact bytes. The outcome is a pure function of that key and of
the code that checks, so each cache file is named after the code's version
(:func:`code_version`: the SHA-256 of the checking modules' source and of the
library versions) and a change to any of them starts a new, empty file.

The files live in the user's cache (:func:`provenance.store.paths.default_cache_dir`),
never in the ledger. They are local data, not evidence: one that is absent, too
large or malformed in any way counts as empty; it is rewritten atomically, only when
something new was checked, and a failed write only costs the next run the full
check. Deleting the directory is always safe. ``PROVENANCE_CACHE_DIR`` relocates it;
``PROVENANCE_NO_CACHE=1`` turns every such cache off.
"""

from __future__ import annotations

import hashlib
import os
import platform
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import ClassVar, Generic, Self, TypeVar

from provenance.errors import WriteError
from provenance.store.atomic import atomic_write_bytes
from provenance.store.paths import default_cache_dir

NO_CACHE_ENV = "PROVENANCE_NO_CACHE"

V = TypeVar("V")


def caching_off() -> bool:
    """Whether ``PROVENANCE_NO_CACHE`` turns the local caches off (any value but 0)."""
    return os.environ.get(NO_CACHE_ENV, "") not in ("", "0")


def module_source(name: str) -> Path:
    """The source file of ``provenance`` module ``name`` (a package's ``__init__.py``)."""
    import provenance

    root = Path(provenance.__file__).parent
    base = root.joinpath(*name.split(".")[1:])
    package = base / "__init__.py"
    return package if package.is_file() else base.with_suffix(".py")


def code_version(layout: str, modules: Iterable[str], *libraries: str) -> str:
    """The SHA-256 over ``layout``, Python's and pydantic's versions, ``libraries``
    (other version strings) and the source of every ``provenance`` module in ``modules``."""
    import pydantic

    head = "\0".join((layout, platform.python_version(), pydantic.VERSION, *libraries))
    digest = hashlib.sha256(head.encode())
    for name in modules:
        data = module_source(name).read_bytes()
        digest.update(f"\0{name}\0{len(data)}\0".encode())
        digest.update(data)
    return digest.hexdigest()


def file_key(name: str, raw: bytes) -> str:
    """``<name> <SHA-256 of raw, hex>``: the key of a file's outcome in a cache."""
    return f"{name} {hashlib.sha256(raw).hexdigest()}"


class LocalCache(Generic[V]):
    """Outcomes (``V``) of checking files, by key, for one code version: those read from
    the cache file and those of this run. ``path`` is ``None`` for a cache that is
    neither read nor written (caching off).

    A subclass names its directory and file suffix, its code version, how its file is
    encoded and decoded, and its bounds.
    """

    DIRECTORY: ClassVar[str]
    SUFFIX: ClassVar[str]

    def __init__(self, path: Path | None, known: Mapping[str, V] | None = None) -> None:
        self.path = path
        self._known: Mapping[str, V] = known or {}
        self._seen: dict[str, V] = {}
        self._new = False

    @classmethod
    def open(cls, cache_dir: Path | None = None) -> Self:
        """The outcomes cached for this code version (none when caching is off)."""
        if caching_off():
            return cls(None)
        root = default_cache_dir() if cache_dir is None else cache_dir
        path = root / cls.DIRECTORY / f"{cls.version()}{cls.SUFFIX}"
        data = _read_bounded(path, cls.max_bytes())
        return cls(path, None if data is None else cls.decode(data))

    @classmethod
    def version(cls) -> str:
        raise NotImplementedError

    @classmethod
    def decode(cls, data: bytes) -> dict[str, V] | None:
        """The outcomes in a cache file's bytes; ``None`` unless entirely well formed."""
        raise NotImplementedError

    @classmethod
    def encode(cls, outcomes: Mapping[str, V]) -> bytes:
        raise NotImplementedError

    @classmethod
    def max_items(cls) -> int:
        """Beyond this many outcomes, only those of the last run are kept."""
        raise NotImplementedError

    @classmethod
    def max_bytes(cls) -> int:
        """A cache file larger than this is not read (it cannot be one of ours)."""
        raise NotImplementedError

    def _lookup(self, key: str) -> V | None:
        """The outcome cached under ``key``; the key is noted as seen in this run."""
        value = self._known.get(key)
        if value is not None:
            self._seen[key] = value
        return value

    def _remember(self, key: str, value: V) -> None:
        """Remember the outcome of a file checked in full just now."""
        self._seen[key] = value
        self._new = True

    def save(self) -> None:
        """Write the outcomes back if new ones were checked (best effort, atomic)."""
        if self.path is None or not self._new:
            return
        outcomes = {**self._known, **self._seen}
        if len(outcomes) > self.max_items():
            outcomes = dict(self._seen)
        data = self.encode(dict(sorted(outcomes.items())))
        try:
            atomic_write_bytes(self.path, data)
        except (OSError, WriteError):
            return  # read-only or full: the next run checks everything again
        self._known, self._new = outcomes, False


def _read_bounded(path: Path, limit: int) -> bytes | None:
    """The bytes of ``path``; ``None`` when it is absent, unreadable or over ``limit``."""
    try:
        with path.open("rb") as handle:
            data = handle.read(limit + 1)
    except OSError:
        return None
    return data if len(data) <= limit else None
