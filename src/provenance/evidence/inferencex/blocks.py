"""Master-config files and the config keys a commit changed in them.

A config key's entry is compared as text (comment and blank lines ignored)
wherever it lives, so moving it to another master file or archiving it into
``configs/deprecated`` does not count as a change of the key. Every git call goes
through :mod:`provenance.sources.git`.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from provenance.evidence.inferencex.master import (
    ACTIVE_MASTER_PATHS,
    DEPRECATED_MASTER_DIRS,
    LEGACY_MASTER_PATHS,
)
from provenance.evidence.inferencex.snapshot import ParsedObjects
from provenance.sources.git import (
    Commit,
    Repo,
    changed_paths,
    first_parent,
    is_blob,
    iter_blobs,
    tree_entry,
)

_TOP_KEY = re.compile(r"^([^\s#'\"][^:#]*|'[^']*'|\"[^\"]*\"):\s*(?:#.*)?$")


def master_files_at(commit: Commit) -> dict[str, str]:
    """Master-config path → blob SHA at ``commit``."""
    found: dict[str, str] = {}
    for path in (*ACTIVE_MASTER_PATHS, *LEGACY_MASTER_PATHS):
        entry = tree_entry(commit.repo, commit.tree, path)
        if entry is not None and is_blob(entry):
            found[path] = str(entry.hexsha)
    for folder in DEPRECATED_MASTER_DIRS:
        for blob in iter_blobs(commit, folder):
            if blob.name.endswith(".yaml"):
                found[str(blob.path)] = str(blob.hexsha)
    return found


def key_blocks(text: str) -> dict[str, list[str]]:
    """Top-level key → hash of its entry text (comment and blank lines ignored)."""
    blocks: dict[str, list[str]] = {}
    key: str | None = None
    body: list[str] = []

    def flush() -> None:
        if key is not None:
            digest = hashlib.sha256("\n".join(body).encode("utf-8")).hexdigest()
            blocks.setdefault(key, []).append(digest)

    for line in text.splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        match = _TOP_KEY.match(line) if not line[0].isspace() else None
        if match:
            flush()
            key = match.group(1).strip("'\"")
            body = []
        else:
            body.append(line.rstrip())
    flush()
    return blocks


@dataclass
class _MasterVersion:
    """Entry digests of one commit's master configs, wherever they live."""

    anywhere: dict[str, set[str]]


def _blob_blocks(data: bytes) -> dict[str, list[str]]:
    return key_blocks(data.decode("utf-8", "replace"))


#: Entry digests of master-config blobs, shared by every ``--pr`` commit of an ingest
#: (their master configs are mostly the same few hundred blobs).
_BLOCKS = ParsedObjects(_blob_blocks, kept=512)


@dataclass
class _KeyIndex:
    """Entry digests per master-config blob, read once per blob (see ``_BLOCKS``)."""

    repo: Repo
    versions: dict[tuple[tuple[str, str], ...], _MasterVersion] = field(default_factory=dict)

    def blocks(self, sha: str) -> dict[str, list[str]]:
        return _BLOCKS.get(self.repo, bytes.fromhex(sha))

    def version(self, state: Mapping[str, str]) -> _MasterVersion:
        token = tuple(sorted(state.items()))
        known = self.versions.get(token)
        if known is not None:
            return known
        version = _MasterVersion(anywhere={})
        for sha in state.values():
            for key, digests in self.blocks(sha).items():
                version.anywhere.setdefault(key, set()).update(digests)
        self.versions = {token: version}  # consecutive states share one side
        return version


def changed_by(repo: Repo, sha: str) -> tuple[set[str], set[str]]:
    """(paths, config keys) commit ``sha`` changed relative to its first parent."""
    paths = changed_paths(repo, sha)
    parent = first_parent(repo, sha)
    parent_state = master_files_at(repo.commit(parent)) if parent else {}
    state = master_files_at(repo.commit(sha))
    index = _KeyIndex(repo)
    after, before = index.version(state).anywhere, index.version(parent_state).anywhere
    keys = {k for k in after.keys() | before.keys() if after.get(k) != before.get(k)}
    return paths, keys
