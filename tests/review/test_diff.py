from __future__ import annotations

import dataclasses

from audit_builders import verdict_entry

from provenance.audit.verdicts import (
    AuditReport,
    AuditSummary,
    EvidenceRef,
    FlagProvenance,
    Reason,
    RoleFlags,
    VerdictEntry,
)
from provenance.model.combination import Selection
from provenance.model.reasons import ReasonCode, VerdictKind
from provenance.review.diff import CombinationChange, DiffReport, diff_reports


def changes(diff: DiffReport) -> list[CombinationChange]:
    """The diff one combination at a time."""
    return list(diff.iter_changes())


REC = VerdictKind.RECOMMENDED
GUIDE = VerdictKind.GUIDE_ONLY
PR2120 = EvidenceRef(record="sha256:aa", prs=("SemiAnalysisAI/InferenceX#2120",))


def sel(variant: str, hardware: str, features: tuple[str, ...] = ()) -> Selection:
    return Selection(
        variant=variant,
        hardware=hardware,
        strategy="single_node_tp",
        node_count=1,
        features=features,
    )


def entry(
    selection: Selection,
    verdict: VerdictKind,
    flags: dict[str, tuple[str, bool]],
    declared_by: str | None = None,
) -> VerdictEntry:
    provs = tuple(
        FlagProvenance(key=k, value=v, cls="major", evidence=(PR2120,) if backed else ())
        for k, (v, backed) in flags.items()
    )
    reasons = () if verdict is REC else (Reason(code=ReasonCode.FLAG_UNEVIDENCED),)
    return verdict_entry(
        recipe="MiniMaxAI/MiniMax-M3",
        selection=selection,
        verdict=verdict,
        roles=(RoleFlags(role="serve", node_rank=None, flags=provs),),
        reasons=reasons,
        declared_by=declared_by,
    )


def report(*entries: VerdictEntry) -> AuditReport:
    rec = sum(1 for e in entries if e.verdict is REC)
    return AuditReport(
        tool_version="test",
        recipes=("MiniMaxAI/MiniMax-M3",),
        summary=AuditSummary(
            combinations=len(entries),
            recommended=rec,
            guide_only=len(entries) - rec,
            declared=0,
            undeclared_guide_only=len(entries) - rec,
        ),
        verdicts=entries,
    )


TP8 = {"tensor_parallel_size": ("8", True)}
INDEXER = {"attention_config.indexer_kv_dtype": ("fp8", True)}
INDEXER_UNBACKED = {"attention_config.indexer_kv_dtype": ("fp8", False)}


def test_unchanged_reports_have_no_changes_and_pass() -> None:
    base = report(entry(sel("nvfp4", "b200"), REC, TP8))
    diff = diff_reports(base, base, base_label="a", head_label="b")
    assert changes(diff) == [] and diff.changes == ()
    assert diff.gate.passed


def test_added_flag_is_listed_per_role_in_lens_with_evidence_or_absence() -> None:
    base = report(entry(sel("nvfp4", "b200"), REC, TP8), entry(sel("nvfp4", "h200"), GUIDE, TP8))
    head = report(
        entry(sel("nvfp4", "b200"), REC, TP8 | INDEXER),
        entry(sel("nvfp4", "h200"), GUIDE, TP8 | INDEXER_UNBACKED),
    )
    diff = diff_reports(base, head, base_label="a", head_label="b")
    assert [c.kind for c in changes(diff)] == ["flags-changed", "flags-changed"]
    # The h200 combination was guide-only already, but now carries an unevidenced flag.
    blocking = [c for c in changes(diff) if c.blocking]
    assert [(c.selection.hardware, c.block_reason) for c in blocking] == [
        ("h200", "new-unevidenced-flag")
    ]
    assert blocking[0].flags.added == {"serve": {"attention_config.indexer_kv_dtype": "fp8"}}
    (lens,) = diff.lens
    assert (lens.key, lens.value, lens.evidenced, lens.unevidenced) == (
        "attention_config.indexer_kv_dtype",
        "fp8",
        1,
        1,
    )
    assert not diff.gate.passed


def test_new_guide_only_blocks_unless_declared() -> None:
    base = report(entry(sel("nvfp4", "b200"), REC, TP8))
    new_sel = sel("nvfp4", "b200", ("spec_decoding",))
    head = report(entry(sel("nvfp4", "b200"), REC, TP8), entry(new_sel, GUIDE, TP8))
    diff = diff_reports(base, head, base_label="a", head_label="b")
    assert [(c.kind, c.block_reason) for c in changes(diff)] == [("new", "new-guide-only")]
    declared = report(
        entry(sel("nvfp4", "b200"), REC, TP8), entry(new_sel, GUIDE, TP8, declared_by="d1")
    )
    diff = diff_reports(base, declared, base_label="a", head_label="b")
    assert diff.gate.passed and diff.gate.declared == 1


def test_verdict_regression_and_removal() -> None:
    base = report(entry(sel("nvfp4", "b200"), REC, TP8), entry(sel("mxfp8", "b200"), REC, TP8))
    head = report(entry(sel("nvfp4", "b200"), GUIDE, TP8))
    diff = diff_reports(base, head, base_label="a", head_label="b")
    kinds = {(c.selection.variant, c.kind, c.block_reason) for c in changes(diff)}
    assert kinds == {("nvfp4", "verdict-changed", "regressed-verdict"), ("mxfp8", "removed", None)}
    assert diff.summary.removed == 1 and diff.summary.verdict_changed == 1


def test_guide_only_with_carried_unevidenced_flag_does_not_block() -> None:
    base = report(entry(sel("nvfp4", "h200"), GUIDE, INDEXER_UNBACKED))
    head = report(entry(sel("nvfp4", "h200"), GUIDE, INDEXER_UNBACKED | TP8))
    diff = diff_reports(base, head, base_label="a", head_label="b")
    # tensor_parallel_size is backed; the unbacked indexer was already there.
    assert diff.gate.passed
    assert changes(diff)[0].kind == "flags-changed"


def test_no_base_means_everything_new() -> None:
    head = report(entry(sel("nvfp4", "b200"), REC, TP8), entry(sel("nvfp4", "h200"), GUIDE, TP8))
    diff = diff_reports(None, head, base_label="-", head_label="b")
    assert diff.summary.new == 2 and diff.gate.blocking == 1


def _pd_entry(
    hardware: str, verdict: VerdictKind, flags: dict[str, tuple[str, bool]]
) -> VerdictEntry:
    """One verdict entry of 3 feature choices × 2 prefill pools × 1 decode pool (6 combinations)."""
    from provenance.audit.verdicts import FeatureChoice, PdPools, SelectionSet
    from provenance.model.combination import PdPool

    base = entry(sel("nvfp4", hardware), verdict, flags)
    pools = PdPools(
        prefill=(PdPool(nodes=1, parallelism="tp"), PdPool(nodes=2, parallelism="tp")),
        decode=(PdPool(nodes=1, parallelism="dep"),),
    )
    choices = tuple(FeatureChoice(features=f) for f in ((), ("a",), ("b",)))
    block = SelectionSet(
        variant="nvfp4",
        hardware=hardware,
        strategy="pd_cluster",
        node_count=None,
        features=choices,
        pd=pools,
    )
    return dataclasses.replace(base, selections=(block,), combinations=block.count)


def test_renderers_count_combinations_of_selection_sets() -> None:
    from provenance.report.diff import blocking_groups, change_rows, lens_rows

    base = report(_pd_entry("h200", GUIDE, TP8))
    head = report(_pd_entry("h200", GUIDE, TP8 | INDEXER_UNBACKED))
    diff = diff_reports(base, head, base_label="a", head_label="b")
    assert len(changes(diff)) == 6 and len(diff.changes) == 1
    ((key, group),) = blocking_groups(diff.changes)
    assert key[1:] == ("nvfp4", "h200", "pd_cluster", "new-unevidenced-flag")
    assert group.count == 6
    assert group.added == {"serve: attention_config.indexer_kv_dtype=fp8": 6}
    assert change_rows(diff.changes) == [
        (("flags-changed", "MiniMaxAI/MiniMax-M3", "nvfp4", "h200", "pd_cluster"), 6)
    ]
    ((row_key, row),) = lens_rows(diff.lens[0])
    assert row_key == ("nvfp4", "h200", "pd_cluster", "serve")
    assert (row.evidenced, row.unevidenced) == (0, 6)
    assert (diff.lens[0].evidenced, diff.lens[0].unevidenced) == (0, 6)


def test_markdown_and_text_stay_bounded_for_many_changed_shapes() -> None:
    import io

    from provenance.report.diff import (
        MAX_CHANGE_ROWS,
        MAX_GROUPS,
        write_markdown,
        write_text,
    )

    hardware = [f"hw{i:03d}" for i in range(150)]
    base = report(*(entry(sel("nvfp4", hw), GUIDE, TP8) for hw in hardware))
    head = report(*(entry(sel("nvfp4", hw), GUIDE, TP8 | INDEXER_UNBACKED) for hw in hardware))
    diff = diff_reports(base, head, base_label="a", head_label="b")
    assert diff.gate.blocking == 150
    markdown, text = io.StringIO(), io.StringIO()
    write_markdown(diff, markdown)
    write_text(diff, text)
    md = markdown.getvalue()
    assert f"… {150 - MAX_GROUPS} more groups in the JSON output." in md
    assert f"… {150 - MAX_CHANGE_ROWS} more rows in the JSON output." in md
    assert len(md) < 65536  # a GitHub comment's limit
    assert f"… {150 - MAX_CHANGE_ROWS} more rows in the JSON output" in text.getvalue()


def test_json_reads_back_and_matches_the_published_schema() -> None:
    import json

    import jsonschema

    from provenance.schemas import generate

    base = report(_pd_entry("h200", GUIDE, TP8), entry(sel("nvfp4", "b200"), REC, TP8))
    head = report(_pd_entry("h200", GUIDE, TP8 | INDEXER_UNBACKED))
    diff = diff_reports(base, head, base_label="a", head_label="b")
    text = diff.model_dump_json(by_alias=True)
    assert DiffReport.model_validate_json(text) == diff
    document = json.loads(text)
    assert document["schema"] == "provenance.diff/v2"
    jsonschema.validate(document, generate("diff"))
