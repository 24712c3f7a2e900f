"""Fixtures of the as-shipped tests: the project as a clone has it, and a fresh venv with
the package installed non-editable from that copy (``pip install <path>``, as the Action's
install step does)."""

from __future__ import annotations

from pathlib import Path

import pytest
from shipped_support import base_env, copy_checkout, make_venv, run


@pytest.fixture(scope="session")
def checkout(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The project as a user's clone has it (also the Action's ``github.action_path``)."""
    return copy_checkout(tmp_path_factory.mktemp("provenance-checkout") / "provenance")


@pytest.fixture(scope="session")
def fresh_bin(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bin directory of a fresh venv, nothing installed (the Action's setup-python)."""
    return make_venv(tmp_path_factory.mktemp("fresh-venv") / "venv")


@pytest.fixture(scope="session")
def installed_bin(fresh_bin: Path, checkout: Path) -> Path:
    """``fresh_bin`` with provenance installed from ``checkout``, not editable."""
    done = run(
        [str(fresh_bin / "python"), "-m", "pip", "install", "--quiet", str(checkout)],
        cwd=checkout.parent,
        env=base_env(fresh_bin),
    )
    assert done.returncode == 0, done.stderr[-4000:]
    return fresh_bin
