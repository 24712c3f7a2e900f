"""Read a recipes repository at two revisions straight from git.

No checkout of the user's tree: blobs are read with gitpython and the files the
recipe engine needs (``taxonomy.yaml``, ``strategies/``, ``kv_store/``, the repository's
``provenance-declarations.yaml``, its policy files ``provenance.toml`` and
``pyproject.toml``, and the model YAMLs) are written into a private temporary directory
per revision.

The files that *judge* (policy, aliases, context rules, declarations: :data:`JUDGING_FILES`)
are a trust boundary: a pull request must not relax its own gate. Both sides of a PR
audit are judged by the base revision's (``materialise(..., judging=base)``); the
head's changes to them are listed (:func:`judging_changes`) for a maintainer's review.
"""

from __future__ import annotations

import tomllib
from collections.abc import Iterable
from pathlib import Path, PurePosixPath

from pydantic import BaseModel, ConfigDict

from provenance.audit.declarations import REPO_DECLARATIONS_FILE
from provenance.errors import UnsafeInputError
from provenance.normalise.policy import POLICY_FILES
from provenance.sources.git import (
    Commit,
    Repo,
    changed_paths_between,
    iter_blobs,
    read_blob,
    resolve_commit,
)

SHARED_PREFIXES = ("taxonomy.yaml", "strategies/", "kv_store/")
MODELS_PREFIX = "models/"
#: The files that judge a PR: read from the base revision, never from the PR's head.
JUDGING_FILES = (REPO_DECLARATIONS_FILE, *POLICY_FILES)


class ChangedRecipes(BaseModel):
    """Which recipes a revision range touches."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    base: str
    head: str
    shared_changed: bool
    #: ``models/<org>/<name>.yaml`` paths changed (added, modified, renamed or deleted).
    models: tuple[str, ...]


def _is_model(path: str) -> bool:
    return path.startswith(MODELS_PREFIX) and path.endswith((".yaml", ".yml"))


def changed_recipes(repo: Repo, base: str, head: str) -> ChangedRecipes:
    base_commit = resolve_commit(repo, base)
    head_commit = resolve_commit(repo, head)
    shared = False
    models: set[str] = set()
    for path in changed_paths_between(repo, base_commit, head_commit):
        # the judging files come from the base on both sides: editing them changes no
        # verdict of this PR (see :func:`judging_changes`)
        if path.startswith(SHARED_PREFIXES):
            shared = True
        elif _is_model(path):
            models.add(path)
    return ChangedRecipes(
        base=base_commit.hexsha,
        head=head_commit.hexsha,
        shared_changed=shared,
        models=tuple(sorted(models)),
    )


def model_paths(commit: Commit) -> list[str]:
    """Every recipe YAML under ``models/`` at ``commit``."""
    paths = (str(item.path) for item in iter_blobs(commit, "models", recursive=True))
    return sorted(path for path in paths if _is_model(path))


def _safe_relative(path: str) -> PurePosixPath:
    rel = PurePosixPath(path)
    if rel.is_absolute() or ".." in rel.parts:
        raise UnsafeInputError("path escapes the repository", path=path)
    return rel


def materialise(
    commit: Commit, models: Iterable[str], dest: Path, *, judging: Commit | None = None
) -> list[str]:
    """Write the recipes root files and the given model YAMLs at ``commit`` into ``dest``;
    the :data:`JUDGING_FILES` at ``judging`` (default: ``commit``).

    Returns the model paths that exist at ``commit`` (a model deleted by the PR is
    absent on the head side). Symlinks are refused: they could point outside the
    repository.
    """
    wanted = []
    for prefix in ("strategies", "kv_store"):
        blobs = iter_blobs(commit, prefix)
        wanted += [str(b.path) for b in blobs if str(b.path).endswith((".yaml", ".yml"))]
    present: list[str] = []
    judge = judging if judging is not None else commit
    for path in ["taxonomy.yaml", *JUDGING_FILES, *wanted, *models]:
        found = read_blob(judge if path in JUDGING_FILES else commit, path)
        if found is None:
            continue
        target = dest.joinpath(*_safe_relative(path).parts)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(found[0])
        if _is_model(path):
            present.append(path)
    return present


class JudgingChange(BaseModel):
    """A judging file (:data:`JUDGING_FILES`) the PR changes: not applied to this PR's
    gate (its base's is), shown for a maintainer's review."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    path: str
    #: ``added``, ``modified`` or ``deleted``
    change: str


def judging_changes(base: Commit, head: Commit) -> tuple[JudgingChange, ...]:
    """The judging files whose content differs between ``base`` and ``head``. A
    ``pyproject.toml`` counts only when its ``[tool.provenance]`` table changes (any
    other edit of it judges nothing)."""
    out = []
    for path in JUDGING_FILES:
        before, after = _blob_or_none(base, path), _blob_or_none(head, path)
        if before == after:
            continue
        if path == "pyproject.toml" and _provenance_table(before) == _provenance_table(after):
            continue
        change = "added" if before is None else "deleted" if after is None else "modified"
        out.append(JudgingChange(path=path, change=change))
    return tuple(out)


def _blob_or_none(commit: Commit, path: str) -> bytes | None:
    try:
        found = read_blob(commit, path)
    except UnsafeInputError:
        return b"<symlink>"  # never followed; a change all the same
    return found[0] if found is not None else None


def _provenance_table(content: bytes | None) -> object:
    """``[tool.provenance]`` of a ``pyproject.toml`` (unreadable: the bytes themselves)."""
    if content is None:
        return None
    try:
        data = tomllib.loads(content.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError):
        return content
    tool = data.get("tool")
    return tool.get("provenance") if isinstance(tool, dict) else None
