"""Default locations of the ledger and the evidence store (one place to change them)."""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple


class LedgerDirs(NamedTuple):
    ledger: Path
    evidence: Path


def default_dirs() -> LedgerDirs:
    """Where ``--ledger`` and ``--evidence`` point when not given: ``./ledger``, ``./evidence``."""
    return LedgerDirs(ledger=Path("ledger"), evidence=Path("evidence"))
