"""docs/cli.md is generated from the commands; it must list every command and option."""

from __future__ import annotations

import runpy
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "gen_cli_docs.py"


def test_cli_reference_is_up_to_date() -> None:
    module = runpy.run_path(str(SCRIPT))
    expected = module["render"]()
    assert (SCRIPT.parents[1] / "docs" / "cli.md").read_text(encoding="utf-8") == expected, (
        "docs/cli.md is out of date: run python scripts/gen_cli_docs.py"
    )
