"""``provenance audit --repo/--base/--head`` of a PR in which a changed recipe does not load:
the invalid recipe is a located error naming ``<commit>:<path>``, the other recipes are
audited and diffed, the report is written and the command exits 3 when the head is broken
(docs/audit.md, "Invalid recipes in a pull request")."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import git
import pytest
from click.testing import CliRunner
from recipes_repo import commit_all, work_tree
from recipes_support import FIXTURE_ROOT

from provenance.cli.main import cli
from provenance.report.pr_json import read_pr

GOOD, BROKEN = "models/Toy/Toy-1.yaml", "models/Toy/Toy-2.yaml"
#: the unknown key that breaks a recipe; its escape sequence must not reach any output raw
BAD_KEY = "bogus\x1b[31m_key"


def _break(path: Path) -> int:
    """Append an unknown key to the recipe file; the line it is on."""
    text = path.read_text(encoding="utf-8").rstrip("\n")
    path.write_text(f'{text}\n"{BAD_KEY.replace(chr(27), chr(92) + "e")}": 1\n', "utf-8")
    return len(path.read_text(encoding="utf-8").splitlines())


def _change_good(work: Path) -> None:
    """A valid change to Toy-1 that changes its fp4 combinations' major flags."""
    path = work / GOOD
    text = path.read_text(encoding="utf-8")
    assert '"--nv", "variant"' in text
    path.write_text(text.replace('"--nv", "variant"', '"--nv", "variant2"'), "utf-8")


@pytest.fixture
def repo(tmp_path: Path) -> git.Repo:
    """A git repository of the toy root with two recipes, Toy-1 and Toy-2."""
    work = tmp_path / "recipes-repo"
    shutil.copytree(FIXTURE_ROOT, work)
    shutil.copy(work / GOOD, work / BROKEN)
    found = git.Repo.init(work)
    found.git.config("user.email", "t@example.invalid")
    found.git.config("user.name", "t")
    for name in ("ledger", "evidence"):
        (tmp_path / name).mkdir()
    return found


def _pr_audit(repo: git.Repo, base: str, head: str, *args: str) -> tuple[int, str, str]:
    where = work_tree(repo).parent
    result = CliRunner().invoke(
        cli,
        [
            "audit", "--repo", str(work_tree(repo)), "--base", base, "--head", head,
            "--ledger", str(where / "ledger"), "--evidence", str(where / "evidence"),
            "--features", "none", *args,
        ],
    )  # fmt: skip
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    return result.exit_code, result.stdout, result.stderr


def _head_breaks_one(repo: git.Repo) -> tuple[str, str, int]:
    """Base: both recipes valid. Head: Toy-1 changed validly, Toy-2 broken."""
    base = commit_all(repo, "base")
    _change_good(work_tree(repo))
    line = _break(work_tree(repo) / BROKEN)
    return base, commit_all(repo, "head: change Toy-1, break Toy-2"), line


def test_head_breaking_one_recipe_blocks_reports_it_and_diffs_the_other(
    repo: git.Repo, tmp_path: Path
) -> None:
    base, head, line = _head_breaks_one(repo)
    output = tmp_path / "diff.json"
    code, out, err = _pr_audit(repo, base, head, "--format", "json", "--output", str(output))
    assert code == 3, err
    assert out == ""
    diff = read_pr(output.read_text(encoding="utf-8"))
    assert [(e.path, e.line, e.key_path, e.message) for e in diff.errors] == [
        (f"{head[:12]}:{BROKEN}", line, BAD_KEY, "unknown key")
    ]
    assert diff.base_errors == ()
    assert not diff.gate.passed and diff.gate.invalid == 1
    # Toy-1 is audited on both sides and diffed: its fp4 combinations changed flags
    changed = {(g.recipe, g.kind) for g in diff.changes}
    assert ("Toy/Toy-1", "flags-changed") in changed
    assert any(e.value == "variant2" for e in diff.lens)
    # Toy-2 is not audited in the head: its base combinations are gone
    assert {g.kind for g in diff.changes if g.recipe == "Toy/Toy-2"} == {"removed"}
    assert diff.summary.removed > 0
    data = json.loads(output.read_text(encoding="utf-8"))
    assert data["gate"]["invalid"] == 1 and "base_errors" not in data
    assert f"invalid input: {head[:12]}:{BROKEN}:{line} (" in err
    assert "unknown key" in err and "\x1b" not in err


def test_head_error_is_at_the_top_of_every_readable_output(repo: git.Repo) -> None:
    base, head, line = _head_breaks_one(repo)
    where = f"{head[:12]}:{BROKEN}:{line} ("
    for fmt in ("text", "markdown"):
        code, out, _ = _pr_audit(repo, base, head, "--format", fmt)
        assert code == 3
        assert "\x1b" not in out
        top = out[: out.index("PR audit")]
        assert "gate: FAIL" in top and "invalid in the head" in top
        assert where in top and "unknown key" in top
        assert "Toy/Toy-1" in out
    code, out, _ = _pr_audit(repo, base, head, "--format", "html")
    assert code == 3
    gate = out[out.index('<section id="gate"') :]
    gate = gate[: gate.index("</section>")]
    assert "gate-fail" in gate and where in gate and "\x1b" not in out
    code, out, _ = _pr_audit(repo, base, head, "--format", "sarif")
    assert code == 3
    run = json.loads(out)["runs"][0]
    (error,) = [r for r in run["results"] if r["ruleId"] == "invalid-recipe"]
    location = error["locations"][0]["physicalLocation"]
    assert location == {"artifactLocation": {"uri": BROKEN}, "region": {"startLine": line}}
    assert run["tool"]["driver"]["rules"][error["ruleIndex"]]["id"] == "invalid-recipe"


def test_head_fixing_a_broken_recipe_is_a_notice_and_its_combinations_are_new(
    repo: git.Repo,
) -> None:
    line = _break(work_tree(repo) / BROKEN)
    base = commit_all(repo, "base: Toy-2 broken")
    shutil.copy(work_tree(repo) / GOOD, work_tree(repo) / BROKEN)
    _change_good(work_tree(repo))
    head = commit_all(repo, "head: fix Toy-2, change Toy-1")
    code, out, err = _pr_audit(repo, base, head, "--format", "json")
    diff = read_pr(out)
    assert diff.errors == () and diff.gate.invalid == 0
    # Toy-2 counts as added: its verified claims (no evidence backs any) are new, but
    # InferenceX never ran a Toy model: outside its coverage, reported, not blocking
    assert code == 0, err
    assert diff.claims == () and diff.gate.claims == 0
    assert diff.claims_reported and {c.recipe for c in diff.claims_reported} == {"Toy/Toy-2"}
    assert {c.coverage for c in diff.claims_reported} == {"outside-coverage"}
    assert diff.gate.blocking == 0 and diff.gate.claims_reported == len(diff.claims_reported)
    assert [(e.path, e.line) for e in diff.base_errors] == [(f"{base[:12]}:{BROKEN}", line)]
    fixed = [g for g in diff.changes if g.recipe == "Toy/Toy-2"]
    assert fixed and {g.kind for g in fixed} == {"new"}
    assert sum(g.combinations for g in fixed) == diff.summary.new
    assert ("Toy/Toy-1", "flags-changed") in {(g.recipe, g.kind) for g in diff.changes}
    data = json.loads(out)
    assert "errors" not in data and "invalid" not in data["gate"]
    assert "invalid input" not in err
    code, out, _ = _pr_audit(repo, base, head, "--format", "text")
    assert code == 0
    top = out[: out.index("PR audit")]
    assert "gate: PASS" in top and "invalid in the head" not in top
    assert "new claim(s) outside InferenceX coverage" in top.splitlines()[0]
    assert "notice: 1 recipe(s) invalid in the base" in top
    assert f"{base[:12]}:{BROKEN}:{line} (" in top


def test_valid_pr_json_has_no_error_fields(repo: git.Repo) -> None:
    base = commit_all(repo, "base")
    _change_good(work_tree(repo))
    head = commit_all(repo, "head")
    code, out, _ = _pr_audit(repo, base, head, "--format", "json")
    assert code == 0
    data = json.loads(out)
    assert "errors" not in data and "base_errors" not in data and "invalid" not in data["gate"]
