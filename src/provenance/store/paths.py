"""Default locations of the ledger, the evidence store and the local cache (one place to
change them)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import NamedTuple

#: Relocates the local cache (extractions, proven record files).
CACHE_ENV = "PROVENANCE_CACHE_DIR"


class LedgerDirs(NamedTuple):
    ledger: Path
    evidence: Path


def default_dirs() -> LedgerDirs:
    """Where ``--ledger`` and ``--evidence`` point when not given: the embedded ledger.

    ``./ledger`` and ``./evidence`` when the current directory holds the embedded data
    (a provenance clone), else the ones beside the package's source
    (:mod:`provenance.store.embedded`).
    """
    from provenance.store.embedded import data_dirs

    dirs = data_dirs()
    return LedgerDirs(ledger=display_path(dirs.ledger), evidence=display_path(dirs.evidence))


def display_path(path: Path) -> Path:
    """Show paths under the current directory relative to it (shorter diagnostics)."""
    try:
        return path.relative_to(Path.cwd())
    except ValueError:
        return path


def default_cache_dir() -> Path:
    """``$PROVENANCE_CACHE_DIR``, else ``$XDG_CACHE_HOME/provenance``, else ``~/.cache/…``.

    Local data only (never evidence): deleting it is always safe.
    """
    explicit = os.environ.get(CACHE_ENV)
    if explicit:
        return Path(explicit)
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg) if xdg and Path(xdg).is_absolute() else Path.home() / ".cache"
    return base / "provenance"
