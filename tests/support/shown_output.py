"""Output shown in the docs, checked against the tool: the block rules of
tests/test_tutorial.py (its module docstring states them) and the runner that applies them.

Shared by the tutorial test and the README excerpt test, so both pages follow one set
of rules.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
#: a fenced block: its kind (``text``, ``bash``…), `` trimmed`` or not, its body
BLOCK = re.compile(r"^```(\w+)( trimmed)?\n(.*?)^```$", re.MULTILINE | re.DOTALL)
SHA = "<sha>"
SHA_PATTERN = "[0-9a-f]{7,40}"
CUT = "…"
#: the environment of this interpreter, whose ``provenance`` console script is run
BIN = Path(sys.executable).parent


def command_env() -> dict[str, str]:
    """The environment a shown command runs in: this interpreter's console scripts first
    on PATH, a fixed terminal width (tables wrap the same everywhere), no colour, and
    not CI (no progress heartbeat on stderr, whose count follows the machine's speed)."""
    return {
        **os.environ,
        "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
        "COLUMNS": "160",
        "NO_COLOR": "1",
        "CI": "",
    }


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
    """Check ``printed`` against the ``shown`` lines by the block rules."""

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


@dataclass(frozen=True)
class Run:
    command: str
    printed: list[str]
    status: int


def localise(text: str, tmp: Path) -> str:
    return text.replace("/tmp/", f"{tmp}/")


def printed_lines(stdout: str, stderr: str, tmp: Path) -> list[str]:
    """What a command printed, as the docs show it: stdout then stderr, the temporary
    directory as ``/tmp/``, and without trailing spaces (a page does not keep them;
    tables pad their lines to the terminal width)."""
    text = (stdout + stderr).replace(f"{tmp}/", "/tmp/")
    return [line.rstrip(" ") for line in text.splitlines()]


def run_command(command: str, env: dict[str, str], tmp: Path) -> Run:
    done = subprocess.run(
        ["bash", "-o", "pipefail", "-c", localise(command, tmp)],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
    )
    return Run(command, printed_lines(done.stdout, done.stderr, tmp), done.returncode)


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


def check_bash_block(body: str, env: dict[str, str], tmp: Path) -> None:
    done = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", localise(body, tmp)],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, (body, done.stderr)
    assert done.stdout == "", (body, done.stdout)
