"""Read a recipes repository at two revisions straight from git.

No checkout of the user's tree: blobs are read with gitpython and the files the
recipe engine needs (``taxonomy.yaml``, ``strategies/``, ``kv_store/`` and the
model YAMLs) are written into a private temporary directory per revision.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path, PurePosixPath

import git
from pydantic import BaseModel, ConfigDict

from provenance.errors import UnsafeInputError
from provenance.sources.git import resolve_commit

SHARED_PREFIXES = ("taxonomy.yaml", "strategies/", "kv_store/")
MODELS_PREFIX = "models/"


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


def changed_recipes(repo: git.Repo, base: str, head: str) -> ChangedRecipes:
    base_commit = resolve_commit(repo, base)
    head_commit = resolve_commit(repo, head)
    shared = False
    models: set[str] = set()
    for change in base_commit.diff(head_commit):
        for path in {change.a_path, change.b_path}:
            if not path:
                continue
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


def model_paths(commit: git.Commit) -> list[str]:
    """Every recipe YAML under ``models/`` at ``commit``."""
    try:
        tree = commit.tree / "models"
    except KeyError:
        return []
    paths = (str(item.path) for item in tree.traverse() if isinstance(item, git.Blob))
    return sorted(path for path in paths if _is_model(path))


def _safe_relative(path: str) -> PurePosixPath:
    rel = PurePosixPath(path)
    if rel.is_absolute() or ".." in rel.parts:
        raise UnsafeInputError("path escapes the repository", path=path)
    return rel


def materialise(commit: git.Commit, models: Iterable[str], dest: Path) -> list[str]:
    """Write the recipes root files and the given model YAMLs at ``commit`` into ``dest``.

    Returns the model paths that exist at ``commit`` (a model deleted by the PR is
    absent on the head side). Symlinks are refused: they could point outside the
    repository.
    """
    wanted = []
    for prefix in ("strategies", "kv_store"):
        try:
            folder = commit.tree / prefix
        except KeyError:
            continue
        wanted += [str(b.path) for b in folder.blobs if str(b.path).endswith((".yaml", ".yml"))]
    present: list[str] = []
    for path in ["taxonomy.yaml", *wanted, *models]:
        try:
            blob = commit.tree / path
        except KeyError:
            continue
        if blob.type != "blob":
            continue
        if blob.mode == 0o120000:
            raise UnsafeInputError("refusing to follow a symlink in the repository", path=path)
        target = dest.joinpath(*_safe_relative(path).parts)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(blob.data_stream.read())
        if _is_model(path):
            present.append(path)
    return present
