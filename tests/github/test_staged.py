"""``provenance audit --staged`` (the pre-commit hook): base HEAD, head the index."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner
from recipes_history import MODEL, REPO_ROOT
from shipped_support import recipes_repo

from provenance.cli.main import cli

pytestmark = pytest.mark.slow


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=repo, check=True, capture_output=True, text=True
    ).stdout.strip()


def test_a_staged_comment_passes_and_the_work_tree_is_never_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    text = (REPO_ROOT / "recipes" / MODEL).read_text()
    repo, _ = recipes_repo(tmp_path / "recipes", [("recipe", text)])
    (repo / MODEL).write_text(text + "# a comment changes no combination\n")
    _git(repo, "add", MODEL)
    staged_before = _git(repo, "ls-files", "--stage")
    head_before = _git(repo, "rev-parse", "HEAD")
    (repo / MODEL).write_text("{ not: yaml: at all\n")  # unstaged: must not be read
    monkeypatch.chdir(repo / "models")
    result = CliRunner().invoke(cli, ["audit", "--staged"])
    assert result.exit_code == 0, result.output
    assert "gate: PASS" in result.stdout
    assert "(InferenceX " in result.stdout  # the packaged/embedded ledger, named
    assert _git(repo, "ls-files", "--stage") == staged_before  # (write-tree may cache trees)
    assert _git(repo, "rev-parse", "HEAD") == head_before
    assert _git(repo, "status", "--porcelain") == "MM " + MODEL


def test_staged_excludes_base_and_head(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(cli, ["audit", "--staged", "--base", "x"])
    assert result.exit_code == 2
    assert "--staged compares HEAD with the index" in result.output
