"""Where the embedded data lives: the recipes root, ledger and evidence shipped with provenance.

``provenance audit`` with no arguments audits the embedded MiniMax-M3 recipe against the
embedded ledger. The data are the top-level ``recipes/``, ``ledger/`` and ``evidence/``
directories of the provenance source tree. They are found, in order:

1. in the current directory (the README's quick start runs from a clone), then
2. next to the installed package's source (an editable install or a run from the tree).

When neither has them, the command says so and asks for ``--recipes-root``/``--ledger``.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import NamedTuple


class DataDirs(NamedTuple):
    recipes: Path
    ledger: Path
    evidence: Path


def _has_data(root: Path) -> bool:
    return (root / "recipes" / "taxonomy.yaml").is_file() and (root / "ledger").is_dir()


@cache
def _source_root() -> Path | None:
    # src/provenance/store/embedded.py -> the project root is three levels above it.
    candidate = Path(__file__).resolve().parents[3]
    return candidate if _has_data(candidate) else None


def data_dirs(cwd: Path | None = None) -> DataDirs:
    """The embedded data directories (see the module docstring for the search order)."""
    here = cwd or Path.cwd()
    root = here if _has_data(here) else (_source_root() or here)
    return DataDirs(recipes=root / "recipes", ledger=root / "ledger", evidence=root / "evidence")
