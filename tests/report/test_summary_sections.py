"""The summary-first text and markdown audits: sections, counted cuts, ``--all``, merged
reverse rows and the unclassified environment variables that decided verdicts."""

from __future__ import annotations

import io
import json

import pytest
from audit_builders import verdict_entry
from click.testing import CliRunner

from provenance.audit.summary import summarise
from provenance.audit.verdicts import (
    AuditReport,
    AuditSummary,
    Claim,
    NearestEvidence,
    Reason,
    ReverseEntry,
    VerdictEntry,
)
from provenance.model.combination import Selection
from provenance.model.reasons import ReasonCode, VerdictKind
from provenance.report import json_report, markdown, text
from provenance.report.formats import write_report
from provenance.report.grouping import distinct_reverse, sections

RECIPE = "Org/Model"
FAR = "f0" * 32  # an evidence record the schema cannot express
NEAR = "a0" * 32


def _guide(
    variant: str,
    hardware: str,
    strategy: str,
    reasons: tuple[Reason, ...],
    nearest: tuple[NearestEvidence, ...] = (),
) -> VerdictEntry:
    selection = Selection(variant=variant, hardware=hardware, strategy=strategy, node_count=1)
    return verdict_entry(
        recipe=RECIPE,
        selections=[selection],
        verdict=VerdictKind.GUIDE_ONLY,
        roles=(),
        reasons=reasons,
        nearest=nearest,
    )


def _near(record: str, key: str, **diff: dict[str, str]) -> NearestEvidence:
    return NearestEvidence(
        record=record,
        config_key=key,
        prs=("o/r#7",),
        role="serve",
        distance=len(diff.get("only_recipe", {})) + len(diff.get("only_evidence", {})),
        only_recipe=diff.get("only_recipe", {}),
        only_evidence=diff.get("only_evidence", {}),
    )


NO_EVIDENCE = (Reason(code=ReasonCode.NO_EVIDENCE),)
UNEVIDENCED = (Reason(code=ReasonCode.FLAG_UNEVIDENCED, role="serve", flag="x", recipe_value="1"),)
UNREACHABLE = Reason(code=ReasonCode.UNREACHABLE, detail="every point: 2 prefill workers")


def make(verdicts: list[VerdictEntry], **fields: object) -> AuditReport:
    defaults: dict[str, object] = {
        "tool_version": "0",
        "recipes": (RECIPE,),
        "summary": summarise(verdicts, sum(v.combinations for v in verdicts)),
        "verdicts": tuple(verdicts),
    }
    return AuditReport.model_validate({**defaults, **fields})


def sample() -> AuditReport:
    """One fixable, one unreachable and three unbenchmarked groups (two share a line)."""
    verdicts = [
        _guide("bf16", "h100", "single_node_tp", NO_EVIDENCE),
        _guide("bf16", "h100", "pd_cluster", NO_EVIDENCE),
        _guide("bf16", "b200", "single_node_tp", NO_EVIDENCE),
        _guide(
            "fp4",
            "b200",
            "single_node_tp",
            UNEVIDENCED,
            (_near(NEAR, "fp4-b200", only_recipe={"x": "1"}),),
        ),
        _guide(
            "fp4",
            "b300",
            "pd_cluster",
            (UNREACHABLE, *UNEVIDENCED),
            (_near(FAR, "fp4-b300-disagg", only_evidence={"y": "2"}),),
        ),
    ]
    reverse = (
        ReverseEntry(
            record=FAR,
            config_key="fp4-b300-disagg",
            prs=("o/r#7",),
            status="not-expressible",
            why="2 prefill workers",
        ),
        ReverseEntry(record=NEAR, config_key="fp4-b200", status="not-reproduced", why="w"),
        ReverseEntry(record="b1" * 32, config_key="fp4-b200", status="not-reproduced", why="w"),
    )
    return make(verdicts, reverse=reverse)


def test_groups_fall_into_the_summary_sections() -> None:
    parts = sections(sample())
    assert [(r.variant, r.hardware) for r in parts.actionable] == [("fp4", "b200")]
    assert parts.actionable[0].top_nearest() == ("fp4-b200 [o/r#7]: serve +x=1", 1)
    [(row, why)] = parts.unreachable
    assert (row.variant, row.hardware, row.strategy) == ("fp4", "b300", "pd_cluster")
    assert why == "every point: 2 prefill workers"
    lines = [(u.variant, u.hardware, u.strategies, u.combinations) for u in parts.unbenchmarked]
    assert lines == [
        ("bf16", "h100", ("single_node_tp", "pd_cluster"), 2),
        ("bf16", "b200", ("single_node_tp",), 1),
    ]
    assert parts.backed == []


def test_only_the_unreachable_reason_decides_the_group() -> None:
    """Not the old heuristics: a topology mismatch, or nearest evidence the reverse
    direction calls not-expressible, leaves a group actionable; so does one cell of the
    group without ``unreachable``. No evidence in scope (a match of another kind only) is
    unbenchmarked."""
    topology = Reason(code=ReasonCode.TOPOLOGY_MISMATCH, role="prefill")
    far = (_near(FAR, "fp4-b300-disagg", only_evidence={"y": "2"}),)
    report = make(
        [
            _guide("fp4", "b300", "pd_cluster", (topology,)),
            _guide("fp4", "b200", "pd_cluster", UNEVIDENCED, far),
            _guide("fp4", "gb200", "pd_cluster", (UNREACHABLE, *UNEVIDENCED), far),
            _guide("fp4", "gb200", "pd_cluster", UNEVIDENCED, far),
            _guide("fp4", "h100", "pd_cluster", (*NO_EVIDENCE, topology)),
        ],
        reverse=sample().reverse,
    )
    parts = sections(report)
    assert parts.unreachable == []
    assert {r.hardware for r in parts.actionable} == {"b300", "b200", "gb200"}
    assert [u.hardware for u in parts.unbenchmarked] == ["h100"]


def test_reverse_rows_that_read_the_same_are_merged() -> None:
    rows = distinct_reverse(sample().reverse)
    assert [(r.entry.config_key, r.entry.status, r.records) for r in rows] == [
        ("fp4-b300-disagg", "not-expressible", 1),
        ("fp4-b200", "not-reproduced", 2),
    ]
    out = io.StringIO()
    text.write(sample(), out, width=200)
    assert "evidence points in scope (reverse direction): 2 distinct of 3" in out.getvalue()


def test_text_is_summary_first_and_counts_its_cuts(monkeypatch: pytest.MonkeyPatch) -> None:
    out = io.StringIO()
    text.write(sample(), out, width=200)
    output = out.getvalue()
    heads = ["1. claims against evidence", "2. actionable groups (1)", "3. unreachable groups (1)"]
    heads.append("4. unbenchmarked: 3 combination(s)")
    positions = [output.index(h) for h in heads]
    assert positions == sorted(positions)
    assert "provenance suggest Org/Model" in output
    assert "bf16 · h100: 2 (single_node_tp, pd_cluster)" in output
    assert "not shown" not in output
    monkeypatch.setattr(text, "MAX_UNBENCHMARKED", 1)
    out = io.StringIO()
    text.write(sample(), out, width=200)
    assert "… 1 more variant × hardware lines not shown (all of them: provenance audit --all" in (
        out.getvalue()
    )
    out = io.StringIO()
    text.write(sample(), out, width=200, show_all=True)
    assert "not shown" not in out.getvalue()
    assert "bf16 · b200: 1" in out.getvalue()


def _large() -> AuditReport:
    """A report the size of a many-recipe audit: thousands of groups, claims and points."""
    verdicts = []
    for index in range(3000):
        hardware = f"hw{index:04d}"
        nearest = (_near(f"{index:064x}", f"key-{index}", only_recipe={f"flag{index}": "v" * 40}),)
        verdicts.append(_guide("fp4", hardware, "single_node_tp", UNEVIDENCED, nearest))
        verdicts.append(_guide("bf16", hardware, "single_node_tp", NO_EVIDENCE))
    claims = tuple(
        Claim(recipe=RECIPE, hardware=f"hw{i:04d}", claim="verified", recommended=0, detail="d")
        for i in range(500)
    )
    reverse = tuple(
        ReverseEntry(
            record=f"{i:064x}", config_key=f"key-{i}", status="not-reproduced", why="w" * 80
        )
        for i in range(2000)
    )
    return make(verdicts, claims=claims, reverse=reverse)


def test_markdown_of_a_large_audit_fits_a_github_comment() -> None:
    out = io.StringIO()
    markdown.write(_large(), out)
    output = out.getvalue()
    assert len(output) <= markdown.BUDGET < markdown.COMMENT_LIMIT
    heads = ["### 1. Claims", "### 2. Actionable groups (3000)", "### 3. Unreachable groups (0)"]
    heads += ["### 4. Unbenchmarked: 3000", "### Evidence points in scope: 2000 distinct of 2000"]
    positions = [output.index(h) for h in heads]
    assert positions == sorted(positions)
    for what in ("actionable groups", "variant × hardware lines", "distinct evidence points"):
        assert f"more {what} not shown; all of them: `provenance audit --all" in output
    full = io.StringIO()
    write_report(_large(), "markdown", full, show_all=True)
    assert "not shown" not in full.getvalue()
    assert full.getvalue().count("| fp4 | hw") == 3000


def test_unclassified_environment_variables_are_listed_everywhere() -> None:
    reasons = (
        Reason(
            code=ReasonCode.FLAG_UNEVIDENCED, role="serve", flag="env:MY_LOADER", recipe_value="1"
        ),
        Reason(
            code=ReasonCode.MISSING_FLAG, role="serve", flag="env:VLLM_KNOWN", evidence_value="1"
        ),
    )
    verdicts = [_guide("fp4", "b200", "single_node_tp", reasons)]
    summary = summarise(verdicts, 1, lambda key: key == "env:VLLM_KNOWN")
    assert summary.unclassified_env == {"env:MY_LOADER": 1}
    report = make(verdicts, summary=summary)
    out = io.StringIO()
    text.write(report, out, width=200)
    assert "environment variables no policy rule names" in out.getvalue()
    assert "    env:MY_LOADER (1)" in out.getvalue()
    out = io.StringIO()
    markdown.write(report, out)
    assert "- `env:MY_LOADER` (1)" in out.getvalue()
    out = io.StringIO()
    json_report.write(report, out)
    assert json.loads(out.getvalue())["summary"]["unclassified_env"] == {"env:MY_LOADER": 1}
    # when every name is classified the JSON has no such key (its form is unchanged)
    plain = AuditSummary.model_validate(summarise(verdicts, 1, lambda key: True).model_dump())
    assert "unclassified_env" not in plain.model_dump()


def test_audit_all_lifts_the_cuts() -> None:
    args = ["audit", "--variant", "nvfp4", "--hardware", "b300", "--features", "default"]
    runner = CliRunner(env={"COLUMNS": "160", "NO_COLOR": "1"})
    from provenance.cli.main import cli

    cut = runner.invoke(cli, args)
    full = runner.invoke(cli, [*args, "--all"])
    assert cut.exit_code == full.exit_code == 0, cut.output + full.output
    assert "not shown (all of them: provenance audit --all" in cut.output
    assert "not shown" not in full.output
    assert len(full.output) > len(cut.output)


def test_the_nearest_difference_is_capped_and_all_lifts_the_cap() -> None:
    many = {f"flag{i}": "1" for i in range(10)}
    near = (_near(NEAR, "fp4-b200", only_recipe=many),)
    report = make([_guide("fp4", "b200", "single_node_tp", UNEVIDENCED, near)])
    [row] = sections(report).actionable
    label = row.top_nearest()
    assert label is not None
    assert label[0].endswith("+flag5=1; … 4 more (all of them: provenance explain)")
    [row] = sections(report, show_all=True).actionable
    label = row.top_nearest()
    assert label is not None and label[0].endswith("+flag9=1")
