"""A git repository holding a copy of the embedded recipes root, for the PR-audit tests."""

from __future__ import annotations

import shutil
from pathlib import Path

import git
import yaml

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


def work_tree(repo: git.Repo) -> Path:
    """The work tree of a (non-bare) repository."""
    assert repo.working_tree_dir is not None
    return Path(repo.working_tree_dir)


def commit_all(repo: git.Repo, message: str) -> str:
    """Commit every change of the work tree; the new commit's SHA."""
    repo.git.add(A=True)
    repo.index.commit(message)
    return repo.head.commit.hexsha


def pr_repo(tmp_path: Path, edit_base: object, edit_head: object) -> tuple[Path, str, str]:
    """A recipes repository with two commits: MiniMax-M3 edited by ``edit_base``, then by
    ``edit_head`` (each a function of the recipe's data); (work tree, base SHA, head SHA)."""
    repo = init_recipes_repo(tmp_path)
    work = work_tree(repo)
    shas = []
    for edit in (edit_base, edit_head):
        data = yaml.safe_load((EMBEDDED / MODEL).read_text())
        assert callable(edit)
        edit(data)
        (work / MODEL).write_text(yaml.safe_dump(data, sort_keys=False))
        shas.append(commit_all(repo, "edit"))
    return work, shas[0], shas[1]


def keep(data: dict[str, object]) -> None:
    """The recipe as it is."""
    return None


def without_mxfp8_args(data: dict[str, object]) -> None:
    """The recipe without the mxfp8 variant's extra arguments."""
    variants = data["variants"]
    assert isinstance(variants, dict)
    variants["mxfp8"].pop("extra_args")
