"""Master-config entries by content: which commit made an entry's exact text.

A config key's entry is compared as text (comment and blank lines ignored)
wherever it lives, so moving it to another master file or archiving it into
``configs/deprecated`` does not count as a change. Every git call goes through
:mod:`provenance.sources.git`.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from pydantic import BaseModel, ConfigDict

from provenance.evidence.inferencex.history import History, HistoryCommit
from provenance.evidence.inferencex.master import (
    ACTIVE_MASTER_PATHS,
    DEPRECATED_MASTER_DIR,
    LEGACY_MASTER_PATHS,
)
from provenance.evidence.inferencex.snapshot import ParsedObjects
from provenance.sources.git import (
    Commit,
    Repo,
    changed_paths,
    first_parent,
    first_parent_raw,
    is_blob,
    iter_blobs,
    resolve_commit,
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
    for blob in iter_blobs(commit, DEPRECATED_MASTER_DIR):
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
    """Entry digests of one commit's master configs: everywhere, and in archived files only."""

    anywhere: dict[str, set[str]]
    archived: dict[str, set[str]]


def _is_master_path(path: str) -> bool:
    if path in ACTIVE_MASTER_PATHS or path in LEGACY_MASTER_PATHS:
        return True
    folder, _, name = path.rpartition("/")
    return folder == DEPRECATED_MASTER_DIR and name.endswith(".yaml")


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
        version = _MasterVersion(anywhere={}, archived={})
        for path, sha in state.items():
            archived = path.startswith(DEPRECATED_MASTER_DIR + "/")
            for key, digests in self.blocks(sha).items():
                version.anywhere.setdefault(key, set()).update(digests)
                if archived:
                    version.archived.setdefault(key, set()).update(digests)
        self.versions = {token: version}  # consecutive states share one side
        return version


#: (commit, master files -> blob at it, ... at its first parent)
MasterState = tuple[str, dict[str, str], dict[str, str]]


def master_states(repo: Repo, rev: str) -> list[MasterState]:
    """(commit, master files → blob at it, … at its first parent), newest first.

    One ``git log --raw`` walk: the state at ``rev`` is read from its tree, each
    older state by undoing the next commit's changes — no tree is read again.
    """
    state = master_files_at(resolve_commit(repo, rev))
    states: list[MasterState] = []
    for commit, changes in first_parent_raw(repo, rev, master_roots()):
        newer = dict(state)
        for change in changes:
            if not _is_master_path(change.path):
                continue
            if change.status == "A":
                state.pop(change.path, None)
            else:
                state[change.path] = change.old_sha
        states.append((commit, newer, dict(state)))
    return states


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


def master_roots() -> list[str]:
    return [*ACTIVE_MASTER_PATHS, *LEGACY_MASTER_PATHS, DEPRECATED_MASTER_DIR]


class BlockOrigin(BaseModel):
    """Where a config entry's text came from along the first-parent history.

    ``origin``: the newest commit whose parent does not have this exact entry
    text anywhere (the change that made it). ``archived_since``: for an entry
    in ``configs/deprecated`` at the ingested revision, the commit that moved
    it there.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    origin: HistoryCommit | None = None
    archived_since: HistoryCommit | None = None


def entry_digest(text: str, key: str) -> str | None:
    """The digest :func:`block_origins` tracks for ``key``'s entry in one master file's text."""
    digests = key_blocks(text).get(key)
    return digests[0] if digests else None


def block_origins(
    repo: Repo,
    rev: str,
    history: History,
    wanted: Iterable[tuple[str, str, bool]],
    *,
    states: list[MasterState] | None = None,
) -> dict[tuple[str, str], BlockOrigin]:
    """For each (key, entry digest, archived?) at ``rev``: its :class:`BlockOrigin`.

    One walk over the first-parent commits that touched master configs,
    newest first, stopping when every entry's origin is found. Archiving an
    entry (moving its text to ``configs/deprecated``) does not change it.
    ``states``: the master-config states of a newer revision on the same line
    (:meth:`Lineage.master_states`); its commits not in ``history`` are skipped.
    """
    pending = {(key, digest): archived for key, digest, archived in wanted}
    result: dict[tuple[str, str], BlockOrigin] = {k: BlockOrigin() for k in pending}
    if not pending:
        return result
    index = _KeyIndex(repo)
    if states is None:
        states = master_states(repo, rev)
    for sha, newer_state, older_state in states:
        commit = history.by_sha.get(sha)
        if commit is None:
            continue
        newer, older = index.version(newer_state), index.version(older_state)
        for (key, digest), archived in list(pending.items()):
            current = result[(key, digest)]
            if (
                archived
                and current.archived_since is None
                and digest in newer.archived.get(key, set())
                and digest not in older.archived.get(key, set())
            ):
                current = current.model_copy(update={"archived_since": commit})
            if digest not in newer.anywhere.get(key, set()):
                del pending[(key, digest)]  # not in the newest version: nothing to trace
            elif digest not in older.anywhere.get(key, set()):
                current = current.model_copy(update={"origin": commit})
                del pending[(key, digest)]
            result[(key, digest)] = current
        if not pending:
            break
    return result
