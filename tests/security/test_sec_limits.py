"""Resource exhaustion by a small hostile recipe: the cross-product must be bounded.

A recipes PR controls how many optional features (and modes) a recipe has;
the audit enumerates every reachable subset. A 2.4 KB recipe with 26 opt-in
features stands for 2^26 feature subsets. Without a bound, ``provenance
audit`` on it ran past 90 s and reached 10.8 GB resident memory (measured,
outside the suite). Expected: one clear input error (exit 3) naming the
recipe, quickly, in bounded memory. The check runs in a child process with a
1 GiB address-space limit so a regression cannot exhaust the CI machine.
"""

from __future__ import annotations

import resource
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from sec_fixtures import MODEL_FILE, reduced_recipes_root

from provenance.errors import EXIT_INPUT

FEATURES = 26
ADDRESS_SPACE = 1 << 30


def _bomb_recipes_root(root: Path) -> Path:
    reduced_recipes_root(root)
    path = root / MODEL_FILE
    data = yaml.safe_load(path.read_text())
    data["features"] = {f"f{i}": {"args": [f"--flag-{i}"]} for i in range(FEATURES)}
    data["opt_in_features"] = [f"f{i}" for i in range(FEATURES)]
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return root


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE, ADDRESS_SPACE))


def test_a_feature_bomb_recipe_is_refused_in_bounded_memory(tmp_path: Path) -> None:
    root = _bomb_recipes_root(tmp_path / "recipes")
    assert (root / MODEL_FILE).stat().st_size < 4096
    (tmp_path / "ledger").mkdir()
    (tmp_path / "evidence").mkdir()
    try:
        result = subprocess.run(
            [
                sys.executable,
                "-c",
                "from provenance.cli.main import main; main()",
                "audit",
                "MiniMaxAI/MiniMax-M3",
                "--recipes-root",
                str(root),
                "--ledger",
                str(tmp_path / "ledger"),
                "--evidence",
                str(tmp_path / "evidence"),
                "--format",
                "json",
            ],
            preexec_fn=_limit_memory,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    except subprocess.TimeoutExpired:
        pytest.fail("audit of a 2.4 KB recipe did not finish within 60 s")
    assert result.returncode == EXIT_INPUT, result.stderr[-2000:]
    assert "Traceback" not in result.stderr
    assert MODEL_FILE in result.stderr
