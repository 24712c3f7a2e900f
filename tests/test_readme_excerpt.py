"""The output README.md shows is real: its ```` ```text ```` blocks are run here by the
rules of tests/test_tutorial.py (its module docstring states them). README's
```` ```bash ```` blocks install the project and run the suite; they are not run."""

from __future__ import annotations

from pathlib import Path

import pytest
from shown_output import BIN, BLOCK, REPO, check_text_block, command_env

README = REPO / "README.md"


def text_blocks() -> list[tuple[bool, str]]:
    return [
        (bool(trimmed), body)
        for kind, trimmed, body in BLOCK.findall(README.read_text(encoding="utf-8"))
        if kind == "text"
    ]


def test_readme_shows_the_audit() -> None:
    assert any(body.startswith("$ provenance audit\n") for _, body in text_blocks())


@pytest.mark.skipif(not (BIN / "provenance").exists(), reason="needs the console script")
@pytest.mark.parametrize(("trimmed", "body"), text_blocks(), ids=lambda value: str(value)[:40])
def test_readme_output_is_real(trimmed: bool, body: str, tmp_path: Path) -> None:
    check_text_block(body, trimmed, command_env(), tmp_path)
