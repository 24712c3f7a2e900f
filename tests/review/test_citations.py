from __future__ import annotations

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
    k3 = FlagProvenance(key="speculative_config.num_speculative_tokens", value="3", cls="major")
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
    (pr,) = c.evidence
    assert pr.pr == f"{IX}#2120" and pr.recommended == 2
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
    assert "支持 `attention_config.indexer_kv_dtype=fp8`" in text
    assert "取值与证据不一致：`prefill`, `speculative_config.num_speculative_tokens`" in text
    assert "配方 `3`, 证据 `1`" in text
    assert "Evidence PRs" not in text


def test_both_languages() -> None:
    text = render_citations(build_citations(_report(), LEDGER), ["en", "zh"])
    assert text.index("Evidence PRs") < text.index("证据 PR")


def test_missing_sweep_is_said() -> None:
    text = render_citations(build_citations(_report(), []), ["en"])
    assert "no sweep run recorded in the ledger" in text
