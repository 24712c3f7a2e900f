"""A git repository holding a copy of the embedded recipes root, for the PR-audit tests."""

from __future__ import annotations

import shutil
from pathlib import Path

import git

REPO_ROOT = Path(__file__).resolve().parents[2]
EMBEDDED = REPO_ROOT / "recipes"
MODEL = "models/MiniMaxAI/MiniMax-M3.yaml"


def init_recipes_repo(tmp_path: Path) -> git.Repo:
    """A new repository under ``tmp_path`` whose work tree is the embedded recipes root."""
    work = tmp_path / "recipes-repo"
    shutil.copytree(EMBEDDED, work)
    repo = git.Repo.init(work)
    repo.git.config("user.email", "t@example.invalid")
    repo.git.config("user.name", "t")
    return repo


def commit_all(repo: git.Repo, message: str) -> str:
    """Commit every change of the work tree; the new commit's SHA."""
    repo.git.add(A=True)
    repo.index.commit(message)
    return repo.head.commit.hexsha
