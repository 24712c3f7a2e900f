"""The tutorial's "Fix the recipe" chapter is real output: its commands are run here.

Within a chapter, each ```bash block is run as written (from the repository root,
with the installed ``provenance`` console script), and each ```text block is a list of
``$ provenance …`` commands followed by what they print. A printed line must appear in
the real output in the same order; ``…`` alone stands for any number of lines left out
and a line ending in ``…`` for the start of a longer line.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
TUTORIAL = REPO / "docs" / "tutorial.md"
CHECKED = ("## 9. Fix the recipe",)
BLOCK = re.compile(r"^```(text|bash)\n(.*?)^```$", re.MULTILINE | re.DOTALL)


def chapter(heading: str) -> str:
    text = TUTORIAL.read_text(encoding="utf-8")
    start = text.index(heading + "\n")
    end = text.find("\n## ", start + len(heading))
    return text[start : end if end != -1 else len(text)]


def expect_in_order(expected: list[str], actual: list[str]) -> None:
    position = 0
    for line in expected:
        if line.strip() == "…":
            continue
        prefix = line.endswith("…")
        wanted = line[:-1].rstrip() if prefix else line.rstrip()
        for index in range(position, len(actual)):
            have = actual[index].rstrip()
            if have.startswith(wanted) if prefix else have == wanted:
                position = index + 1
                break
        else:
            raise AssertionError(f"not in the output (in this order): {line!r}")


def test_the_matcher_needs_order_and_whole_lines() -> None:
    expect_in_order(["a", "…", "c…"], ["a", "b", "cde"])
    with pytest.raises(AssertionError):
        expect_in_order(["c", "a"], ["a", "b", "c"])
    with pytest.raises(AssertionError):
        expect_in_order(["ab"], ["abc"])


@pytest.mark.skipif(shutil.which("provenance") is None, reason="needs the console script")
@pytest.mark.parametrize("heading", CHECKED)
def test_chapter_output_is_real(heading: str) -> None:
    env = {**os.environ, "COLUMNS": "160", "NO_COLOR": "1"}
    for kind, body in BLOCK.findall(chapter(heading)):
        if kind == "bash":
            subprocess.run(["bash", "-euo", "pipefail", "-c", body], cwd=REPO, env=env, check=True)
            continue
        commands = re.split(r"^\$ ", body, flags=re.MULTILINE)
        for item in commands[1:]:
            command, *expected = item.rstrip("\n").split("\n")
            run = subprocess.run(
                shlex.split(command), cwd=REPO, env=env, capture_output=True, text=True
            )
            assert run.returncode == 0, run.stderr
            expect_in_order(expected, run.stdout.splitlines())
