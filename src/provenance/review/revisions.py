"""Read a recipes repository at two revisions straight from git.

No checkout of the user's tree: blobs are read with gitpython and the files the
recipe engine needs (``taxonomy.yaml``, ``strategies/``, ``kv_store/``, the repository's
``provenance-declarations.yaml``, its policy files ``provenance.toml`` and
``pyproject.toml``, and the model YAMLs) are written into a private temporary directory
per revision.
"""

from __future__ import annotations

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
        # the policy decides every verdict: a PR editing it re-audits every recipe
        if path.startswith(SHARED_PREFIXES) or path in (REPO_DECLARATIONS_FILE, *POLICY_FILES):
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


def materialise(commit: Commit, models: Iterable[str], dest: Path) -> list[str]:
    """Write the recipes root files and the given model YAMLs at ``commit`` into ``dest``.

    Returns the model paths that exist at ``commit`` (a model deleted by the PR is
    absent on the head side). Symlinks are refused: they could point outside the
    repository.
    """
    wanted = []
    for prefix in ("strategies", "kv_store"):
        blobs = iter_blobs(commit, prefix)
        wanted += [str(b.path) for b in blobs if str(b.path).endswith((".yaml", ".yml"))]
    present: list[str] = []
    for path in ["taxonomy.yaml", REPO_DECLARATIONS_FILE, *POLICY_FILES, *wanted, *models]:
        found = read_blob(commit, path)
        if found is None:
            continue
        target = dest.joinpath(*_safe_relative(path).parts)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(found[0])
        if _is_model(path):
            present.append(path)
    return present
