"""``.pre-commit-hooks.yaml`` as a user gets it: ``pre-commit try-repo`` clones the project
at a commit, builds the hook's environment by pip-installing it non-editable (with the
host's pip configuration), and runs the hook on a recipes repository's staged change."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from recipes_history import HISTORY, MODEL, PR682_BASE, PR682_HEAD
from shipped_support import base_env, copy_checkout, make_venv, recipes_repo, run

pytestmark = [pytest.mark.shipped, pytest.mark.slow, pytest.mark.corpus]

_GIT_ID = {
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@example.invalid",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@example.invalid",
}


@pytest.fixture(scope="module")
def precommit_bin(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv with the ``pre-commit`` package (the test extra) and nothing else."""
    bin_dir = make_venv(tmp_path_factory.mktemp("pre-commit-venv") / "venv")
    done = run(
        [str(bin_dir / "python"), "-m", "pip", "install", "--quiet", "pre-commit>=3"],
        cwd=bin_dir,
        env=base_env(bin_dir),
    )
    assert done.returncode == 0, done.stderr[-4000:]
    return bin_dir


@pytest.fixture(scope="module")
def hook_repo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """The project's files as a git repository with the hook committed; path and rev."""
    checkout = copy_checkout(tmp_path_factory.mktemp("hook-repo") / "provenance")
    env = {**base_env(), **_GIT_ID}
    git = ["git", "-c", "init.defaultBranch=main"]
    subprocess.run([*git, "init", "-q"], cwd=checkout, env=env, check=True)
    subprocess.run([*git, "add", "-A"], cwd=checkout, env=env, check=True)
    subprocess.run([*git, "commit", "-q", "-m", "provenance"], cwd=checkout, env=env, check=True)
    rev = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=checkout, check=True, capture_output=True, text=True
    ).stdout.strip()
    return checkout, rev


@pytest.fixture
def recipes(tmp_path: Path) -> Path:
    """A recipes repository whose HEAD is the base of recipes #682 (#672)."""
    if not HISTORY.is_dir():
        pytest.skip("needs ../shared/corpus/recipes-history")
    text = (HISTORY / PR682_BASE).read_text(encoding="utf-8")
    repo, _ = recipes_repo(tmp_path / "recipes", [("MiniMax-M3 as of recipes #672", text)])
    return repo


def _try_repo(
    precommit_bin: Path, hook: tuple[Path, str], recipes: Path, home: Path
) -> subprocess.CompletedProcess[str]:
    path, rev = hook
    env = {**base_env(precommit_bin), "PRE_COMMIT_HOME": str(home), **_GIT_ID}
    return run(
        ["pre-commit", "try-repo", str(path), "provenance-audit", "--ref", rev, "--color", "never"],
        cwd=recipes,
        env=env,
        timeout=1200,
    )


def _stage(recipes: Path, text: str) -> None:
    (recipes / MODEL).write_text(text, encoding="utf-8")
    subprocess.run(["git", "add", MODEL], cwd=recipes, check=True)


def test_the_hook_passes_a_comment_only_change_and_fails_a_regression(
    precommit_bin: Path,
    hook_repo: tuple[Path, str],
    recipes: Path,
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    home = tmp_path_factory.mktemp("pre-commit-home")
    base = (recipes / MODEL).read_text(encoding="utf-8")
    _stage(recipes, base.replace("\nvariants:\n", "\n# reviewed by the hook test\nvariants:\n", 1))
    done = _try_repo(precommit_bin, hook_repo, recipes, home)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    assert "provenance audit (staged change)" in done.stdout
    assert "Passed" in done.stdout

    # the work tree is not what the hook reads: only the staged blob counts
    _stage(recipes, (HISTORY / PR682_HEAD).read_text(encoding="utf-8"))
    (recipes / MODEL).write_text(base, encoding="utf-8")
    done = _try_repo(precommit_bin, hook_repo, recipes, home)
    assert done.returncode == 1, done.stdout[-4000:] + done.stderr[-4000:]
    assert "Failed" in done.stdout
    assert "- exit code: 1" in done.stdout
    assert "\ngate: FAIL" in done.stdout
    # the blocking group of the FP8 indexer cells, as the one-screen text names it
    assert "BLOCKING" in done.stdout
    assert "attention_config.indexer_kv_dtype=fp8" in done.stdout
