"""Read-only view of an InferenceX repository at one commit.

Everything the extractor reads goes through :class:`Snapshot`: blobs come from
``repo.commit(rev).tree / path`` (nothing is checked out, nothing is written,
bare and config-less mirror directories work) and every blob read is
remembered with its git blob SHA so records can cite it.

Paths are repository-relative POSIX paths. :meth:`Snapshot.safe_path` refuses
paths that could escape the repository: absolute paths, ``..`` components and
any component that is a symlink in the git tree (mode ``120000``).
"""

from __future__ import annotations

import posixpath
from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Generic, TypeVar, cast

from provenance.errors import InputError, UnsafeInputError
from provenance.sources.git import (
    SYMLINK_MODE,
    Commit,
    GitObject,
    Repo,
    blob_data,
    open_repo,
    read_object,
    resolve_commit,
    tree_entry,
)

__all__ = [
    "SYMLINK_MODE",
    "ParsedObjects",
    "Snapshot",
    "check_relative_path",
    "open_repo",
    "resolve_commit",
    "tree_entry",
]

T = TypeVar("T")


class ParsedObjects(Generic[T]):
    """The parsed form of the most recently read git objects, by binary object id.

    An object's content is its id's in any repository, so the commits of one
    ingest share every object they have in common: each is read and parsed once
    while it is among the ``kept`` most recently used.
    """

    def __init__(self, parse: Callable[[bytes], T], kept: int) -> None:
        self._parse = parse
        self._kept = kept
        self._found: OrderedDict[bytes, T] = OrderedDict()

    def get(self, repo: Repo, binsha: bytes) -> T:
        if binsha in self._found:
            self._found.move_to_end(binsha)
            return self._found[binsha]
        value = self._parse(read_object(repo, binsha))
        self._found[binsha] = value
        if len(self._found) > self._kept:
            self._found.popitem(last=False)
        return value


def check_relative_path(path: str, *, origin: str | None = None) -> str:
    """Normalise ``path``; UnsafeInputError when it is absolute or climbs out with ``..``."""
    where = origin or path
    if not path or path.startswith("/") or "\\" in path or "\x00" in path:
        raise UnsafeInputError(f"path {path!r} is not a relative repository path", path=where)
    parts = path.split("/")
    if any(part == ".." for part in parts):
        raise UnsafeInputError(f"path {path!r} escapes the repository ('..')", path=where)
    normalised = posixpath.normpath(path)
    if normalised.startswith("../") or normalised in {".", ".."}:
        raise UnsafeInputError(f"path {path!r} escapes the repository", path=where)
    return normalised


@dataclass
class Snapshot:
    """The tree of one commit, with a record of every blob read."""

    repo: Repo
    commit: Commit
    read_blobs: dict[str, str] = field(default_factory=dict)
    _cache: dict[str, tuple[bytes, str] | None] = field(default_factory=dict)
    _entries: dict[str, GitObject | None] = field(default_factory=dict)
    _memo: dict[Hashable, object] = field(default_factory=dict)

    @property
    def sha(self) -> str:
        return str(self.commit.hexsha)

    def _entry(self, path: str) -> GitObject | None:
        if path in self._entries:
            return self._entries[path]
        parent, _, name = path.rpartition("/")
        base = self._entry(parent) if parent else self.commit.tree
        entry = None if base is None else tree_entry(self.repo, base, name)
        self._entries[path] = entry
        return entry

    def memo(self, key: Hashable, build: Callable[[], T]) -> T:
        """A value derived from this commit's tree, built once per snapshot."""
        if key not in self._memo:
            self._memo[key] = build()
        return cast("T", self._memo[key])

    def safe_path(self, path: str, *, origin: str | None = None) -> str:
        """``path`` checked for escape: relative, no ``..``, no symlink component."""
        normalised = check_relative_path(path, origin=origin)
        parts = normalised.split("/")
        for depth in range(1, len(parts) + 1):
            prefix = "/".join(parts[:depth])
            entry = self._entry(prefix)
            if entry is None:
                break
            if entry.mode == SYMLINK_MODE:
                raise UnsafeInputError(
                    f"{prefix!r} is a symlink in the repository; refusing to follow it",
                    path=origin or path,
                )
        return normalised

    def is_file(self, path: str) -> bool:
        entry = self._entry(path)
        return entry is not None and entry.type == "blob" and entry.mode != SYMLINK_MODE

    def blob_sha(self, path: str) -> str | None:
        entry = self._entry(path)
        if entry is None or entry.type != "blob":
            return None
        return str(entry.hexsha)

    def list_files(self, directory: str, suffix: str = "") -> list[str]:
        """Files directly in ``directory`` whose names end with ``suffix``.

        UnsafeInputError when the directory or a matching entry is a symlink.
        """
        entry = self._entry(self.safe_path(directory))
        if entry is None or entry.type != "tree":
            return []
        found = []
        for child in entry:
            if not child.name.endswith(suffix):
                continue
            path = f"{directory}/{child.name}"
            if child.mode == SYMLINK_MODE:
                raise UnsafeInputError(
                    f"{path!r} is a symlink in the repository; refusing to follow it", path=path
                )
            if child.type == "blob":
                found.append(path)
        return sorted(found)

    def read(self, path: str, *, origin: str | None = None) -> bytes | None:
        """Bytes of ``path`` at this commit (None when absent); records the blob SHA."""
        safe = self.safe_path(path, origin=origin)
        if safe in self._cache:
            cached = self._cache[safe]
            if cached is not None:
                self.read_blobs[safe] = cached[1]
            return None if cached is None else cached[0]
        entry = self._entry(safe)
        if entry is None:
            self._cache[safe] = None
            return None
        if entry.type != "blob":
            raise InputError("expected a file, found a directory", path=safe)
        data = blob_data(entry)
        self._cache[safe] = (data, str(entry.hexsha))
        self.read_blobs[safe] = str(entry.hexsha)
        return bytes(data)
