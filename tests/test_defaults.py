"""Default inputs: the recipes root, ledger and evidence when no option names them."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from provenance.store import embedded
from provenance.store.embedded import data_dirs, git_toplevel

REPO = Path(__file__).resolve().parents[1]


def _taxonomy(root: Path) -> None:
    root.mkdir(parents=True, exist_ok=True)
    (root / "taxonomy.yaml").write_text("hardware_profiles: {}\n")


def test_current_directory_with_data_wins(tmp_path: Path) -> None:
    _taxonomy(tmp_path / "recipes")
    (tmp_path / "ledger").mkdir()
    assert data_dirs(tmp_path).recipes == tmp_path / "recipes"
    assert data_dirs(tmp_path).ledger == tmp_path / "ledger"
    assert data_dirs(tmp_path).evidence == tmp_path / "evidence"


def test_elsewhere_falls_back_to_the_source_tree(tmp_path: Path) -> None:
    dirs = data_dirs(tmp_path)
    assert dirs.recipes == REPO / "recipes"
    assert (dirs.recipes / "models" / "MiniMaxAI" / "MiniMax-M3.yaml").is_file()
    assert dirs.ledger == REPO / "ledger"


def test_a_recipes_checkout_is_the_recipes_root_with_the_embedded_ledger(tmp_path: Path) -> None:
    _taxonomy(tmp_path)
    dirs = data_dirs(tmp_path)
    assert dirs.recipes == tmp_path
    # a recipes checkout has no ledger of its own: the embedded one is used
    assert dirs.ledger == REPO / "ledger" and dirs.evidence == REPO / "evidence"


def test_the_git_top_level_is_the_recipes_root_from_a_subdirectory(tmp_path: Path) -> None:
    _taxonomy(tmp_path)
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    models = tmp_path / "models" / "Org"
    models.mkdir(parents=True)
    assert git_toplevel(models) == tmp_path.resolve()
    assert data_dirs(models).recipes == tmp_path.resolve()


def test_a_linked_worktree_counts_as_a_git_top_level(tmp_path: Path) -> None:
    (tmp_path / ".git").write_text("gitdir: /elsewhere/.git/worktrees/x\n")
    _taxonomy(tmp_path)
    (tmp_path / "models").mkdir()
    assert data_dirs(tmp_path / "models").recipes == tmp_path.resolve()
    assert git_toplevel(tmp_path / "models") == tmp_path.resolve()


def test_a_git_top_level_without_taxonomy_is_not_a_recipes_root(tmp_path: Path) -> None:
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    assert data_dirs(tmp_path).recipes == REPO / "recipes"


def test_packaged_data_is_used_when_installed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An installed wheel's provenance/data (tests/test_shipped.py checks a real one)."""
    packaged = tmp_path / "site" / "provenance" / "data"
    _taxonomy(packaged / "recipes")
    (packaged / "ledger").mkdir()
    monkeypatch.setattr(embedded, "packaged_root", lambda: packaged)
    dirs = data_dirs(tmp_path / "elsewhere")
    assert dirs == (packaged / "recipes", packaged / "ledger", packaged / "evidence")
    assert embedded.is_packaged(packaged / "ledger")
    assert not embedded.is_packaged(tmp_path / "ledger")


def test_an_editable_install_has_no_packaged_data() -> None:
    assert embedded.packaged_root() is None
    assert not embedded.is_packaged(REPO / "ledger")


def test_the_packaged_ledger_is_named_the_same_on_every_machine(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A report names the packaged ledger as a package resource, not by the absolute path
    pip put it at (a venv's: it differs from machine to machine and says nothing)."""
    from provenance.store.ledger import PACKAGED_LEDGER, ledger_identity

    packaged = tmp_path / "venv" / "site-packages" / "provenance" / "data"
    (packaged / "ledger").mkdir(parents=True)
    monkeypatch.setattr(embedded, "packaged_root", lambda: packaged)
    identity = ledger_identity(packaged / "ledger")
    assert identity.packaged and identity.path == PACKAGED_LEDGER
    assert str(tmp_path) not in identity.model_dump_json()
    own = ledger_identity(REPO / "ledger")
    assert not own.packaged and own.path != PACKAGED_LEDGER
