"""The SARIF of a PR carries only what the PR introduces, on the lines the PR changed."""

from __future__ import annotations

import json
import re
import subprocess
from difflib import unified_diff
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from recipes_history import HISTORY, MODEL, replay_pr682
from recipes_repo import REPO_ROOT, keep, pr_repo

from provenance.cli.main import cli
from provenance.report.pr_json import read_pr
from provenance.report.sarif import changed_lines

LEDGER, EVIDENCE = REPO_ROOT / "ledger", REPO_ROOT / "evidence"
HUNK = re.compile(r"^@@ -\d+(?:,\d+)? \+(?P<start>\d+)(?:,(?P<count>\d+))? @@")


def _written_lines(before: str, after: str) -> set[int]:
    """Head lines the diff adds or replaces, read off the hunks of a unified diff."""
    lines: set[int] = set()
    for line in unified_diff(before.splitlines(), after.splitlines(), lineterm="", n=0):
        found = HUNK.match(line)
        if found:
            start, count = int(found["start"]), int(found["count"] or 1)
            lines.update(range(start, start + count))
    return lines


def _show(work: Path, rev: str) -> str:
    return subprocess.run(
        ["git", "-C", str(work), "show", f"{rev}:{MODEL}"],
        check=True, capture_output=True, text=True,
    ).stdout  # fmt: skip


def _audit(work: Path, base: str, head: str, fmt: str, *extra: str) -> tuple[int, str]:
    args = [
        "audit", "--repo", str(work), "--base", base, "--head", head,
        "--ledger", str(LEDGER), "--evidence", str(EVIDENCE), *extra, "--format", fmt,
    ]  # fmt: skip
    result = CliRunner().invoke(cli, args)
    return result.exit_code, result.stdout


def _results(sarif_text: str) -> list[dict[str, Any]]:
    sarif = json.loads(sarif_text)
    results: list[dict[str, Any]] = sarif["runs"][0]["results"]
    rules = sarif["runs"][0]["tool"]["driver"]["rules"]
    for result in results:
        assert rules[result["ruleIndex"]]["id"] == result["ruleId"]
    return results


def _line(result: dict[str, Any]) -> int:
    line: int = result["locations"][0]["physicalLocation"]["region"]["startLine"]
    return line


@pytest.mark.corpus
def test_pr682_sarif_has_only_introduced_results_on_changed_lines(tmp_path: Path) -> None:
    if not HISTORY.is_dir():
        pytest.skip("../shared/corpus is absent")
    work, base, head = replay_pr682(tmp_path)
    code, text = _audit(work, base, head, "sarif")
    assert code == 1
    results = _results(text)
    diff = read_pr(_audit(work, base, head, "json")[1])
    written = _written_lines(_show(work, base), _show(work, head))
    assert written and changed_lines(_show(work, base), _show(work, head)) == written
    assert results
    blocking = {str(g.block_reason) for g in diff.changes if g.blocking}
    reasons = {
        (g.block_reason, r.code.value, r.role, r.flag, r.recipe_value)
        for g in diff.changes
        if g.blocking
        for r in g.reasons
    }
    blocked = {
        c: sum(g.combinations for g in diff.changes if g.block_reason == c) for c in blocking
    }
    per_category: dict[str, int] = {}
    for result in results:
        assert _line(result) in written, result["message"]["text"]
        assert result["level"] == "error"
        props = result["properties"]
        if result["ruleId"] == "new-claim":
            assert props["gate"] == "new-claim"
            continue
        assert props["gate"] in blocking
        key = (props["gate"], result["ruleId"], props["role"], props["flag"], props["recipeValue"])
        assert key in reasons
        example = result["message"]["text"].rsplit("e.g. ", 1)[1]
        assert example.split(" · ")[0] in {"nvfp4", "mxfp8"}  # the variants #682 changed
        per_category[props["gate"]] = max(per_category.get(props["gate"], 0), props["combinations"])
    assert all(per_category[c] <= blocked[c] for c in per_category)
    assert set(per_category) == blocking
    assert sum(r["ruleId"] == "new-claim" for r in results) == len(diff.claims)
    # the whole-recipe SARIF of the head has far more (and places them anywhere)
    subprocess.run(["git", "-C", str(work), "checkout", "-q", head], check=True)
    every = CliRunner().invoke(
        cli, ["audit", "--recipes-root", str(work), "--ledger", str(LEDGER),
              "--evidence", str(EVIDENCE), "--format", "sarif"],
    )  # fmt: skip
    all_results = _results(every.stdout)
    assert len(all_results) > len(results)
    assert any(_line(r) not in written for r in all_results)


def test_pr_that_blocks_nothing_has_an_empty_sarif(tmp_path: Path) -> None:
    def retitle(data: dict[str, Any]) -> None:
        data["meta"]["title"] = "MiniMax-M3, retitled"

    work, base, head = pr_repo(tmp_path, keep, retitle)
    code, text = _audit(work, base, head, "sarif", "--variant", "nvfp4", "--hardware", "b200")
    assert code == 0
    assert _results(text) == []


def test_new_claim_is_on_the_line_that_adds_it(tmp_path: Path) -> None:
    def unclaimed(data: dict[str, Any]) -> None:
        data["meta"]["hardware"].pop("mi300x")

    def claim(data: dict[str, Any]) -> None:
        data["meta"]["hardware"]["mi300x"] = "verified"

    work, base, head = pr_repo(tmp_path, unclaimed, claim)
    code, text = _audit(work, base, head, "sarif", "--hardware", "mi300x", "--features", "none")
    assert code == 1
    (result,) = _results(text)
    assert result["ruleId"] == "new-claim" and result["properties"]["gate"] == "new-claim"
    after = _show(work, head)
    assert _line(result) in _written_lines(_show(work, base), after)
    assert after.splitlines()[_line(result) - 1].strip() == "mi300x: verified"


def test_changed_lines_of_a_deletion_and_of_a_new_file() -> None:
    assert changed_lines("a\nb\nc\n", "a\nc\n") == {2}
    assert changed_lines("a\nb\n", "a\n") == {1}
    assert changed_lines("a\nb\n", "a\nB\nc\n") == {2, 3}
    assert changed_lines(None, "x\ny\n") == {1, 2}
