"""The tutorial's output is real: the commands of the checked chapters are run here.

Rules, per chapter of docs/tutorial.md listed in ``CHECKED``, block by block in order:

* A ```` ```bash ```` block is a script, run with ``bash -euo pipefail`` from the
  repository root; it must succeed and print nothing on stdout.
* A ```` ```text ```` block is a list of commands, each a line starting with ``$ ``,
  each followed by what it prints. A command is run with ``bash -o pipefail -c`` from
  the repository root, with the ``provenance`` console script of this interpreter's
  environment first on PATH. What it prints is its stdout followed by its stderr.
* ``$ echo $?`` is not run: the line after it is the exit status of the command
  before it. A command not followed by ``$ echo $?`` must exit 0.
* Volatile values: ``/tmp/`` in a command or a bash block is the test's own
  temporary directory, and that directory prints as ``/tmp/``; ``<sha>`` in an
  output line stands for a commit id, ``[0-9a-f]{7,40}`` (the throwaway git
  repositories' commits depend on the clock). Nothing else varies: every other
  character of the shown output must be printed exactly, and every printed line
  must be shown, so the test fails when the output changes. Trailing spaces are
  not compared (a page does not keep them; tables pad their lines to the terminal
  width), and commands run with ``COLUMNS=160`` and ``NO_COLOR=1``, so tables wrap
  the same everywhere.
* Trimmed blocks, and only they, leave things out: their fence says
  ```` ```text trimmed ````. In them a line that is exactly ``…`` stands for one or
  more printed lines left out, and a line that ends in ``…`` (but is not only
  ``…``) stands for a printed line that starts with the text before the ``…`` and is
  longer. Lines between two ``…`` lines are consecutive printed lines; a block that
  does not start (end) with a ``…`` line starts (ends) where the output does.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from shown_output import (
    BIN,
    BLOCK,
    CUT,
    REPO,
    check_bash_block,
    check_text_block,
    command_env,
    expect_output,
    printed_lines,
)

TUTORIAL = REPO / "docs" / "tutorial.md"
CHECKED = (
    "## 1. The audit",
    "## 2. The FP8 indexer KV cache on NVFP4 single-node B200/B300 (InferenceX#2120)",
    "## 3. The pd_cluster Blackwell attention flags (InferenceX#2310)",
    "## 4. EAGLE3-GQA: prefill `num_speculative_tokens` 3 vs 1 (InferenceX#2314)",
    "## 5. The topology the schema cannot express",
    "## 6. The citations block for the PR body",
    "## 7. The diff-aware audit and the CI gate",
    "## 8. The ledger verifies",
    "## 9. Fix the recipe",
)


def chapter(heading: str) -> str:
    text = TUTORIAL.read_text(encoding="utf-8")
    start = text.index(heading + "\n")
    end = text.find("\n## ", start + len(heading))
    return text[start : end if end != -1 else len(text)]


def chapters() -> list[str]:
    text = TUTORIAL.read_text(encoding="utf-8")
    return re.findall(r"^## .*$", text, flags=re.MULTILINE)


def test_exact_blocks_match_every_line() -> None:
    expect_output(["PR audit <sha> -> <sha>"], ["PR audit 4e1315878bee -> a1367049dfea"], False)
    with pytest.raises(AssertionError):
        expect_output(["PR audit <sha>"], ["PR audit 4e1315878beX"], False)
    with pytest.raises(AssertionError):
        expect_output(["a", "b"], ["a", "b", "c"], False)
    with pytest.raises(AssertionError):
        expect_output(["a", CUT], ["a", "b"], False)
    with pytest.raises(AssertionError):
        expect_output(["ab…"], ["abc"], False)


def test_trimmed_blocks_cut_only_where_they_say() -> None:
    expect_output(["a", CUT, "c…", "d", CUT], ["a", "b", "cde", "d", "e"], True)
    expect_output([CUT, "c"], ["a", "b", "c"], True)
    with pytest.raises(AssertionError):  # an omission needs a … line
        expect_output(["a", "c"], ["a", "b", "c"], True)
    with pytest.raises(AssertionError):  # … leaves out at least one line
        expect_output(["a", CUT, "b"], ["a", "b"], True)
    with pytest.raises(AssertionError):  # the block ends where the output does
        expect_output(["a", CUT, "b"], ["a", "x", "b", "c"], True)
    with pytest.raises(AssertionError):  # order
        expect_output(["c", CUT, "a"], ["a", "b", "c"], True)
    with pytest.raises(AssertionError):  # a cut line is longer than its start
        expect_output(["abc…"], ["abc"], True)


def test_printed_lines_lose_only_trailing_spaces(tmp_path: Path) -> None:
    printed = printed_lines(f"  a  \n{tmp_path}/x \n   \n", "err\tb \n", tmp_path)
    assert printed == ["  a", "/tmp/x", "", "err\tb"]


def test_every_chapter_with_commands_is_listed() -> None:
    listed = set(CHECKED)
    with_commands = {
        heading
        for heading in chapters()
        if any(kind in {"text", "bash"} for kind, _, _ in BLOCK.findall(chapter(heading)))
    }
    assert with_commands <= listed, sorted(with_commands - listed)
    assert listed <= set(chapters())


@pytest.mark.skipif(not (BIN / "provenance").exists(), reason="needs the console script")
@pytest.mark.parametrize("heading", CHECKED)
def test_chapter_output_is_real(heading: str, tmp_path: Path) -> None:
    env = command_env()
    if shutil.which("git", path=env["PATH"]) is None:
        pytest.skip("needs git")
    for kind, trimmed, body in BLOCK.findall(chapter(heading)):
        if kind == "bash":
            check_bash_block(body, env, tmp_path)
        elif kind == "text":
            check_text_block(body, bool(trimmed), env, tmp_path)
