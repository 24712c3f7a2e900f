"""The grouped diff (pairs of verdict entries, selection sets) equals the selection-by-selection
diff (``per_selection_diff``) combination by combination: on the benchmark PR (the whole
MiniMax-M3 cross-product, base without mxfp8's ``extra_args``), a PR that removes a
variant, and small reports whose two sides cut the selections differently."""

from __future__ import annotations

from pathlib import Path

import pytest
from audit_builders import verdict_entry
from per_selection_diff import assert_same_as_per_selection
from recipes_repo import keep, pr_repo, without_mxfp8_args

from provenance.audit.verdicts import (
    AuditReport,
    AuditSummary,
    EvidenceRef,
    FeatureChoice,
    FlagProvenance,
    PdPools,
    Reason,
    RoleFlags,
    SelectionSet,
    VerdictEntry,
)
from provenance.model.combination import PdPool
from provenance.model.reasons import ReasonCode, VerdictKind
from provenance.review import pr_audit
from provenance.review.diff import diff_reports
from provenance.review.pr_audit import PrAuditRequest, run_pr_audit


def _without_mxfp8(data: dict[str, object]) -> None:
    variants = data["variants"]
    assert isinstance(variants, dict)
    variants.pop("mxfp8")


@pytest.mark.slow
@pytest.mark.parametrize(
    ("edit_base", "edit_head", "kinds"),
    [
        # the benchmark PR: re-adds the FP8 indexer cache of mxfp8 (~17k combinations)
        (without_mxfp8_args, keep, {"flags-changed"}),
        (keep, _without_mxfp8, {"removed"}),
    ],
)
def test_whole_minimax_m3_pr_diff_equals_per_selection_diff(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    edit_base: object,
    edit_head: object,
    kinds: set[str],
) -> None:
    # both sides audited whole (test_pr_narrowing.py covers the narrowed base)
    monkeypatch.setattr(pr_audit, "variant_change", lambda *args: None)
    work, base, head = pr_repo(tmp_path, edit_base, edit_head)
    result = run_pr_audit(PrAuditRequest(repo=work, base=base, head=head))
    changed = assert_same_as_per_selection(result.diff, result.base_report, result.head_report)
    assert changed > 1000
    assert {g.kind for g in result.diff.changes} == kinds


# Small reports whose sides cut the same selections into different sets and entries.

P1, P2 = PdPool(nodes=1, parallelism="tp"), PdPool(nodes=2, parallelism="dep")
D1, D2 = PdPool(nodes=1, parallelism="dep"), PdPool(nodes=1, parallelism="tp")
PLAIN = FeatureChoice()
SPEC = FeatureChoice(features=("spec_decoding",), feature_modes={"spec_decoding": "mtp"})
TOOLS = FeatureChoice(features=("tool_calling",))
REF = EvidenceRef(record="sha256:aa", prs=("o/r#1",))


def _set(
    features: tuple[FeatureChoice, ...],
    prefill: tuple[PdPool, ...] = (),
    decode: tuple[PdPool, ...] = (),
    hardware: str = "b200",
) -> SelectionSet:
    return SelectionSet(
        variant="nvfp4",
        hardware=hardware,
        strategy="pd_cluster" if prefill else "single_node_tp",
        node_count=None if prefill else 1,
        features=features,
        pd=PdPools(prefill=prefill, decode=decode) if prefill else None,
    )


def _entry(
    sets: tuple[SelectionSet, ...],
    verdict: VerdictKind,
    flags: dict[str, tuple[str, bool]],
    declared_by: str | None = None,
) -> VerdictEntry:
    provs = tuple(
        FlagProvenance(key=k, value=v, cls="major", evidence=(REF,) if backed else ())
        for k, (v, backed) in flags.items()
    )
    roles = (RoleFlags(role="prefill", flags=provs), RoleFlags(role="decode", flags=provs))
    return verdict_entry(
        recipe="o/m",
        selections=sets,
        verdict=verdict,
        roles=roles,
        reasons=()
        if verdict is VerdictKind.RECOMMENDED
        else (Reason(code=ReasonCode.FLAG_UNEVIDENCED),),
        declared_by=declared_by,
    )


def _report(*entries: VerdictEntry) -> AuditReport:
    count = sum(e.combinations for e in entries)
    return AuditReport(
        tool_version="test",
        recipes=("o/m",),
        summary=AuditSummary(
            combinations=count, recommended=0, guide_only=0, declared=0, undeclared_guide_only=0
        ),
        verdicts=entries,
    )


REC, GUIDE = VerdictKind.RECOMMENDED, VerdictKind.GUIDE_ONLY
TP = {"tensor_parallel_size": ("8", True)}
FP8 = {"kv_cache_dtype": ("fp8", False)}
FP8_OK = {"kv_cache_dtype": ("fp8", True)}


def test_sets_cut_differently_on_each_side_give_the_per_selection_diff() -> None:
    base = _report(
        # one set on the base, split by feature and by pool on the head
        _entry((_set((PLAIN, SPEC, TOOLS), (P1, P2), (D1, D2)),), REC, TP),
        _entry((_set((PLAIN, SPEC), hardware="h200"),), GUIDE, TP),
        _entry((_set((TOOLS,), hardware="h200"),), GUIDE, TP | FP8, declared_by="d"),
        _entry((_set((PLAIN,), hardware="mi355x"),), REC, TP),
    )
    head = _report(
        _entry((_set((PLAIN, TOOLS), (P1, P2), (D1, D2)),), REC, TP),
        _entry((_set((SPEC,), (P1,), (D1, D2)),), GUIDE, TP | FP8),
        _entry((_set((SPEC,), (P2,), (D1,)),), REC, TP | FP8_OK),
        # h200: merged into one entry; an unevidenced flag more for PLAIN and SPEC
        _entry((_set((PLAIN, SPEC, TOOLS), hardware="h200"),), GUIDE, TP | FP8),
        # mi355x gone; a new hardware
        _entry((_set((PLAIN, SPEC), hardware="gb200"),), GUIDE, TP | FP8),
    )
    for before, after in ((base, head), (head, base), (None, head), (base, None), (base, base)):
        diff = diff_reports(before, after, base_label="a", head_label="b")
        assert_same_as_per_selection(diff, before, after)
    diff = diff_reports(base, head, base_label="a", head_label="b")
    assert {g.kind for g in diff.changes} == {"new", "removed", "flags-changed", "verdict-changed"}
    assert {g.block_reason for g in diff.changes} == {
        None,
        "new-guide-only",
        "new-unevidenced-flag",
        "regressed-verdict",
    }
    # the split P2 x D2 selection set is rebuilt as compact sets, not one per selection
    assert sum(len(g.selections) for g in diff.changes) < sum(g.combinations for g in diff.changes)
