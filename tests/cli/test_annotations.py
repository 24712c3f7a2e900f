"""``--format github``: GitHub Actions annotations (``::error file=…,line=…,title=…::…``)
for the audit and the PR audit, on the lines the SARIF report names, escaped by the
runner's rules (issue #31)."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import git
import pytest
from click.testing import CliRunner
from recipes_repo import REPO_ROOT, commit_all, work_tree
from recipes_support import FIXTURE_ROOT

from provenance.cli.main import cli
from provenance.report.annotations import command, escape_data, escape_property

LINE = re.compile(
    r"::(?P<level>error|warning|notice) file=(?P<file>[^,:]+),line=(?P<line>\d+),"
    r"title=(?P<title>[^:,]+)::(?P<message>.+)"
)
GOOD, BROKEN = "models/Toy/Toy-1.yaml", "models/Toy/Toy-2.yaml"
BAD_KEY = "bogus\x1b[31m_key"


def test_escaping_follows_the_runner() -> None:
    assert escape_data("50% a\r\nb: c, d") == "50%25 a%0D%0Ab: c, d"
    assert escape_property("50% a\r\nb: c, d") == "50%25 a%0D%0Ab%3A c%2C d"
    assert command("error", "x\ny", file="m/a,b.yaml", line=3, title="t: u") == (
        "::error file=m/a%2Cb.yaml,line=3,title=t%3A u::x%0Ay"
    )
    assert command("notice", "m", file="f", line=None, title="t") == "::notice file=f,title=t::m"


def test_audit_annotations_sit_on_the_sarif_lines(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO_ROOT)
    args = ["audit", "MiniMaxAI/MiniMax-M3", "--hardware", "b300", "--features", "default"]
    runner = CliRunner()
    done = runner.invoke(cli, [*args, "--format", "github"])
    assert done.exit_code == 0, done.output
    ledger, *lines = done.stdout.splitlines()
    assert ledger.startswith("::notice title=provenance::ledger ")
    assert lines
    found = set()
    for line in lines:
        match = LINE.fullmatch(line)
        assert match is not None, line
        assert match["level"] == "warning"  # no invalid recipe; notes are left out
        path = Path(match["file"])
        assert path.is_file() and int(match["line"]) <= len(path.read_text().splitlines())
        found.add((match["file"], int(match["line"])))
    sarif = json.loads(runner.invoke(cli, [*args, "--format", "sarif"]).stdout)
    expected = {
        (
            r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"],
            r["locations"][0]["physicalLocation"]["region"]["startLine"],
        )
        for r in sarif["runs"][0]["results"]
        if r["level"] == "warning" and not r.get("suppressions")
    }
    assert found == expected
    assert len(lines) == len(expected)  # one annotation per line


def _break(path: Path) -> int:
    """Append an unknown key (with an escape sequence) to the recipe; its line."""
    text = path.read_text(encoding="utf-8").rstrip("\n")
    path.write_text(f'{text}\n"{BAD_KEY.replace(chr(27), chr(92) + "e")}": 1\n', "utf-8")
    return len(path.read_text(encoding="utf-8").splitlines())


@pytest.fixture
def toy(tmp_path: Path) -> Path:
    """The toy recipes root with two recipes, and an empty ledger and evidence beside."""
    work = tmp_path / "recipes-repo"
    shutil.copytree(FIXTURE_ROOT, work)
    shutil.copy(work / GOOD, work / BROKEN)
    for name in ("ledger", "evidence"):
        (tmp_path / name).mkdir()
    return work


def _stores(work: Path) -> list[str]:
    return ["--ledger", str(work.parent / "ledger"), "--evidence", str(work.parent / "evidence")]


def test_an_invalid_recipe_is_an_error_on_its_line(
    toy: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    line = _break(toy / BROKEN)
    monkeypatch.chdir(toy)
    args = ["audit", "--recipes-root", ".", *_stores(toy), "--features", "none"]
    done = CliRunner().invoke(cli, [*args, "--format", "github"])
    assert done.exit_code == 3, done.output
    errors = [LINE.fullmatch(x) for x in done.stdout.splitlines() if x.startswith("::error")]
    assert [(m["file"], m["line"], m["title"]) for m in errors if m] == [
        (BROKEN, str(line), "provenance%3A invalid-recipe")
    ]
    assert "\x1b" not in done.stdout


def test_pr_annotations_block_on_the_head_and_name_the_repository_path(toy: Path) -> None:
    repo = git.Repo.init(toy)
    repo.git.config("user.email", "t@example.invalid")
    repo.git.config("user.name", "t")
    base = commit_all(repo, "base")
    line = _break(work_tree(repo) / BROKEN)
    head = commit_all(repo, "head: break Toy-2")
    args = ["audit", "--repo", str(toy), "--base", base, "--head", head, *_stores(toy)]
    done = CliRunner().invoke(cli, [*args, "--features", "none", "--format", "github"])
    assert done.exit_code == 3, done.output
    lines = done.stdout.splitlines()
    assert lines[0].startswith("::notice title=provenance::ledger ")
    matches = [LINE.fullmatch(x) for x in lines[1:]]
    assert all(matches), done.stdout
    assert (BROKEN, str(line), "error") in {
        (m["file"], m["line"], m["level"]) for m in matches if m
    }
    assert head[:12] not in done.stdout.split("::", 2)[1]  # the file is the repository path
