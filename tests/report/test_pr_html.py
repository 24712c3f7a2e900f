"""The PR page shows the gate: PASS or FAIL and why, then the blocking list in order."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path

import pytest
from click.testing import CliRunner
from recipes_history import HISTORY, replay_pr682
from recipes_repo import REPO_ROOT

from provenance.audit.verdicts import Claim, Reason
from provenance.cli.main import cli
from provenance.model.reasons import ReasonCode
from provenance.report.pr_html import HtmlGate, gate_section
from provenance.report.pr_json import read_pr
from provenance.review.diff import DiffReport

LEDGER, EVIDENCE = REPO_ROOT / "ledger", REPO_ROOT / "evidence"
HOSTILE = '<img src=x onerror="alert(1)">&\x1b[31m'


class _Gate(HTMLParser):
    """The text of the gate section, its category headings in order, and every tag."""

    def __init__(self) -> None:
        super().__init__()
        self.depth = 0
        self.text: list[str] = []
        self.categories: list[str] = []
        self.tags: list[tuple[str, list[tuple[str, str | None]]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "section" and ("id", "gate") in attrs:
            self.depth = 1
        elif self.depth:
            self.depth += tag == "section"
        if self.depth:
            self.tags.append((tag, attrs))
            category = dict(attrs).get("data-category")
            if tag == "h2" and category:
                self.categories.append(category)

    def handle_endtag(self, tag: str) -> None:
        if self.depth and tag == "section":
            self.depth -= 1

    def handle_data(self, data: str) -> None:
        if self.depth:
            self.text.append(data)


def _parse(page: str) -> _Gate:
    parser = _Gate()
    parser.feed(page)
    return parser


@pytest.mark.corpus
def test_pr682_page_shows_gate_fail_and_the_4_regressions_first(tmp_path: Path) -> None:
    if not HISTORY.is_dir():
        pytest.skip("../shared/corpus is absent")
    work, base, head = replay_pr682(tmp_path)
    args = [
        "audit", "--repo", str(work), "--base", base, "--head", head,
        "--ledger", str(LEDGER), "--evidence", str(EVIDENCE),
    ]  # fmt: skip
    runner = CliRunner()
    page = runner.invoke(cli, [*args, "--format", "html"])
    assert page.exit_code == 1
    diff = read_pr(runner.invoke(cli, [*args, "--format", "json"]).stdout)
    gate = _parse(page.stdout)
    text = " ".join(gate.text)
    assert text.lstrip().startswith("gate: FAIL — 4 regressed, 1 new unbacked claim(s)")
    assert gate.categories == ["regressed-verdict", "new-claim", "new-unevidenced-flag"]
    assert "Regressed: was recommended, now guide-only — 4 combination(s)" in text
    regressed = sum(g.combinations for g in diff.changes if g.block_reason == "regressed-verdict")
    assert regressed == 4
    # every blocking group of the markdown's grouping is on the page, in the same order
    expected = HtmlGate.from_review(diff)
    items = [t for t in gate.tags if t[0] == "li"]
    assert len(items) == len(expected.groups) > 0
    assert "serve: attention_config.indexer_kv_dtype=fp8" in text
    # the gate sits before the matrices (server-written: it needs no script)
    assert page.stdout.index('id="gate"') < page.stdout.index('id="app"')


def _hostile_diff() -> DiffReport:
    from provenance.audit.verdicts import SelectionSet
    from provenance.model.combination import Selection
    from provenance.model.reasons import VerdictKind
    from provenance.review.diff import ChangeGroup, DiffSummary, FlagChanges, GateResult

    selection = SelectionSet.of(Selection(HOSTILE, "b200", "single_node_tp", 1))
    group = ChangeGroup(
        recipe=HOSTILE,
        kind="flags-changed",
        base_verdict=VerdictKind.RECOMMENDED,
        head_verdict=VerdictKind.GUIDE_ONLY,
        flags=FlagChanges(added={"serve": {"evil": HOSTILE}}),
        reasons=(
            Reason(
                code=ReasonCode.FLAG_UNEVIDENCED, role="serve", flag="evil", recipe_value=HOSTILE
            ),
        ),
        blocking=True,
        block_reason="regressed-verdict",
        combinations=1,
        selections=(selection,),
    )
    claim = Claim(recipe=HOSTILE, hardware=HOSTILE, claim="verified", recommended=0,
                  detail=HOSTILE)  # fmt: skip
    return DiffReport(
        base="b", head="h", recipes=(HOSTILE,),
        summary=DiffSummary(base_combinations=1, head_combinations=1, new=0, removed=0,
                            verdict_changed=1, flags_changed=0),
        changes=(group,), lens=(), claims=(claim,),
        gate=GateResult(passed=False, blocking=1, declared=0, claims=1),
    )  # fmt: skip


def test_hostile_values_are_escaped_in_the_gate_section() -> None:
    section = gate_section(HtmlGate.from_review(_hostile_diff()))
    gate = _parse(section)
    assert {tag for tag, _ in gate.tags} <= {
        "section",
        "p",
        "strong",
        "h2",
        "ol",
        "li",
        "code",
        "table",
        "thead",
        "tbody",
        "tr",
        "th",
        "td",
    }
    assert not any(name.startswith("on") for _, attrs in gate.tags for name, _ in attrs)
    assert "<img" not in section and "\x1b" not in section
    text = "".join(gate.text)
    assert '<img src=x onerror="alert(1)">&\\x1b[31m' in text  # shown, inert
    assert gate.categories == ["regressed-verdict", "new-claim"]
    assert re.search(r'class="gate gate-fail"', section)
