"""Default locations of the ledger and the evidence store (one place to change them)."""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple


class LedgerDirs(NamedTuple):
    ledger: Path
    evidence: Path


def default_dirs() -> LedgerDirs:
    """Where ``--ledger`` and ``--evidence`` point when not given: the embedded ledger.

    ``./ledger`` and ``./evidence`` when the current directory holds the embedded data
    (a provenance clone), else the ones beside the package's source
    (:mod:`provenance.defaults`).
    """
    from provenance.defaults import data_dirs

    dirs = data_dirs()
    return LedgerDirs(ledger=display_path(dirs.ledger), evidence=display_path(dirs.evidence))


def display_path(path: Path) -> Path:
    """Show paths under the current directory relative to it (shorter diagnostics)."""
    try:
        return path.relative_to(Path.cwd())
    except ValueError:
        return path
