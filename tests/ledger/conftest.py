"""Fixtures for the ledger tests: a fresh ledger + evidence store per test."""

from __future__ import annotations

from pathlib import Path

import pytest
from ledger_workspace import Workspace, new_workspace


@pytest.fixture
def workspace(tmp_path: Path) -> Workspace:
    return new_workspace(tmp_path)
