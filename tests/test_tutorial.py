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
  must be shown, so the test fails when the output changes.
* Trimmed blocks, and only they, leave things out: their fence says
  ```` ```text trimmed ````. In them a line that is exactly ``…`` stands for one or
  more printed lines left out, and a line that ends in ``…`` (but is not only
  ``…``) stands for a printed line that starts with the text before the ``…`` and is
  longer. Lines between two ``…`` lines are consecutive printed lines; a block that
  does not start (end) with a ``…`` line starts (ends) where the output does.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
TUTORIAL = REPO / "docs" / "tutorial.md"
CHECKED = (
    "## 7. The diff-aware audit and the CI gate",
    "## 8. The ledger verifies",
    "## 9. Fix the recipe",
)
# Chapters whose output is shown but not yet run here; each one leaving this list is
# one more chapter the suite keeps true.
UNCHECKED = (
    "## 1. The audit",
    "## 2. The FP8 indexer KV cache on NVFP4 single-node B200/B300 (InferenceX#2120)",
    "## 3. The pd_cluster Blackwell attention flags (InferenceX#2310)",
    "## 4. EAGLE3-GQA: prefill `num_speculative_tokens` 3 vs 1 (InferenceX#2314)",
    "## 5. The topology the schema cannot express",
    "## 6. The citations block for the PR body",
)
BLOCK = re.compile(r"^```(\w+)( trimmed)?\n(.*?)^```$", re.MULTILINE | re.DOTALL)
SHA = "<sha>"
SHA_PATTERN = "[0-9a-f]{7,40}"
CUT = "…"
BIN = Path(sys.executable).parent


def chapter(heading: str) -> str:
    text = TUTORIAL.read_text(encoding="utf-8")
    start = text.index(heading + "\n")
    end = text.find("\n## ", start + len(heading))
    return text[start : end if end != -1 else len(text)]


def chapters() -> list[str]:
    text = TUTORIAL.read_text(encoding="utf-8")
    return re.findall(r"^## .*$", text, flags=re.MULTILINE)


def line_pattern(shown: str, trimmed: bool) -> re.Pattern[str]:
    cut = trimmed and shown.endswith(CUT)
    text = shown[: -len(CUT)] if cut else shown
    body = SHA_PATTERN.join(re.escape(piece) for piece in text.split(SHA))
    return re.compile(body + (".+" if cut else ""))


def first_mismatch(shown: list[str], printed: list[str], at: int, trimmed: bool) -> int | None:
    """Index in ``shown`` of the first line that ``printed[at:]`` does not match, or None."""
    for index, line in enumerate(shown):
        if at + index >= len(printed):
            return index
        if not line_pattern(line, trimmed).fullmatch(printed[at + index]):
            return index
    return None


def expect_output(shown: list[str], printed: list[str], trimmed: bool) -> None:
    """Check ``printed`` against the ``shown`` lines by the rules in the module docstring."""

    def fail(message: str, around: int) -> None:
        window = "\n".join(printed[max(0, around - 3) : around + 4])
        raise AssertionError(f"{message}\nprinted near line {around + 1}:\n{window}")

    if not trimmed:
        index = first_mismatch(shown, printed, 0, trimmed=False)
        if index is not None:
            fail(f"shown line {index + 1} is not printed: {shown[index]!r}", index)
        if len(printed) != len(shown):
            fail(f"{len(printed)} lines printed, {len(shown)} shown", len(shown))
        return
    segments: list[list[str]] = [[]]
    for line in shown:
        if line == CUT:
            segments.append([])
        else:
            segments[-1].append(line)
    position = 0
    for number, segment in enumerate(segments):
        last = number == len(segments) - 1
        if number == 0:
            candidates = range(0, 1)
        elif last:
            candidates = range(len(printed) - len(segment), len(printed) - len(segment) + 1)
        else:
            candidates = range(position + 1, len(printed) - len(segment) + 1)
        start = next(
            (
                at
                for at in candidates
                if at >= position + (number > 0)
                and first_mismatch(segment, printed, at, trimmed=True) is None
            ),
            None,
        )
        if start is None:
            # report the closest place: where the longest start of the segment matches
            at = max(
                (at for at in candidates if at >= position + (number > 0)),
                key=lambda at: first_mismatch(segment, printed, at, trimmed=True) or 0,
                default=position + (number > 0),
            )
            index = first_mismatch(segment, printed, at, trimmed=True) or 0
            where = "at the end of" if last and number else "after the previous lines of"
            fail(f"not printed {where} the output: {segment[index:][:1]!r}", at + index)
            return
        position = start + len(segment)
    if len(segments) == 1 and position != len(printed):
        fail(f"{len(printed) - position} printed line(s) not shown and no {CUT} line", position)


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


def test_every_chapter_with_commands_is_listed() -> None:
    listed = set(CHECKED) | set(UNCHECKED)
    assert set(CHECKED).isdisjoint(UNCHECKED)
    with_commands = {
        heading
        for heading in chapters()
        if any(kind in {"text", "bash"} for kind, _, _ in BLOCK.findall(chapter(heading)))
    }
    assert with_commands <= listed, sorted(with_commands - listed)
    assert listed <= set(chapters())


@dataclass(frozen=True)
class Run:
    command: str
    printed: list[str]
    status: int


def localise(text: str, tmp: Path) -> str:
    return text.replace("/tmp/", f"{tmp}/")


def run_command(command: str, env: dict[str, str], tmp: Path) -> Run:
    done = subprocess.run(
        ["bash", "-o", "pipefail", "-c", localise(command, tmp)],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
    )
    printed = (done.stdout + done.stderr).replace(f"{tmp}/", "/tmp/").splitlines()
    return Run(command, printed, done.returncode)


def check_text_block(body: str, trimmed: bool, env: dict[str, str], tmp: Path) -> None:
    items = re.split(r"^\$ ", body, flags=re.MULTILINE)
    assert items[0] == "", f"a text block starts with a $ command: {items[0][:60]!r}"
    previous: Run | None = None
    for item in items[1:]:
        command, *shown = item.rstrip("\n").split("\n")
        if command == "echo $?":
            assert previous is not None, "$ echo $? follows a command"
            assert shown == [str(previous.status)], (previous.command, previous.status)
            previous = None
            continue
        if previous is not None:
            assert previous.status == 0, (previous.command, previous.status, previous.printed)
        previous = run_command(command, env, tmp)
        try:
            expect_output(shown, previous.printed, trimmed)
        except AssertionError as error:
            raise AssertionError(f"$ {command}\n{error}") from None
    if previous is not None:
        assert previous.status == 0, (previous.command, previous.status, previous.printed)


@pytest.mark.skipif(not (BIN / "provenance").exists(), reason="needs the console script")
@pytest.mark.parametrize("heading", CHECKED)
def test_chapter_output_is_real(heading: str, tmp_path: Path) -> None:
    env = {
        **os.environ,
        "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
        "COLUMNS": "160",
        "NO_COLOR": "1",
    }
    if shutil.which("git", path=env["PATH"]) is None:
        pytest.skip("needs git")
    for kind, trimmed, body in BLOCK.findall(chapter(heading)):
        if kind == "bash":
            done = subprocess.run(
                ["bash", "-euo", "pipefail", "-c", localise(body, tmp_path)],
                cwd=REPO,
                env=env,
                capture_output=True,
                text=True,
            )
            assert done.returncode == 0, (body, done.stderr)
            assert done.stdout == "", (body, done.stdout)
        elif kind == "text":
            check_text_block(body, bool(trimmed), env, tmp_path)
