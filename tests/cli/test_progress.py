"""Long work says what it does on stderr (issue #31): a live line on a terminal, in CI
the first phase at once and a heartbeat at most every 10 s, with ``-v`` every phase,
with ``-q`` nothing; and a PR that changes ``taxonomy.yaml`` says why it audits every
recipe."""

from __future__ import annotations

import io
import threading
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from recipes_repo import EMBEDDED, commit_all, init_recipes_repo, work_tree

from provenance.cli.main import cli
from provenance.cli.options import Settings
from provenance.cli.progress import HEARTBEAT, Progress, progress_mode


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


class Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_heartbeat_prints_the_first_phase_then_at_most_one_line_per_interval() -> None:
    out = io.StringIO()
    clock = Clock()
    with Progress(out, "heartbeat", interval=3600, clock=clock) as progress:
        progress("taxonomy.yaml changed: auditing all 173 recipes on both sides")
        progress("auditing the base (173 recipe(s))")
        progress("auditing the head (173 recipe(s))")
    assert out.getvalue() == (
        "provenance: taxonomy.yaml changed: auditing all 173 recipes on both sides\n"
    )


def test_heartbeat_beats_while_the_work_lasts() -> None:
    out = io.StringIO()
    with Progress(out, "heartbeat", interval=0.05) as progress:
        progress("auditing the base (2 recipe(s))")
        time.sleep(0.3)
        progress("auditing the head (2 recipe(s))")
        time.sleep(0.3)
    lines = out.getvalue().splitlines()
    assert lines[0] == "provenance: auditing the base (2 recipe(s))"
    beats = lines[1:]
    assert 4 <= len(beats) <= 16, lines
    assert all(line.startswith("provenance: still auditing the ") for line in beats)
    assert beats[-1].startswith("provenance: still auditing the head")
    assert not [t for t in threading.enumerate() if t.name == "progress"]
    before = out.getvalue()
    time.sleep(0.15)
    assert out.getvalue() == before  # closed: no more beats


def test_lines_stamp_every_phase_and_off_prints_nothing() -> None:
    out = io.StringIO()
    clock = Clock()
    progress = Progress(out, "lines", clock=clock)
    progress("auditing x")
    clock.now += 12.4
    progress("comparing the two audits")
    progress.close()
    assert out.getvalue() == (
        "provenance: auditing x (0 s)\nprovenance: comparing the two audits (12 s)\n"
    )
    silent = io.StringIO()
    with Progress(silent, "off") as progress:
        progress("auditing x")
    assert silent.getvalue() == ""


def test_live_line_on_a_terminal_is_erased_at_the_end() -> None:
    out = Tty()
    with Progress(out, "live") as progress:
        progress("re-auditing the edits that reach validated evidence")
        time.sleep(0.2)
    assert "re-auditing the edits" in out.getvalue()


def test_progress_escapes_what_it_prints() -> None:
    out = io.StringIO()
    with Progress(out, "lines") as progress:
        progress("auditing \x1b[31mred")
    assert "\x1b" not in out.getvalue()


@pytest.mark.parametrize(
    ("quiet", "verbose", "tty", "ci", "mode"),
    [
        (True, 0, True, "", "off"),
        (True, 1, False, "true", "off"),
        (False, 1, False, "", "lines"),
        (False, 0, True, "", "live"),
        (False, 0, True, "true", "heartbeat"),
        (False, 0, False, "true", "heartbeat"),
        (False, 0, False, "", "off"),
    ],
)
def test_mode(
    quiet: bool, verbose: int, tty: bool, ci: str, mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CI", ci)
    stream = Tty() if tty else io.StringIO()
    assert progress_mode(Settings(quiet=quiet, verbose=verbose), stream) == mode
    assert HEARTBEAT == 10.0


@pytest.fixture(scope="module")
def taxonomy_pr(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, str]:
    """A PR that changes only ``taxonomy.yaml`` (a comment)."""
    repo = init_recipes_repo(tmp_path_factory.mktemp("taxonomy-pr"))
    work = work_tree(repo)
    base = commit_all(repo, "base")
    with (work / "taxonomy.yaml").open("a", encoding="utf-8") as handle:
        handle.write("# a comment\n")
    head = commit_all(repo, "head")
    return work, base, head


def _pr(pr: tuple[Path, str, str], *before: str) -> list[str]:
    work, base, head = pr
    return [
        *before,
        *("audit", "--repo", str(work), "--base", base, "--head", head),
        *("--variant", "mxfp8", "--hardware", "b300", "--features", "default"),
    ]


def test_a_taxonomy_pr_says_why_it_audits_every_recipe_in_ci(
    taxonomy_pr: tuple[Path, str, str],
) -> None:
    done = CliRunner().invoke(cli, _pr(taxonomy_pr), env={"CI": "true"})
    assert done.exit_code == 0, done.output
    recipes = len(list((EMBEDDED / "models").rglob("*.yaml")))
    assert done.stderr.splitlines()[0] == (
        f"provenance: taxonomy.yaml changed: auditing all {recipes} recipes on both sides"
    )
    verbose = CliRunner().invoke(cli, _pr(taxonomy_pr, "-v"), env={"CI": ""})
    phases = [line.rsplit(" (", 1)[0] for line in verbose.stderr.splitlines()]
    assert phases == [
        f"provenance: taxonomy.yaml changed: auditing all {recipes} recipes on both sides",
        f"provenance: auditing the base and the head recipe by recipe ({recipes} and "
        f"{recipes} recipe(s))",
        "provenance: comparing the two audits",
    ]
    quiet = CliRunner().invoke(cli, _pr(taxonomy_pr, "-q"), env={"CI": "true"})
    assert quiet.stderr == ""
    assert quiet.stdout == done.stdout == verbose.stdout


def test_suggest_tells_each_phase() -> None:
    args = ["-v", "suggest", "MiniMaxAI/MiniMax-M3", "--hardware", "b300", "--variant", "mxfp8"]
    done = CliRunner().invoke(cli, [*args, "--features", "default"], env={"CI": ""})
    assert done.exit_code == 0, done.output
    phases = [line.rsplit(" (", 1)[0] for line in done.stderr.splitlines()]
    assert phases == [
        "provenance: auditing MiniMaxAI/MiniMax-M3",
        "provenance: re-auditing the edits that reach validated evidence",
        "provenance: re-auditing the edits that scope flags to the hardware evidence backs",
        "provenance: combining the proven edits and re-auditing the combination",
    ]
