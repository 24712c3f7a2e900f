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


def test_new_guide_only_with_an_unevidenced_flag_blocks_unless_declared() -> None:
    base = report(entry(sel("nvfp4", "b200"), REC, TP8))
    new_sel = sel("nvfp4", "b200", ("spec_decoding",))
    head = report(
        entry(sel("nvfp4", "b200"), REC, TP8), entry(new_sel, GUIDE, TP8 | INDEXER_UNBACKED)
    )
    diff = diff_reports(base, head, base_label="a", head_label="b")
    assert [(c.kind, c.block_reason) for c in changes(diff)] == [("new", "new-guide-only")]
    declared = report(
        entry(sel("nvfp4", "b200"), REC, TP8),
        entry(new_sel, GUIDE, TP8 | INDEXER_UNBACKED, declared_by="d1"),
    )
    diff = diff_reports(base, declared, base_label="a", head_label="b")
    assert diff.gate.passed and diff.gate.declared == 1


def test_new_guide_only_whose_every_flag_has_evidence_is_reported_not_blocked() -> None:
    # guide-only for another reason (here the fixture's flag-unevidenced code, in real
    # audits e.g. missing-flag or never-jointly-observed): no flag of it is new and unbacked
    base = report(entry(sel("nvfp4", "b200"), REC, TP8))
    new_sel = sel("nvfp4", "b200", ("spec_decoding",))
    head = report(entry(sel("nvfp4", "b200"), REC, TP8), entry(new_sel, GUIDE, TP8))
    diff = diff_reports(base, head, base_label="a", head_label="b")
    assert [(c.kind, c.blocking, c.unbenchmarked) for c in changes(diff)] == [("new", False, False)]
    assert diff.gate.passed


def _unreachable(e: VerdictEntry) -> VerdictEntry:
    return dataclasses.replace(e, reasons=(*e.reasons, Reason(code=ReasonCode.UNREACHABLE)))


def test_unreachable_cells_never_block() -> None:
    base = report(entry(sel("nvfp4", "h200"), GUIDE, TP8))
    head = report(_unreachable(entry(sel("nvfp4", "h200"), GUIDE, TP8 | INDEXER_UNBACKED)))
    diff = diff_reports(base, head, base_label="a", head_label="b")
    assert [c.kind for c in changes(diff)] == ["flags-changed"]
    assert diff.gate.passed and diff.gate.blocking == 0
    # the control: the same change in a reachable cell blocks
    reachable = report(entry(sel("nvfp4", "h200"), GUIDE, TP8 | INDEXER_UNBACKED))
    assert not diff_reports(base, reachable, base_label="a", head_label="b").gate.passed


def test_one_unbacked_value_for_another_is_reported_not_blocked() -> None:
    drafter = "speculative_config.model"
    base = report(entry(sel("nvfp4", "h200"), GUIDE, TP8 | {drafter: ("draft-a", False)}))
    head = report(entry(sel("nvfp4", "h200"), GUIDE, TP8 | {drafter: ("draft-b", False)}))
    diff = diff_reports(base, head, base_label="a", head_label="b")
    (change,) = changes(diff)
    assert change.flags.changed == {"serve": {drafter: ("draft-a", "draft-b")}}
    assert not change.blocking and diff.gate.passed
    # an evidenced value replaced by an unevidenced one made it worse: it blocks
    backed = report(entry(sel("nvfp4", "h200"), GUIDE, TP8 | {drafter: ("draft-a", True)}))
    worse = diff_reports(backed, head, base_label="a", head_label="b")
    assert [c.block_reason for c in changes(worse)] == ["new-unevidenced-flag"]


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
    head = report(
        entry(sel("nvfp4", "b200"), REC, TP8),
        entry(sel("nvfp4", "h200"), GUIDE, TP8 | INDEXER_UNBACKED),
    )
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
    from provenance.report.diff import blocking_groups, lens_rows

    base = report(_pd_entry("h200", GUIDE, TP8))
    head = report(_pd_entry("h200", GUIDE, TP8 | INDEXER_UNBACKED))
    diff = diff_reports(base, head, base_label="a", head_label="b")
    assert len(changes(diff)) == 6 and len(diff.changes) == 1
    (group,) = blocking_groups(diff.changes)
    assert (group.category, group.flag) == (
        "new-unevidenced-flag",
        "serve: attention_config.indexer_kv_dtype=fp8",
    )
    assert group.count == 6
    ((cell_key, cell),) = group.cells.items()
    assert cell_key == ("nvfp4", "h200")
    assert (cell.count, cell.strategies, cell.features) == (6, {"pd_cluster"}, {"a", "b"})
    ((row_key, row),) = lens_rows(diff.lens[0])
    assert row_key == ("nvfp4", "h200")
    assert (row.evidenced, row.unevidenced) == (0, 6)
    assert (diff.lens[0].evidenced, diff.lens[0].unevidenced) == (0, 6)


def test_blocking_groups_follow_the_category_order_not_their_size() -> None:
    from provenance.report.diff import blocking_groups

    many = [f"hw{i}" for i in range(5)]
    base = report(
        entry(sel("nvfp4", "b200"), REC, TP8),
        *(entry(sel("mxfp8", hw), GUIDE, TP8) for hw in many),
    )
    head = report(
        entry(sel("nvfp4", "b200"), GUIDE, TP8 | INDEXER),
        *(entry(sel("mxfp8", hw), GUIDE, TP8 | INDEXER_UNBACKED) for hw in many),
    )
    groups = blocking_groups(diff_reports(base, head, base_label="a", head_label="b").changes)
    assert [(g.category, g.count) for g in groups] == [
        ("regressed-verdict", 1),
        ("new-unevidenced-flag", 5),
    ]
    assert {g.flag for g in groups} == {"serve: attention_config.indexer_kv_dtype=fp8"}
    assert len(groups[1].cells) == 5


def test_markdown_and_text_stay_bounded_and_count_what_they_leave_out() -> None:
    import io
    import re

    from provenance.report.diff import (
        GITHUB_COMMENT_LIMIT,
        MAX_CELLS,
        TEXT_MAX_ROWS,
        json_command,
        write_markdown,
        write_text,
    )

    long = "x" * 300  # long untrusted names: the budget, not the row caps, must cut
    hardware = [f"hw{i:04d}{long}" for i in range(1500)]
    base = report(*(entry(sel(f"v{i % 7}{long}", hw), GUIDE, TP8) for i, hw in enumerate(hardware)))
    head = report(
        *(
            entry(
                sel(f"v{i % 7}{long}", hw), GUIDE, TP8 | INDEXER_UNBACKED | {f"k{i}": ("1", False)}
            )
            for i, hw in enumerate(hardware)
        )
    )
    diff = diff_reports(base, head, base_label="a", head_label="b")
    assert diff.gate.blocking == 1500
    markdown, text = io.StringIO(), io.StringIO()
    write_markdown(diff, markdown)
    write_text(diff, text)
    md, txt = markdown.getvalue(), text.getvalue()
    assert md.startswith("**gate: FAIL")
    assert len(md) < GITHUB_COMMENT_LIMIT
    # every cut says how many it left out, and how to see them all
    shown_groups = md.count("New major flag or value")
    left = [int(n) for n in re.findall(r"… (\d+) more blocking group", md)]
    assert left and shown_groups + left[0] == 1500
    assert "`" + json_command(diff) + "`" in md
    assert txt.startswith("gate: FAIL")
    assert txt.count("New major flag or value") == 1500  # the text drops no group
    assert MAX_CELLS < TEXT_MAX_ROWS


def test_text_lists_cut_rows_with_a_count_and_the_command() -> None:
    import io

    from provenance.report.diff import TEXT_MAX_ROWS, json_command, write_text

    hardware = [f"hw{i:04d}" for i in range(TEXT_MAX_ROWS + 7)]
    base = report(*(entry(sel("nvfp4", hw), GUIDE, TP8) for hw in hardware))
    head = report(*(entry(sel("nvfp4", hw), GUIDE, TP8 | INDEXER_UNBACKED) for hw in hardware))
    diff = diff_reports(base, head, base_label="a", head_label="b")
    text = io.StringIO()
    write_text(diff, text)
    out = text.getvalue()
    assert f"… 7 more cell(s) not shown; all of them: {json_command(diff)}" in out
    assert out.count("nvfp4 · hw") == 2 * TEXT_MAX_ROWS  # the group's cells and the lens


def test_json_reads_back_and_matches_the_published_schema() -> None:
    import io
    import json

    import jsonschema

    from provenance.report.diff import write_json
    from provenance.report.pr_json import read_pr
    from provenance.schemas import generate

    base = report(_pd_entry("h200", GUIDE, TP8), entry(sel("nvfp4", "b200"), REC, TP8))
    head = report(_pd_entry("h200", GUIDE, TP8 | INDEXER_UNBACKED))
    diff = diff_reports(base, head, base_label="a", head_label="b")
    out = io.StringIO()
    write_json(diff, out)
    text = out.getvalue()
    assert read_pr(text) == diff
    document = json.loads(text)
    assert document["schema"] == "provenance.diff/v4"
    jsonschema.validate(document, generate("diff"))


def test_a_recipe_the_pr_fixes_is_reported_not_blocked() -> None:
    """Invalid in the base, valid in the head: its combinations are all new, but they were
    there before, broken; the PR cannot have made them worse (the one that broke the
    recipe was the one to block). The same head against a base without the recipe blocks."""
    from provenance.audit.verdicts import Claim, RecipeError

    path = "models/MiniMaxAI/MiniMax-M3.yaml"
    claim = Claim(recipe="MiniMaxAI/MiniMax-M3", hardware="h200", claim="verified", recommended=0)
    head = report(entry(sel("nvfp4", "h200"), GUIDE, TP8 | INDEXER_UNBACKED)).model_copy(
        update={"recipe_files": {"MiniMaxAI/MiniMax-M3": path}, "claims": (claim,)}
    )
    broken = report().model_copy(
        update={"errors": (RecipeError(path=f"a:{path}", line=3, message="bad"),)}
    )
    diff = diff_reports(broken, head, base_label="a", head_label="b")
    assert diff.gate.passed and diff.claims == () and diff.claims_reported == (claim,)
    assert [(c.kind, c.blocking) for c in changes(diff)] == [("new", False)]
    assert [e.path for e in diff.base_errors] == [f"a:{path}"]
    # the control: added by the PR (no base error), the same head blocks twice over
    added = diff_reports(report(), head, base_label="a", head_label="b")
    assert not added.gate.passed and added.claims == (claim,)
    assert [c.block_reason for c in changes(added)] == ["new-guide-only"]
