"""A fresh ledger + evidence store (imported by the ledger tests under a unique name)."""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

from provenance.store.evidence import EvidenceStore
from provenance.store.ledger import Ledger


class Workspace(NamedTuple):
    ledger_root: Path
    evidence_root: Path
    ledger: Ledger
    store: EvidenceStore


def new_workspace(tmp_path: Path) -> Workspace:
    ledger_root = tmp_path / "ledger"
    evidence_root = tmp_path / "evidence"
    ledger_root.mkdir()
    evidence_root.mkdir()
    return Workspace(ledger_root, evidence_root, Ledger(ledger_root), EvidenceStore(evidence_root))
