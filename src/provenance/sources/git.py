"""Read-only access to git repositories through gitpython.

``provenance`` never checks out, writes to or runs hooks in a user's repository: it
reads commits, trees and blobs. :func:`open_repo` accepts a work tree, a ``.git``
directory or a bare/mirror git directory (including mirrors without a ``config``
file, which gitpython would otherwise mistake for a work tree's ``.git``).
"""

from __future__ import annotations

from pathlib import Path

import git
from gitdb.exc import BadName, BadObject

from provenance.errors import UnsafeInputError, UsageError


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
    if entry.mode == 0o120000:
        raise UnsafeInputError("refusing to follow a symlink in the repository", path=path)
    return entry.data_stream.read(), entry.hexsha
