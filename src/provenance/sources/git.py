"""The one seam to git: every plumbing call and format string of ``provenance``.

``provenance`` never checks out, writes to or runs hooks in a user's repository: it
reads commits, trees and blobs. :func:`open_repo` accepts a work tree, a ``.git``
directory or a bare/mirror git directory (including mirrors without a ``config``
file, which gitpython would otherwise mistake for a work tree's ``.git``).

Only this module imports gitpython (an import-linter contract in ``pyproject.toml``
enforces it). Everything else names git objects through the aliases below and reads
history through the functions here, which return plain typed values — so a test of
extraction can stand a fake repository in for a real one where git is not the point.
"""

from __future__ import annotations

import re
from collections import OrderedDict
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import git
from git.objects.base import IndexObject
from git.objects.fun import tree_entries_from_data
from gitdb.exc import BadName, BadObject

from provenance.errors import InputError, UnsafeInputError, UsageError

__all__ = [
    "SYMLINK_MODE",
    "Commit",
    "GitObject",
    "LogEntry",
    "RawChange",
    "Repo",
    "Tree",
    "changed_paths",
    "changed_paths_between",
    "commit_or_none",
    "first_parent",
    "first_parent_log",
    "first_parent_raw",
    "is_blob",
    "iter_blobs",
    "open_repo",
    "read_blob",
    "read_object",
    "ref_commit",
    "resolve_commit",
    "tree_blobs",
    "tree_entry",
]

#: gitpython's types, named here so that no other module imports gitpython.
Repo = git.Repo
Commit = git.Commit
Tree = git.Tree
GitObject = git.objects.Object

SYMLINK_MODE = 0o120000


def open_repo(path: str | Path) -> git.Repo:
    """Open the repository at ``path`` for reading; UsageError when it is not one."""
    where = Path(path)
    try:
        repo = git.Repo(where)
    except (git.NoSuchPathError, git.InvalidGitRepositoryError):
        raise UsageError(f"{where}: not a git repository") from None
    git_dir = Path(repo.git_dir).resolve()
    if git_dir == where.resolve():
        # ``path`` is the git directory itself: make git commands use it directly.
        repo.git.update_environment(GIT_DIR=str(git_dir))
    return repo


def resolve_commit(repo: git.Repo, rev: str) -> git.Commit:
    """Resolve ``rev`` (full or abbreviated SHA, branch, tag, ``HEAD~2`` …) to a commit."""
    try:
        return repo.commit(rev)
    except (BadName, BadObject, ValueError):
        pass
    try:
        full = repo.git.rev_parse("--verify", "--quiet", f"{rev}^{{commit}}")
    except git.GitCommandError:
        raise UsageError(f"unknown revision {rev!r} in {repo.git_dir}") from None
    return repo.commit(full)


def commit_or_none(repo: git.Repo, rev: str) -> git.Commit | None:
    """The commit ``rev`` names, read now, or None when the repository does not have it."""
    try:
        found = resolve_commit(repo, rev)
        _ = found.tree  # a full SHA resolves lazily: make git read the object now
    except (UsageError, ValueError, BadName, BadObject):
        return None
    return found


def ref_commit(repo: git.Repo, ref: str) -> str | None:
    """The commit ``ref`` (``refs/pull/N/head`` …) points at, or None without the ref."""
    try:
        out = repo.git.rev_parse("--verify", "--quiet", f"{ref}^{{commit}}")
    except git.GitCommandError:
        return None
    return str(out).strip() or None


class MissingObjectError(InputError):
    """An object the repository lacks: the clone is incomplete, not the content hostile,
    so the command stops (exit 3) instead of skipping what it could not read."""

    label = "incomplete repository"


@contextmanager
def missing_objects(path: str | None = None) -> Iterator[None]:
    """GitPython's errors for an object the repository lacks (a partial or shallow clone,
    a pruned object) as an InputError naming the object and ``path``."""
    try:
        yield
    except (BadName, BadObject, ValueError) as exc:
        text = str(exc)
        if isinstance(exc, ValueError) and "could not be resolved" not in text:
            raise
        found = re.search(r"[0-9a-f]{40}", text)
        sha = found.group(0) if found else "?"
        raise MissingObjectError(
            f"git object {sha} is missing from the repository",
            path=path,
            hint="a partial or shallow clone? fetch the objects (git fetch --refetch)",
        ) from None


def blob_data(entry: GitObject) -> bytes:
    """The content of a blob entry (InputError naming it when its object is missing)."""
    with missing_objects(entry.path):
        data: bytes = entry.data_stream.read()
    return data


def is_blob(entry: GitObject) -> bool:
    return bool(entry.type == "blob")


def read_blob(commit: git.Commit, path: str) -> tuple[bytes, str] | None:
    """``(content, blob_sha)`` of ``path`` at ``commit``, or None when absent.

    Refuses symlinks (mode 120000), which could point outside the repository.
    """
    try:
        entry = commit.tree / path
    except KeyError:
        return None
    if entry.type != "blob":
        return None
    if entry.mode == SYMLINK_MODE:
        raise UnsafeInputError("refusing to follow a symlink in the repository", path=path)
    return blob_data(entry), entry.hexsha


def iter_blobs(commit: git.Commit, folder: str, *, recursive: bool = False) -> Iterator[GitObject]:
    """The blobs in ``folder`` at ``commit`` (all below it with ``recursive``); none when absent."""
    try:
        tree = commit.tree / folder if folder else commit.tree
    except KeyError:
        return
    if tree.type != "tree":
        return
    if recursive:
        yield from (item for item in tree.traverse() if isinstance(item, git.Blob))
    else:
        yield from tree.blobs


def first_parent(repo: git.Repo, sha: str) -> str | None:
    """The first parent of commit ``sha``, None for a root commit."""
    parents = repo.commit(sha).parents
    return str(parents[0].hexsha) if parents else None


def read_object(repo: git.Repo, binsha: bytes) -> bytes:
    """The raw content of the object with binary id ``binsha``."""
    with missing_objects():
        data: bytes = repo.odb.stream(binsha).read()
    return data


# --- history --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class LogEntry:
    """One commit of a log: SHA, committer timestamp and subject."""

    sha: str
    timestamp: int
    subject: str


def first_parent_log(repo: git.Repo, rev: str) -> list[LogEntry]:
    """Every commit on the first-parent line of ``rev``, newest first (one ``git log``)."""
    # NUL-separated records: a subject may hold any other separator (\r, \u2028 …).
    out = repo.git.log("--first-parent", "-z", "--format=%H%x1f%ct%x1f%s", rev)
    entries = []
    for line in (item for item in out.split("\0") if item):
        sha, stamp, subject = line.split("\x1f", 2)
        entries.append(LogEntry(sha=sha, timestamp=int(stamp), subject=subject))
    return entries


def first_parent_messages(repo: git.Repo, rev: str, grep: str) -> dict[str, str]:
    """SHA -> full message of the commits on the first-parent line of ``rev`` whose
    message matches ``grep`` (case-insensitive, fixed string), newest first."""
    out = repo.git.log(
        "--first-parent", "-z", "-i", "-F", f"--grep={grep}", "--format=%H%x1f%B", rev
    )
    found: dict[str, str] = {}
    for item in (item for item in out.split("\0") if item):
        sha, _, message = item.strip("\n").partition("\x1f")
        found[sha] = message
    return found


@dataclass(frozen=True, slots=True)
class RawChange:
    """One path a commit changed: its status (A/M/D/T), blob before and after (``0…`` absent)."""

    status: str
    path: str
    old_sha: str
    new_sha: str


def first_parent_raw(
    repo: git.Repo, rev: str, roots: Iterable[str]
) -> list[tuple[str, list[RawChange]]]:
    """(commit, its changes under ``roots``) along the first-parent line of ``rev``, newest first.

    One ``git log --raw --no-renames`` walk: a rename is a deletion and an addition.
    """
    out = repo.git.log(
        "--first-parent",
        "--raw",
        "--no-abbrev",
        "--no-renames",
        "--format=@@%H",
        rev,
        "--",
        *sorted(set(roots)),
    )
    wanted = sorted(set(roots))
    result: list[tuple[str, list[RawChange]]] = []
    if not wanted:
        return result
    for line in out.split("\n"):
        if line.startswith("@@"):
            result.append((line[2:].strip(), []))
            continue
        if not line.startswith(":") or not result:
            continue
        meta, _, path = line.partition("\t")
        fields = meta.split()
        result[-1][1].append(
            RawChange(status=fields[4][:1], path=path, old_sha=fields[2], new_sha=fields[3])
        )
    return result


def changed_paths(repo: git.Repo, sha: str) -> set[str]:
    """Paths commit ``sha`` changed relative to its first parent (every path of a root)."""
    parent = first_parent(repo, sha)
    if parent is None:
        return set(repo.git.ls_tree("-r", "--name-only", sha).split("\n"))
    out = repo.git.diff_tree("--no-commit-id", "--name-only", "-r", "--no-renames", parent, sha)
    return set(out.split("\n"))


def changed_paths_between(repo: git.Repo, base: git.Commit, head: git.Commit) -> set[str]:
    """Every path added, modified, renamed (both sides) or deleted from ``base`` to ``head``."""
    paths: set[str] = set()
    for change in base.diff(head):
        paths.update(p for p in (change.a_path, change.b_path) if p)
    return paths


# --- tree walking with cached listings ---------------------------------------------------


def _parse_tree(data: bytes) -> dict[str, tuple[bytes, int]]:
    """name -> (binary SHA, mode) of a tree object (GitPython's parser and name checks)."""
    return {name: (sha, mode) for sha, mode, name in tree_entries_from_data(data)}


class _Trees:
    """The listings of the most recently read trees, by binary object id."""

    def __init__(self, kept: int) -> None:
        self._kept = kept
        self._found: OrderedDict[bytes, dict[str, tuple[bytes, int]]] = OrderedDict()

    def get(self, repo: git.Repo, binsha: bytes) -> dict[str, tuple[bytes, int]]:
        if binsha in self._found:
            self._found.move_to_end(binsha)
            return self._found[binsha]
        value = _parse_tree(read_object(repo, binsha))
        self._found[binsha] = value
        if len(self._found) > self._kept:
            self._found.popitem(last=False)
        return value


_TREES = _Trees(kept=4096)
#: GitPython's object class per mode type (``mode >> 12``), as ``Tree._map_id_to_type``.
_TYPES: dict[int, type[IndexObject]] = {
    0o04: git.Tree,
    0o10: git.Blob,
    0o12: git.Blob,
    0o16: git.Submodule,
}


def tree_entry(repo: git.Repo, root: GitObject, path: str) -> GitObject | None:
    """``root / path`` (None when absent), walking cached tree listings one name at a time."""
    current: GitObject = root
    for name in path.split("/"):
        if current.type != "tree":
            return None
        found = _TREES.get(repo, current.binsha).get(name)
        if found is None:
            return None
        sha, mode = found
        kind = _TYPES.get(mode >> 12)
        if kind is None:
            return None
        child_path = f"{current.path}/{name}" if current.path else name
        current = kind(repo, sha, mode, child_path)
    return current


def tree_blobs(repo: git.Repo, rev: str, paths: Iterable[str]) -> dict[str, str]:
    """``path → blob sha`` of every file under ``paths`` at ``rev`` (``git ls-tree -r``)."""
    out = repo.git.ls_tree("-r", "-z", rev, "--", *sorted(set(paths)))
    blobs = {}
    for item in out.split("\0"):
        meta, _, path = item.partition("\t")
        parts = meta.split(" ")
        if len(parts) == 3 and parts[1] == "blob":
            blobs[path] = parts[2]
    return blobs


def is_ancestor(repo: git.Repo, ancestor: str, rev: str) -> bool:
    """Whether ``ancestor`` is ``rev`` or one of its ancestors."""
    try:
        repo.git.merge_base("--is-ancestor", ancestor, rev)
    except git.GitCommandError:
        return False
    return True


#: who the throwaway commit of the index is by (it is never referenced by any branch)
_STAGED_IDENTITY = {
    "GIT_AUTHOR_NAME": "provenance",
    "GIT_AUTHOR_EMAIL": "provenance@localhost",
    "GIT_COMMITTER_NAME": "provenance",
    "GIT_COMMITTER_EMAIL": "provenance@localhost",
}


def staged_commit(repo: git.Repo) -> str:
    """A commit whose tree is the index (what ``git commit`` would record now) and whose
    parent is ``HEAD``: the head of a pre-commit audit. Only objects are written (the tree
    and a commit no ref points at, as ``git stash`` does); the work tree, the index and
    every ref stay as they are. UsageError when there is no ``HEAD`` yet."""
    try:
        parent = repo.git.rev_parse("--verify", "--quiet", "HEAD^{commit}")
    except git.GitCommandError:
        raise UsageError(f"{repo.working_dir}: no HEAD commit to compare the index with") from None
    tree = repo.git.write_tree()
    with repo.git.custom_environment(**_STAGED_IDENTITY):
        sha: str = repo.git.commit_tree(tree, "-p", parent, "-m", "provenance: the index")
    return sha
