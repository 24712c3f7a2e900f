"""Unreachable combinations (reason ``unreachable``) grouped apart in the JSON summary,
the HTML page (its own server-written section, the matrix cells marked apart) and
``provenance explain`` (the other reasons marked secondary)."""

from __future__ import annotations

import io
import json
import re

from unreachable_sample import (
    NO_EVIDENCE,
    RECIPE,
    UNEVIDENCED,
    UNREACHABLE,
    WHY,
    guide_entry,
    make,
    sample,
)

from provenance.audit.explain import Explanation
from provenance.audit.verdicts import Reason, UnreachableGroup
from provenance.model.combination import Selection
from provenance.model.reasons import ReasonCode, VerdictKind
from provenance.report import explain_text, json_report
from provenance.report.html import build_page_data, render_html, unreachable_section


def test_the_summary_lists_the_unreachable_groups() -> None:
    report = sample()
    assert report.summary.unreachable == (
        UnreachableGroup(
            recipe=RECIPE,
            variant="nvfp4",
            hardware="b300",
            strategy="single_node_tp",
            combinations=3,
            why=WHY,
        ),
    )
    assert report.summary.by_reason["unreachable"] == 3
    out = io.StringIO()
    json_report.write(report, out)
    assert json.loads(out.getvalue())["summary"]["unreachable"] == [
        {
            "recipe": RECIPE,
            "variant": "nvfp4",
            "hardware": "b300",
            "strategy": "single_node_tp",
            "combinations": 3,
            "why": WHY,
        }
    ]


def test_two_reasons_why_make_two_groups_and_none_makes_no_key() -> None:
    other = Reason(code=ReasonCode.UNREACHABLE, detail="every point: 2 prefill workers")
    report = make(
        [
            guide_entry("nvfp4", "b300", "pd_cluster", (UNREACHABLE,)),
            guide_entry("nvfp4", "b300", "pd_cluster", (other,)),
        ]
    )
    assert [(g.why, g.combinations) for g in report.summary.unreachable] == [
        (WHY, 1),
        ("every point: 2 prefill workers", 1),
    ]
    reachable = make([guide_entry("nvfp4", "b200", "single_node_tp", (UNEVIDENCED,))])
    assert reachable.summary.unreachable == ()
    out = io.StringIO()
    json_report.write(reachable, out)
    assert "unreachable" not in json.loads(out.getvalue())["summary"]
    assert "unreachable" not in reachable.summary.model_dump()


def test_the_html_page_has_a_section_of_unreachable_groups() -> None:
    page = render_html(sample())
    section = re.search(r'<section id="unreachable".*?</section>', page, re.DOTALL)
    assert section is not None
    text = section.group(0)
    assert "Unreachable groups (1): no recipe edit reaches evidence — 3 combination(s)" in text
    assert "<td><code>nvfp4</code></td><td><code>b300</code></td>" in text
    assert "<td>single_node_tp</td><td>3</td>" in text
    assert f"<td>{WHY}</td>" in text
    assert "b200" not in text and "h100" not in text
    # written on the server, outside the element the script rebuilds, after the matrices
    assert page.index('<main id="app"') < page.index('<section id="unreachable"')
    assert page.index("</main>") < page.index('<section id="unreachable"')


def test_the_unreachable_section_escapes_every_value() -> None:
    hostile = UnreachableGroup(
        recipe="<img src=x onerror=alert(1)>",
        variant="v</td><script>",
        hardware='h"\x1b[31m',
        strategy=None,
        combinations=1,
        why="<b>&amp;</b>",
    )
    text = unreachable_section([hostile])
    assert "<img" not in text and "<script>" not in text and "<b>" not in text
    assert "&lt;img src=x onerror=alert(1)&gt;" in text
    assert "&lt;b&gt;&amp;amp;&lt;/b&gt;" in text
    assert "\x1b" not in text
    assert "<td>omni</td>" in text
    assert unreachable_section([]) == ""
    assert '<section id="unreachable"' not in render_html(make([]))


def test_the_page_data_carries_the_unreachable_reason_and_groups() -> None:
    """The script marks a cell unreachable from its groups' reason codes and the
    summary; both reach the page data."""
    data = build_page_data(sample())
    codes = {data["s"][reason[0]] for reason in data["reasons"]}
    assert "unreachable" in codes
    assert data["meta"]["summary"]["unreachable"][0]["combinations"] == 3


def _explanation(reasons: tuple[Reason, ...]) -> Explanation:
    return Explanation(
        recipe=RECIPE,
        selection=Selection(
            variant="nvfp4", hardware="b300", strategy="single_node_tp", node_count=1
        ),
        commands=(),
        major={},
        checkpoint="org/model-nvfp4",
        hardware="b300",
        kind="single-node",
        candidates=(),
        verdict=VerdictKind.GUIDE_ONLY,
        roles=(),
        reasons=reasons,
        nearest=(),
        evidence=(),
    )


def test_explain_marks_the_other_reasons_of_an_unreachable_combination_secondary() -> None:
    out = io.StringIO()
    explain_text.write(_explanation((UNEVIDENCED, UNREACHABLE, NO_EVIDENCE)), out)
    verdict = out.getvalue().split("5. verdict: guide-only\n", 1)[1].splitlines()
    assert verdict == [
        f"   - unreachable — {WHY}",
        "   secondary (no recipe edit reaches evidence, so fixing these alone cannot help):",
        "   - secondary: flag-unevidenced prefill x=1",
        "   - secondary: no-evidence",
    ]


def test_explain_of_a_reachable_combination_marks_nothing_secondary() -> None:
    out = io.StringIO()
    explain_text.write(_explanation((UNEVIDENCED,)), out)
    assert "secondary" not in out.getvalue()
    assert "   - flag-unevidenced prefill x=1\n" in out.getvalue()
