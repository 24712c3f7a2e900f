"""The HTML report: compact data that decodes to the audit, escaping, self-containment, diff."""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import io
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from audit_builders import verdict_entry
from hypothesis import given, settings
from hypothesis import strategies as st

from provenance.audit.verdicts import AuditReport, SelectionSet, VerdictEntry
from provenance.model.combination import PdPool, PdSelection, Selection
from provenance.model.ledger import SweepRun
from provenance.model.reasons import VerdictKind
from provenance.report.html import (
    ChangeKind,
    HtmlDiff,
    _runs,
    build_page_data,
    embed_json,
    parse_label,
    pr_url,
    render_html,
    run_url,
)
from provenance.review.diff import diff_reports

JSON_ELEMENT = re.compile(
    r'<script type="application/json" id="provenance-data">(?P<body>.*?)</script>', re.S
)


def decode_runs(runs: list[int]) -> list[int]:
    """The page script's decoding of ``[gap, run, ...]``, restated."""
    out: list[int] = []
    pos = 0
    for gap, run in zip(runs[::2], runs[1::2], strict=True):
        start = pos + gap
        out.extend(range(start, start + run))
        pos = start + run
    return out


def decoded(data: dict[str, Any]) -> dict[str, tuple[int, str]]:
    """Selection label -> (verdict, recipe) for every combination in the page data."""
    strings = data["s"]
    width = data["nf"]
    out: dict[str, tuple[int, str]] = {}
    for group in data["groups"]:
        for code in decode_runs(group[7]):
            shape = data["shapes"][code // width]
            feature = data["features"][code % width]
            label = strings[shape[5]] + strings[feature[1]]
            assert label not in out
            out[label] = (group[1], strings[data["recipes"][group[0]]])
    return out


def page_data(page: str) -> dict[str, Any]:
    match = JSON_ELEMENT.search(page)
    assert match is not None
    data: dict[str, Any] = json.loads(match["body"])
    return data


def all_selections(report: AuditReport) -> list[tuple[Selection, VerdictEntry]]:
    out = []
    for entry in report.verdicts:
        for selection in entry.iter_selections():
            out.append((selection, entry))
    return out


def test_every_combination_decodes_to_its_label_and_verdict(report: AuditReport) -> None:
    data = build_page_data(report)
    expected = {
        s.label(): (0 if e.verdict is VerdictKind.RECOMMENDED else 1, e.recipe)
        for s, e in all_selections(report)
    }
    assert decoded(data) == expected
    assert data["meta"]["combinations"] == len(expected) == 10


def test_identical_outcomes_share_one_group(report: AuditReport) -> None:
    # One entry per selection (an audit that does not group) gives the same groups.
    ungrouped = report.model_copy(
        update={
            "verdicts": tuple(
                dataclasses.replace(e, selections=(SelectionSet.of(s),), combinations=1)
                for s, e in all_selections(report)
            )
        }
    )
    grouped_data = build_page_data(report)
    ungrouped_data = build_page_data(ungrouped)
    assert len(ungrouped_data["groups"]) == len(grouped_data["groups"]) == len(report.verdicts)
    assert decoded(ungrouped_data) == decoded(grouped_data)


def test_cells_columns_and_families(report: AuditReport) -> None:
    data = build_page_data(report)
    strings = data["s"]
    shapes = {(strings[s[1]], strings[s[2]], strings[s[3]], strings[s[4]]) for s in data["shapes"]}
    assert ("nvfp4", "b200", "single-node", "tp") in shapes
    assert ("mxfp8", "b300", "multi-node", "tp · 2n") in shapes
    assert ("nvfp4", "b300", "pd_cluster", "P dep / D tp") in shapes
    features = {strings[f[0]] for f in data["features"]}
    assert {"(no features)", "+tool_calling +reasoning", "+spec_decoding=eagle3"} <= features


def test_flags_evidence_prs_and_sweep_runs(report: AuditReport, sweeps: dict[str, Any]) -> None:
    data = build_page_data(report, sweeps=sweeps)
    strings = data["s"]
    prs = {strings[p[0]]: (strings[p[1]], p[2]) for p in data["prs"]}
    url, runs = prs["SemiAnalysisAI/InferenceX#2120"]
    assert url == "https://github.com/SemiAnalysisAI/InferenceX/pull/2120"
    (run,) = (data["runs"][i] for i in runs)
    assert run[0] == 29984401390
    assert strings[run[2]] == "success"
    assert (
        strings[run[3]] == "https://github.com/SemiAnalysisAI/InferenceX/actions/runs/29984401390"
    )
    # Every flag of every role is in the page with its evidence records.
    flags = {(strings[f[0]], strings[f[1]], bool(f[3])) for f in data["flags"]}
    assert ("speculative_config.method", "eagle3", True) in flags
    # The same flag with and without evidence in scope stays two distinct rows.
    assert {("kv_cache_dtype", "fp8", True), ("kv_cache_dtype", "fp8", False)} <= flags
    reasons = {strings[r[0]]: r for r in data["reasons"]}
    assert strings[reasons["value-mismatch"][3]] == "3"
    assert strings[reasons["value-mismatch"][4]] == "1"


def test_script_json_is_escaped_and_round_trips() -> None:
    nasty = {
        "a": "</script><script>alert(1)</script>",
        "b": "<!-- <script>",
        "c": "x & y > z",
        "d": "line\u2028sep\u2029",
        "e": ["</SCRIPT >", "<\u0000>"],
    }
    text = embed_json(nasty)
    assert "<" not in text and ">" not in text and "&" not in text
    assert "\u2028" not in text and "\u2029" not in text
    assert json.loads(text) == nasty


def test_hostile_values_stay_data(report: AuditReport, facts: dict[str, str]) -> None:
    page = render_html(report)
    assert facts["hostile"] not in page
    # Exactly the two script elements the page defines, and nothing opens a comment.
    assert page.count("<script") == 2
    assert page.lower().count("</script") == 2
    body = JSON_ELEMENT.search(page)
    assert body is not None
    assert "<" not in body["body"]
    assert facts["hostile"] in page_data(page)["s"]


def test_page_is_self_contained(report: AuditReport, sweeps: dict[str, Any]) -> None:
    page = render_html(report, sweeps=sweeps)
    outside_data = JSON_ELEMENT.sub("", page)
    # No external resource of any kind outside the embedded data.
    assert not re.search(r"\b(src|href)\s*=\s*(?![\"']?#)", outside_data)
    assert "<link" not in outside_data and "@import" not in outside_data
    assert "url(" not in outside_data
    assert "http://" not in outside_data and "https://" not in outside_data
    # The CSP admits exactly the page's own script and style, by hash.
    csp = re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', page)
    assert csp is not None
    policy = csp[1].replace("&#x27;", "'")
    assert "default-src 'none'" in policy
    script = re.search(r"<script>(.*?)</script>", page, re.S)
    style = re.search(r"<style>(.*?)</style>", page, re.S)
    assert script is not None and style is not None
    for element, directive in ((script[1], "script-src"), (style[1], "style-src")):
        digest = base64.b64encode(hashlib.sha256(element.encode()).digest()).decode()
        assert f"{directive} 'sha256-{digest}'" in policy


def test_title_is_escaped(make_report: Callable[..., AuditReport]) -> None:
    page = render_html(make_report(recipes=("Org/<b>Name</b>",)))
    assert "<b>Name" not in page
    assert "Org/&lt;b&gt;Name&lt;/b&gt;" in page


@pytest.mark.parametrize(
    ("ref", "url"),
    [
        (
            "SemiAnalysisAI/InferenceX#2120",
            "https://github.com/SemiAnalysisAI/InferenceX/pull/2120",
        ),
        ("#2120", None),
        ('x"/y#1', None),
        ("javascript:alert(1)//x/y#1", None),
        ("a/b#0", None),
        ("a/b#12 ", None),
        ("a/b#12\n", None),
        ("ü/b#12", None),
    ],
)
def test_pr_urls_only_for_pr_refs(ref: str, url: str | None) -> None:
    assert pr_url(ref) == url


def test_run_urls() -> None:
    def run(**kw: Any) -> SweepRun:
        return SweepRun(run_id=42, head_sha="abcdef0", conclusion="success", source="t", **kw)

    assert run_url(run(), "o/r#1") == "https://github.com/o/r/actions/runs/42"
    assert run_url(run(attempt=2), "o/r#1") == "https://github.com/o/r/actions/runs/42/attempts/2"
    assert run_url(run(url="https://github.com/o/r/actions/runs/42"), "x") == (
        "https://github.com/o/r/actions/runs/42"
    )
    assert run_url(run(url="https://evil.example/x"), "o/r#1") == (
        "https://github.com/o/r/actions/runs/42"
    )
    assert run_url(run(url='https://github.com/"onmouseover='), "not a ref") is None


@given(st.lists(st.integers(min_value=0, max_value=5000), max_size=300))
def test_run_length_encoding_round_trips(codes: list[int]) -> None:
    encoded = _runs(codes)
    assert decode_runs(encoded) == sorted(set(codes))
    assert all(n >= 0 for n in encoded)
    assert all(n > 0 for n in encoded[1::2])


_word = st.from_regex(r"[a-z0-9][a-z0-9_]{0,8}", fullmatch=True)


@given(
    variant=_word,
    hardware=_word,
    shape=st.sampled_from(["single_node_tp", "multi_node_tep", "pd_cluster"]),
    nodes=st.integers(1, 16),
    kv=st.none() | _word,
    features=st.lists(st.tuples(_word, st.none() | _word), max_size=4, unique_by=lambda f: f[0]),
)
def test_labels_parse_back(
    variant: str,
    hardware: str,
    shape: str,
    nodes: int,
    kv: str | None,
    features: list[tuple[str, str | None]],
) -> None:
    pd = (
        PdSelection(
            prefill=PdPool(nodes=nodes, parallelism="tp"), decode=PdPool(nodes=1, parallelism="dep")
        )
        if shape == "pd_cluster"
        else None
    )
    selection = Selection(
        variant=variant,
        hardware=hardware,
        strategy=shape,
        node_count=None if pd else nodes,
        pd=pd,
        kv_offload=kv,
        features=tuple(name for name, _ in features),
        feature_modes={name: mode for name, mode in features if mode},
    )
    parsed = parse_label(selection.label())
    assert parsed is not None
    assert parsed.label() == selection.label()


@pytest.mark.parametrize("label", ["", "a · b", "a · b · c · ???", "a ·  · c"])
def test_unparseable_labels(label: str) -> None:
    assert parse_label(label) is None


def test_diff_marks_cells(report: AuditReport) -> None:
    eagle = "nvfp4 · b200 · single_node_tp · 1n · +spec_decoding=eagle3"
    gone = "nvfp4 · h200 · single_node_tp · 1n · +spec_decoding=eagle3_gqa"
    diff = HtmlDiff(
        base="8959cf6",
        head="HEAD",
        changes={
            eagle: ChangeKind.VERDICT_CHANGED,
            "nvfp4 · b200 · single_node_tp · 1n": ChangeKind.FLAGS_CHANGED,
            gone: ChangeKind.REMOVED,
            "not a label": ChangeKind.REMOVED,
        },
    )
    data = build_page_data(report, diff=diff)
    strings = data["s"]
    width = data["nf"]
    marks = {
        strings[data["shapes"][m[0]][5]] + strings[data["features"][m[1]][1]]: strings[m[2]]
        for m in data["diff"]["marks"]
    }
    assert marks == {
        eagle: "verdict-changed",
        "nvfp4 · b200 · single_node_tp · 1n": "flags-changed",
        gone: "removed",
    }
    assert [[strings[u[0]], strings[u[1]]] for u in data["diff"]["unplaced"]] == [
        ["not a label", "removed"]
    ]
    assert strings[data["diff"]["base"]] == "8959cf6"
    # The removed selection's shape exists (for its cell) but holds no combination.
    assert gone not in decoded(data)
    assert width == len(data["features"])


def test_diff_from_review() -> None:
    base = _one_entry_report(VerdictKind.RECOMMENDED)
    head = _one_entry_report(VerdictKind.GUIDE_ONLY)
    html_diff = HtmlDiff.from_review(diff_reports(base, head, base_label="base", head_label="head"))
    assert html_diff.changes == {"v · h · single_node_tp · 1n": ChangeKind.VERDICT_CHANGED}


def _one_entry_report(verdict: VerdictKind) -> AuditReport:
    from provenance.audit.verdicts import AuditSummary, RoleFlags

    entry = verdict_entry(
        recipe="o/m",
        selection=Selection(variant="v", hardware="h", strategy="single_node_tp", node_count=1),
        verdict=verdict,
        roles=(RoleFlags(role="serve", flags=()),),
    )
    summary = AuditSummary(
        combinations=1, recommended=0, guide_only=1, declared=0, undeclared_guide_only=1
    )
    return AuditReport(tool_version="t", recipes=("o/m",), summary=summary, verdicts=(entry,))


@pytest.mark.slow
def test_full_cross_product_page_stays_small(full_report: AuditReport) -> None:
    page = render_html(full_report)
    data = page_data(page)
    assert data["meta"]["combinations"] == full_report.summary.combinations == 71208
    assert len(decoded(data)) == 71208
    assert len(page.encode()) < 5_000_000


def test_write_links_sweep_runs_from_the_report_ledger(
    tmp_path: Path, make_report: Callable[..., AuditReport]
) -> None:
    from provenance.model.ledger import LedgerEntry, PrRef
    from provenance.report.html import write
    from provenance.store.ledger import Ledger

    run = SweepRun(run_id=30018717056, head_sha="40b363d", conclusion="success", source="t")
    Ledger(tmp_path).write_entry(
        LedgerEntry(pr=PrRef(repo="SemiAnalysisAI/InferenceX", number=2314), sweeps=(run,))
    )
    out = io.StringIO()
    write(make_report(ledger=str(tmp_path)), out)
    strings = page_data(out.getvalue())["s"]
    assert "https://github.com/SemiAnalysisAI/InferenceX/actions/runs/30018717056" in strings
    out = io.StringIO()
    write(make_report(ledger=str(tmp_path / "absent")), out)
    assert not any("actions/runs" in s for s in page_data(out.getvalue())["s"])


@settings(max_examples=60)
@given(st.recursive(st.text(), lambda inner: st.lists(inner) | st.dictionaries(st.text(), inner)))
def test_embedded_json_never_contains_markup_characters(value: Any) -> None:
    text = embed_json(value)
    assert not set(text) & {"<", ">", "&", "\u2028", "\u2029"}
    assert json.loads(text) == value


def test_several_recipes_and_omni(make_report: Callable[..., AuditReport]) -> None:
    base = make_report()
    other = verdict_entry(
        recipe="Org/Omni",
        selection=Selection(variant="default", hardware="h200", strategy=None, node_count=None),
        verdict=VerdictKind.GUIDE_ONLY,
        roles=(),
    )
    report = base.model_copy(
        update={"recipes": (*base.recipes, "Org/Omni"), "verdicts": (*base.verdicts, other)}
    )
    data = build_page_data(report)
    strings = data["s"]
    assert [strings[r] for r in data["recipes"]] == ["MiniMaxAI/MiniMax-M3", "Org/Omni"]
    omni = [s for s in data["shapes"] if strings[data["recipes"][s[0]]] == "Org/Omni"]
    assert [(strings[s[3]], strings[s[4]], strings[s[5]]) for s in omni] == [
        ("omni", "omni", "default · h200 · omni")
    ]
    assert decoded(data)["default · h200 · omni"] == (1, "Org/Omni")
