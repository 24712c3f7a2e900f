from __future__ import annotations

from pathlib import Path

from provenance.store.embedded import data_dirs

REPO = Path(__file__).resolve().parents[1]


def test_current_directory_with_data_wins(tmp_path: Path) -> None:
    (tmp_path / "recipes").mkdir()
    (tmp_path / "recipes" / "taxonomy.yaml").write_text("hardware_profiles: {}\n")
    (tmp_path / "ledger").mkdir()
    assert data_dirs(tmp_path).recipes == tmp_path / "recipes"
    assert data_dirs(tmp_path).evidence == tmp_path / "evidence"


def test_elsewhere_falls_back_to_the_source_tree(tmp_path: Path) -> None:
    dirs = data_dirs(tmp_path)
    assert dirs.recipes == REPO / "recipes"
    assert (dirs.recipes / "models" / "MiniMaxAI" / "MiniMax-M3.yaml").is_file()
