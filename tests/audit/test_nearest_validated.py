"""``nearest`` is the nearest *validated* evidence point when one is in scope, and
``nearest_overall`` the nearest of all when that is another (closer, unvalidated) point.

On the embedded MiniMax-M3 recipe and evidence: no mxfp8 · h200 · single_node_tp point
is validated (no recorded sweep ran a Hopper MXFP8 record), so ``nearest`` there is
the nearest overall, labelled unvalidated, and nothing else is shown; on nvfp4 · b200 ·
single_node_tp some combinations (the agentic MTP ones) are nearer an unvalidated point
than any validated one, and every output shows the validated one first.
"""

from __future__ import annotations

import io
import json
from collections.abc import Sequence

from click.testing import CliRunner

from provenance.audit.pipeline import AuditFilters, AuditInputs, run_audit
from provenance.audit.verdicts import AuditReport, NearestEvidence, VerdictEntry
from provenance.cli.main import cli
from provenance.model.reasons import VerdictKind
from provenance.report import markdown, text
from provenance.report.grouping import group_rows, nearest_label

RECIPE = "MiniMaxAI/MiniMax-M3"


def _report(variant: str, hardware: str = "b200") -> AuditReport:
    filters = AuditFilters(
        variants=(variant,), hardware=(hardware,), strategies=("single_node_tp",)
    )
    return run_audit(AuditInputs(recipes=(RECIPE,)), filters)


def _total(points: tuple[NearestEvidence, ...]) -> int:
    return sum(p.distance for p in points)


def test_without_a_validated_point_nearest_is_the_nearest_overall() -> None:
    report = _report("mxfp8", "h200")
    entries = [e for e in report.verdicts if e.verdict is VerdictKind.GUIDE_ONLY]
    assert entries and all(e.nearest for e in entries)
    assert not any(n.validated for e in entries for n in e.nearest)
    assert not any(e.nearest_overall for e in entries)


def _split(entries: Sequence[VerdictEntry]) -> list[VerdictEntry]:
    return [e for e in entries if e.nearest_overall]


def test_nearest_is_validated_and_the_closer_point_is_shown_beside_it() -> None:
    report = _report("nvfp4")
    split = _split(report.verdicts)
    assert split
    for entry in split:
        assert all(n.validated for n in entry.nearest)
        assert not any(n.validated for n in entry.nearest_overall)
        assert entry.nearest[0].record != entry.nearest_overall[0].record
        assert _total(entry.nearest_overall) < _total(entry.nearest)
        assert [n.role for n in entry.nearest] == [n.role for n in entry.nearest_overall]
    # an entry whose nearest point overall is validated shows only that one
    for entry in report.verdicts:
        if entry.nearest and entry.nearest[0].validated and not entry.nearest_overall:
            break
    else:
        raise AssertionError("no entry's nearest point is validated")


def test_the_summaries_head_the_validated_point_first() -> None:
    report = _report("nvfp4")
    (entry, *_) = _split(report.verdicts)
    (row,) = [r for r in group_rows(report) if r.variant == "nvfp4"]
    headings = [heading for heading, _, _ in row.nearest_lines()]
    assert headings[0] == "nearest validated"
    assert "nearest overall" in headings
    assert nearest_label(entry.nearest_overall) in row.nearest_overall
    out = io.StringIO()
    text.write(report, out, width=400)
    written = out.getvalue()
    assert "nearest validated (" in written and "nearest overall (" in written
    assert written.index("nearest validated (") < written.index("nearest overall (")
    md = io.StringIO()
    markdown.write(report, md)
    assert "nearest validated: " in md.getvalue() and "<br>nearest overall: " in md.getvalue()


def test_explain_lists_the_validated_point_then_the_closer_one() -> None:
    """nvfp4 · b200 · single_node_tp without features: the nearest validated point is
    further than an unvalidated one; explain names both, validated first, and the JSON
    carries both with their ``validated`` flag."""
    args = [
        "explain", RECIPE, "--variant", "nvfp4", "--hardware", "b200",
        "--strategy", "single_node_tp",
    ]  # fmt: skip
    runner = CliRunner()
    shown = runner.invoke(cli, args)
    assert shown.exit_code == 0, shown.output
    lines = [line.strip() for line in shown.stdout.splitlines() if "nearest" in line]
    validated = [line for line in lines if line.startswith("nearest validated for serve:")]
    overall = [line for line in lines if line.startswith("nearest overall for serve:")]
    assert len(validated) == 1 and len(overall) == 1
    assert lines.index(validated[0]) < lines.index(overall[0])
    data = json.loads(runner.invoke(cli, [*args, "--format", "json"]).stdout)
    (near,), (far,) = data["nearest"], data["nearest_overall"]
    assert near["validated"] is True and far["validated"] is False
    assert far["distance"] < near["distance"]
    assert f"{near['config_key']} (" in validated[0] and f"{far['config_key']} (" in overall[0]
