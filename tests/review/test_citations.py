from __future__ import annotations

import dataclasses

from audit_builders import verdict_entry

from provenance.audit.verdicts import (
    AuditReport,
    AuditSummary,
    EvidenceRef,
    FlagProvenance,
    NearestEvidence,
    Reason,
    RoleFlags,
)
from provenance.model.combination import PdPool, PdSelection, Selection
from provenance.model.ledger import EvalScore, LedgerEntry, PrRef, SweepRun
from provenance.model.reasons import ReasonCode, VerdictKind
from provenance.review.citations import build_citations, render_citations
from provenance.review.served import PrStanding

IX = "SemiAnalysisAI/InferenceX"
REF_2120 = EvidenceRef(record="sha256:11", prs=(f"{IX}#2120",))
REF_2314 = EvidenceRef(record="sha256:22", prs=(f"{IX}#2314",))


def _single(hardware: str) -> Selection:
    return Selection(variant="nvfp4", hardware=hardware, strategy="single_node_tp", node_count=1)


def _pd() -> Selection:
    pool = PdPool(nodes=1, parallelism="tp")
    return Selection(
        variant="nvfp4",
        hardware="b300",
        strategy="pd_cluster",
        node_count=None,
        pd=PdSelection(prefill=pool, decode=pool),
        features=("spec_decoding",),
        feature_modes={"spec_decoding": "eagle3_gqa"},
    )


def _report() -> AuditReport:
    indexer = FlagProvenance(
        key="attention_config.indexer_kv_dtype", value="fp8", cls="major", evidence=(REF_2120,)
    )
    recommended = verdict_entry(
        recipe="MiniMaxAI/MiniMax-M3",
        selections=(_single("b200"), _single("b300")),
        verdict=VerdictKind.RECOMMENDED,
        roles=(RoleFlags(role="serve", flags=(indexer,)),),
        evidence=(REF_2120,),
    )
    k3 = FlagProvenance(
        key="speculative_config.num_speculative_tokens",
        value="3",
        cls="major",
        evidence=(REF_2314,),
    )
    mismatch = Reason(
        code=ReasonCode.VALUE_MISMATCH,
        role="prefill",
        flag="speculative_config.num_speculative_tokens",
        recipe_value="3",
        evidence_value="1",
        sources=(f"{IX}#2314",),
    )
    guide = verdict_entry(
        recipe="MiniMaxAI/MiniMax-M3",
        selection=_pd(),
        verdict=VerdictKind.GUIDE_ONLY,
        roles=(RoleFlags(role="prefill", node_rank=0, flags=(k3,)),),
        reasons=(mismatch,),
        nearest=(
            NearestEvidence(
                record="sha256:22", config_key="k", prs=(f"{IX}#2314",), role="prefill", distance=1
            ),
        ),
    )
    return AuditReport(
        tool_version="t",
        recipes=("MiniMaxAI/MiniMax-M3",),
        summary=AuditSummary(
            combinations=3, recommended=2, guide_only=1, declared=0, undeclared_guide_only=1
        ),
        verdicts=(recommended, guide),
    )


LEDGER = [
    LedgerEntry(
        pr=PrRef(repo=IX, number=2120),
        title="Update vLLM MiniMax-M3 image tags <b>@team</b>",
        sweeps=(
            SweepRun(
                run_id=29984401390,
                attempt=1,
                head_sha="0b896e92f975d0ef8e374fdc284b06444fc95242",
                conclusion="success",
                url="https://github.com/SemiAnalysisAI/InferenceX/actions/runs/29984401390",
                evals=(EvalScore(name="GSM8K", low=0.948, high=0.958, source="review"),),
                source="review-thread",
            ),
        ),
    )
]


def test_citations_collect_backing_and_guide_only_groups() -> None:
    c = build_citations(_report(), LEDGER)
    pr, ran = c.evidence
    assert pr.pr == f"{IX}#2120" and pr.recommended == 2
    assert ran.pr == f"{IX}#2314" and ran.backs == () and ran.ran[0].roles == ("prefill",)
    assert pr.backs[0].hardware == ("b200", "b300") and pr.backs[0].roles == ("serve",)
    (group,) = c.guide_only
    assert (group.variant, group.hardware, group.strategy) == ("nvfp4", "b300", "pd_cluster")
    assert group.nearest_prs == (f"{IX}#2314",)


def test_english_block() -> None:
    text = render_citations(build_citations(_report(), LEDGER), ["en"])
    assert "[InferenceX\\#2120](https://github.com/SemiAnalysisAI/InferenceX/pull/2120)" in text
    assert "`attention_config.indexer_kv_dtype=fp8`" in text
    assert "run [`29984401390`](https://github.com/" in text
    assert "attempt 1, head `0b896e92f975d0ef8e374fdc284b06444fc95242`, `success`" in text
    assert "GSM8K 0.948–0.958" in text
    assert "`value-mismatch` value differs from the evidence: `prefill`" in text
    assert "recipe `3`, evidence `1`" in text
    # The hostile PR title is inert.
    assert "<b>" not in text and "@team" not in text


def test_chinese_block_translates_phrases_and_keeps_flags_verbatim() -> None:
    text = render_citations(build_citations(_report(), LEDGER), ["zh"])
    assert "### 本配方的基准证据" in text
    assert "佐证 `attention_config.indexer_kv_dtype=fp8`" in text
    assert "第 1 次尝试" in text and "第几次" not in text and "支持" not in text
    assert "3 个组合中有 2 个为推荐组合" in text and "（2 个推荐组合）" not in text
    assert "(2 个推荐组合)" in text
    assert "取值与证据不一致：`prefill`, `speculative_config.num_speculative_tokens`" in text
    assert "配方 `3`, 证据 `1`" in text
    assert "Evidence PRs" not in text


def test_both_languages() -> None:
    text = render_citations(build_citations(_report(), LEDGER), ["en", "zh"])
    assert text.index("Evidence PRs") < text.index("证据 PR")


def test_missing_sweep_is_said() -> None:
    text = render_citations(build_citations(_report(), []), ["en"])
    assert "no sweep run recorded in the ledger" in text


def test_the_header_says_what_is_backed() -> None:
    text = render_citations(build_citations(_report(), LEDGER), ["en"])
    assert "2 of 3 combinations are recommended; each PR below backs the flags listed" in text
    assert "The other 1 are guide-only" in text
    assert "Each PR below backs the listed flags exactly" not in text


def _guide_only_report() -> AuditReport:
    report = _report()
    return report.model_copy(
        update={
            "verdicts": report.verdicts[1:],
            "summary": report.summary.model_copy(update={"combinations": 1, "recommended": 0}),
        }
    )


def test_nothing_recommended_lists_what_prs_ran_not_what_they_back() -> None:
    report = _guide_only_report()
    flag = FlagProvenance(key="k", value="1", cls="major", evidence=(REF_2120,))
    guide = report.verdicts[0]
    roles = (RoleFlags(role="prefill", node_rank=0, flags=(flag,)),)
    report = report.model_copy(update={"verdicts": (dataclasses.replace(guide, roles=roles),)})
    text = render_citations(build_citations(report, LEDGER), ["en", "zh"])
    assert "None of the 1 combinations is recommended: the PRs below are the nearest" in text
    assert "  - ran `k=1`" in text and "  - backs" not in text
    assert "  - 实测过 `k=1`" in text and "佐证 `k=1`" not in text


def _standing(pr: int, **facts: object) -> PrStanding:
    return PrStanding(pr=f"{IX}#{pr}", **facts)


def test_a_reverted_pr_is_set_aside_and_named_nowhere_as_evidence() -> None:
    standing = {
        f"{IX}#2314": _standing(
            2314, reverted_by=f"{IX}#2315", relanded_by=f"{IX}#2316", changed_served=True
        )
    }
    c = build_citations(_report(), LEDGER, standing=standing)
    assert [pr.pr for pr in c.evidence] == [f"{IX}#2120"]
    assert [pr.pr for pr in c.set_aside] == [f"{IX}#2314"]
    assert c.guide_only[0].nearest_prs == ()
    text = render_citations(c, ["en", "zh"])
    assert "#### Not evidence" in text
    assert "reverted by InferenceX\\#2315: it backs nothing; re-landed by InferenceX\\#2316" in text
    assert "InferenceX\\#2314 (reverted)" in text  # the reason's source is marked
    assert "nearest evidence: InferenceX\\#2314" not in text
    assert "已被 InferenceX\\#2315 回滚：不佐证任何组合" in text


def test_a_pr_that_served_what_others_served_is_set_aside_unless_it_backs() -> None:
    again = _standing(2314, changed_served=False, served_before=(f"{IX}#2120",))
    c = build_citations(_report(), LEDGER, standing={f"{IX}#2314": again})
    assert [pr.pr for pr in c.set_aside] == [f"{IX}#2314"]
    text = render_citations(c, ["en"])
    assert "served the deployment InferenceX\\#2120 had already served" in text
    # A PR whose sweep backs recommended combinations stays evidence, with the note.
    same = _standing(2120, changed_served=False, served_before=(f"{IX}#1",), reverts=(f"{IX}#9",))
    c = build_citations(_report(), LEDGER, standing={f"{IX}#2120": same})
    assert f"{IX}#2120" in [pr.pr for pr in c.evidence]
    text = render_citations(c, ["en"])
    assert "  - revert of InferenceX\\#9; served the deployment InferenceX\\#1 had" in text
