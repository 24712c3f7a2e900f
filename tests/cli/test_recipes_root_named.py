"""Issue #31: every report names the recipes root it read (where, how it was chosen, its
git commit); ``--recipes-root`` help states the real default; a RECIPE the embedded root
lacks is a usage error with a hint; a ledger without its evidence directory says so."""

from __future__ import annotations

import io
import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import click
import pytest
from click.testing import CliRunner
from recipes_repo import EMBEDDED, REPO_ROOT, keep, pr_repo, without_mxfp8_args, work_tree
from recipes_repo import commit_all as _commit
from recipes_repo import init_recipes_repo as _init

from provenance import __version__
from provenance.audit.pipeline import AuditFilters
from provenance.cli.main import cli
from provenance.errors import EXIT_USAGE
from provenance.report.pr import write_pr_audit
from provenance.review.pr_audit import PrAuditRequest, run_pr_audit

#: a small part of MiniMax-M3 (the audit's output is not the point here)
NARROW = ("--variant", "nvfp4", "--hardware", "b200", "--features", "none")
LEDGER, EVIDENCE = REPO_ROOT / "ledger", REPO_ROOT / "evidence"
EMBEDDED_LINE = f"recipes embedded (provenance {__version__})"


@pytest.fixture
def chdir() -> Iterator[object]:
    before = Path.cwd()

    def go(path: Path) -> None:
        os.chdir(path)

    try:
        yield go
    finally:
        os.chdir(before)


def _audit(*args: str) -> click.testing.Result:
    return CliRunner(env={"COLUMNS": "200", "NO_COLOR": "1"}).invoke(cli, ["audit", *args])


def _git_checkout(tmp_path: Path) -> tuple[Path, str]:
    """A recipes checkout (a git repository holding the embedded recipes) and its HEAD."""
    repo = _init(tmp_path)
    return work_tree(repo), _commit(repo, "recipes")


# 1. Every report names the recipes root ----------------------------------------------


def test_the_embedded_root_is_named_without_its_path(chdir: object, tmp_path: Path) -> None:
    assert callable(chdir)
    chdir(REPO_ROOT)  # a provenance source tree: its recipes/ is the embedded root
    text = _audit(*NARROW)
    assert text.exit_code == 0, text.output
    lines = text.stdout.splitlines()
    ledger = next(i for i, line in enumerate(lines) if line.startswith("ledger "))
    assert lines[ledger + 1] == EMBEDDED_LINE
    shown = json.loads(_audit(*NARROW, "--format", "json").stdout)["recipes_source"]
    assert shown == {
        "path": "recipes",
        "how": "embedded",
        "embedded_by": __version__,
        "git_checkout": False,
        "commit": None,
    }
    chdir(tmp_path)  # elsewhere: named as the package's, not by where it lies
    shown = json.loads(_audit(*NARROW, "--format", "json").stdout)["recipes_source"]
    assert shown["path"] == "provenance:recipes" and shown["how"] == "embedded"
    assert str(REPO_ROOT) not in json.dumps(shown)


def test_a_checkout_around_the_current_directory_is_named_with_its_commit(
    chdir: object, tmp_path: Path
) -> None:
    assert callable(chdir)
    checkout, head = _git_checkout(tmp_path)
    chdir(checkout / "models")
    result = _audit("MiniMaxAI/MiniMax-M3", *NARROW)
    assert result.exit_code == 0, result.output
    line = f"recipes {checkout} (checkout around the current directory, git {head[:12]})"
    assert line in result.stdout.splitlines()
    chdir(checkout)
    result = _audit("MiniMaxAI/MiniMax-M3", *NARROW, "--format", "json")
    shown = json.loads(result.stdout)["recipes_source"]
    assert (shown["path"], shown["how"], shown["commit"]) == (".", "current-checkout", head)


@pytest.mark.parametrize("fmt", ["text", "markdown", "sarif", "html", "json"])
def test_recipes_root_option_is_named_in_every_format(
    chdir: object, tmp_path: Path, fmt: str
) -> None:
    assert callable(chdir)
    checkout, head = _git_checkout(tmp_path / "git")
    plain = tmp_path / "plain"
    shutil.copytree(EMBEDDED, plain)
    chdir(tmp_path)
    for root, line in (
        (checkout, f"recipes git/recipes-repo (--recipes-root, git {head[:12]})"),
        (plain, "recipes plain (--recipes-root, not a git checkout)"),
    ):
        result = _audit("--recipes-root", str(root), *NARROW, "--format", fmt)
        assert result.exit_code == 0, result.output
        out = result.stdout
        if fmt == "sarif":
            assert json.loads(out)["runs"][0]["properties"]["recipes"] == line
        elif fmt == "json":
            shown = json.loads(out)["recipes_source"]
            assert shown["path"] == line.split()[1] and shown["how"] == "--recipes-root"
        elif fmt == "html":
            assert json.dumps(line)[1:-1] in out
        else:
            assert line in out.replace("\\", "")


def test_the_pr_audit_names_the_repository_and_the_commits(tmp_path: Path) -> None:
    work, base, head = pr_repo(tmp_path, keep, without_mxfp8_args)
    result = run_pr_audit(
        PrAuditRequest(
            repo=work,
            base=base,
            head=head,
            ledger=LEDGER,
            evidence=EVIDENCE,
            filters=AuditFilters(variants=("mxfp8",), hardware=("b200",), features="none"),
        )
    )
    source = result.diff.recipes_source
    assert source is not None and (source.how, source.commit) == ("--repo", head)
    sides = (result.base_report, result.head_report)
    assert [r.recipes_source.commit for r in sides if r and r.recipes_source] == [base, head]
    for fmt in ("text", "markdown"):
        out = io.StringIO()
        write_pr_audit(result, fmt, out)
        line = f"recipes {work} (--repo, git {head[:12]})"
        assert line in out.getvalue().replace("\\", "")
    out = io.StringIO()
    write_pr_audit(result, "json", out)
    assert json.loads(out.getvalue())["recipes_source"]["commit"] == head


# 2. --recipes-root says what the default is -------------------------------------------


@pytest.mark.parametrize("command", ["audit", "cite", "combos", "explain", "graph", "suggest"])
def test_recipes_root_help_states_the_default_rule(command: str) -> None:
    found = cli.get_command(click.Context(cli), command)
    assert found is not None
    (option,) = [p for p in found.params if "--recipes-root" in p.opts]
    assert isinstance(option, click.Option) and option.help is not None
    assert "checkout at or around the current directory" in option.help
    assert "else the recipes root embedded in provenance" in option.help
    assert "\n" not in option.help  # one line


# 3. A RECIPE the embedded root lacks ---------------------------------------------------


@pytest.mark.parametrize("command", ["audit", "combos", "explain"])
def test_a_recipe_missing_outside_a_checkout_is_a_usage_error_with_a_hint(
    chdir: object, tmp_path: Path, command: str
) -> None:
    assert callable(chdir)
    chdir(tmp_path)
    result = CliRunner().invoke(cli, [command, "Org/Missing-Model"])
    assert result.exit_code == EXIT_USAGE, result.output
    error, hint = result.output.splitlines()
    assert error.startswith("usage error: recipe Org/Missing-Model not found")
    assert "MiniMaxAI/MiniMax-M3" in error  # what the embedded root has
    assert str(REPO_ROOT) not in result.output  # not where the embedded root lies
    assert hint == (
        "  hint: run inside a vllm-project/recipes checkout, or pass --recipes-root DIR"
    )


# 4. A ledger without its evidence directory --------------------------------------------


def test_a_ledger_without_its_evidence_directory_says_so(chdir: object, tmp_path: Path) -> None:
    assert callable(chdir)
    ledger = tmp_path / "data" / "ledger"
    shutil.copytree(LEDGER, ledger)
    # a ledger of its own: one entry cites a record only its own evidence store holds
    entry = ledger / "prs" / "SemiAnalysisAI__InferenceX__1003.yaml"
    text = entry.read_text(encoding="utf-8")
    entry.write_text(text.replace("records:\n", f"records:\n- sha256:{'0' * 64}\n", 1))
    chdir(tmp_path)
    result = _audit("--ledger", "data/ledger", *NARROW)
    assert result.exit_code == EXIT_USAGE, result.output
    assert "integrity" not in result.output
    first = result.output.splitlines()[0]
    assert first.startswith("usage error: evidence directory data/evidence is missing")
    # an evidence directory with no record at all is not the ledger's either
    (tmp_path / "data" / "evidence").mkdir()
    result = _audit("--ledger", "data/ledger", "--evidence", "data/evidence", *NARROW)
    assert result.exit_code == EXIT_USAGE, result.output
    assert "integrity" not in result.output
    assert "evidence directory data/evidence holds no evidence record" in result.output
