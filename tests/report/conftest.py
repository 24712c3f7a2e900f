"""Hand-made audit reports for the HTML renderer's tests (shaped like MiniMax-M3's audit)."""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Callable, Mapping
from typing import Any

import pytest
from audit_builders import verdict_entry

from provenance.audit.verdicts import (
    AuditReport,
    AuditSummary,
    Claim,
    EvidenceRef,
    FlagProvenance,
    NearestEvidence,
    Reason,
    ReverseEntry,
    RoleFlags,
)
from provenance.model.combination import PdPool, PdSelection, Selection
from provenance.model.ledger import SweepRun
from provenance.model.reasons import ReasonCode, VerdictKind

RECIPE = "MiniMaxAI/MiniMax-M3"
IX = "SemiAnalysisAI/InferenceX"
REC_2120 = "a1" * 32
REC_2314 = "b2" * 32
REC_2310 = "c3" * 32
REC_1834 = "d4" * 32
#: A value that would run script if any part of the page inserted it as markup.
HOSTILE = '</script><script>window.__pwned=1</script><img src=x onerror="window.__pwned=2"><!--'
#: The reason detail of the guide-only EAGLE3 combination the browser test looks for.
EAGLE_DETAIL = "Both validated InferenceX MTP launchers omit that flag"


def sel(
    variant: str,
    hardware: str,
    strategy: str = "single_node_tp",
    *,
    nodes: int | None = 1,
    features: tuple[str, ...] = (),
    modes: Mapping[str, str | None] | None = None,
    pd: tuple[int, str, int, str] | None = None,
) -> Selection:
    return Selection(
        variant=variant,
        hardware=hardware,
        strategy=strategy,
        node_count=None if pd else nodes,
        pd=None
        if pd is None
        else PdSelection(
            prefill=PdPool(nodes=pd[0], parallelism=pd[1]),
            decode=PdPool(nodes=pd[2], parallelism=pd[3]),
        ),
        features=features,
        feature_modes=dict(modes or {}),
    )


def flag(key: str, value: str, *records: tuple[str, str]) -> FlagProvenance:
    return FlagProvenance(
        key=key,
        value=value,
        cls="major",
        evidence=tuple(EvidenceRef(record=r, prs=(f"{IX}#{pr}",)) for r, pr in records),
    )


NVFP4_SERVE = (
    flag("attention_config.indexer_kv_dtype", "fp8", (REC_2120, "2120")),
    flag("kv_cache_dtype", "fp8", (REC_2120, "2120")),
    flag("tensor_parallel_size", "8", (REC_2120, "2120")),
)


def sample_report() -> AuditReport:
    eagle = {"spec_decoding": "eagle3"}
    verdicts = (
        verdict_entry(
            recipe=RECIPE,
            selections=(
                sel("nvfp4", "b200"),
                sel("nvfp4", "b200", features=("tool_calling",)),
                sel("nvfp4", "b200", features=("tool_calling", "reasoning")),
            ),
            verdict=VerdictKind.RECOMMENDED,
            roles=(RoleFlags(role="serve", flags=NVFP4_SERVE),),
            evidence=(EvidenceRef(record=REC_2120, prs=(f"{IX}#2120",)),),
        ),
        verdict_entry(
            recipe=RECIPE,
            selection=sel("nvfp4", "b200", features=("spec_decoding",), modes=eagle),
            verdict=VerdictKind.GUIDE_ONLY,
            roles=(
                RoleFlags(
                    role="serve",
                    flags=(
                        flag("attention_config.indexer_kv_dtype", "fp8"),
                        flag("kv_cache_dtype", "fp8"),
                        flag("speculative_config.method", "eagle3", (REC_2120, "2120")),
                    ),
                ),
            ),
            reasons=(
                Reason(
                    code=ReasonCode.FLAG_UNEVIDENCED,
                    role="serve",
                    flag="attention_config.indexer_kv_dtype",
                    recipe_value="fp8",
                    sources=(f"{IX}#2120",),
                    detail=EAGLE_DETAIL,
                ),
                Reason(
                    code=ReasonCode.NEVER_JOINTLY_OBSERVED,
                    role="serve",
                    detail="kv_cache_dtype=fp8 and speculative_config.method=eagle3 never together",
                ),
            ),
            nearest=(
                NearestEvidence(
                    record=REC_2120,
                    config_key="minimaxm3-fp4-b200-vllm-mtp",
                    prs=(f"{IX}#2120",),
                    role="serve",
                    distance=2,
                    only_recipe={
                        "attention_config.indexer_kv_dtype": "fp8",
                        "kv_cache_dtype": "fp8",
                    },
                ),
            ),
        ),
        verdict_entry(
            recipe=RECIPE,
            selections=(
                sel(
                    "nvfp4",
                    "b300",
                    "pd_cluster",
                    pd=(1, "dep", 1, "tp"),
                    features=("spec_decoding",),
                    modes={"spec_decoding": "eagle3_gqa"},
                ),
                sel(
                    "nvfp4",
                    "b300",
                    "pd_cluster",
                    pd=(2, "dep", 1, "tp"),
                    features=("spec_decoding",),
                    modes={"spec_decoding": "eagle3_gqa"},
                ),
            ),
            verdict=VerdictKind.GUIDE_ONLY,
            roles=(
                RoleFlags(
                    role="prefill",
                    flags=(flag("speculative_config.num_speculative_tokens", "3"),),
                ),
                RoleFlags(
                    role="decode",
                    flags=(
                        flag("speculative_config.num_speculative_tokens", "3", (REC_2314, "2314")),
                    ),
                ),
            ),
            reasons=(
                Reason(
                    code=ReasonCode.VALUE_MISMATCH,
                    role="prefill",
                    flag="speculative_config.num_speculative_tokens",
                    recipe_value="3",
                    evidence_value="1",
                    sources=(f"{IX}#2314",),
                ),
            ),
            nearest=(
                NearestEvidence(
                    record=REC_2314,
                    config_key="minimaxm3-fp4-b300-dynamo-vllm-mtp",
                    prs=(f"{IX}#2314",),
                    role="prefill",
                    distance=1,
                    changed={"speculative_config.num_speculative_tokens": ("3", "1")},
                ),
            ),
        ),
        verdict_entry(
            recipe=RECIPE,
            selections=(sel("mxfp8", "h200"), sel("mxfp8", "h200", "single_node_tep")),
            verdict=VerdictKind.GUIDE_ONLY,
            roles=(RoleFlags(role="serve", flags=(flag("kv_cache_dtype", HOSTILE),)),),
            reasons=(Reason(code=ReasonCode.NO_EVIDENCE, detail=HOSTILE),),
            declared_by="mxfp8-hopper",
        ),
        verdict_entry(
            recipe=RECIPE,
            selection=sel("mxfp8", "b300", "multi_node_tp", nodes=2),
            verdict=VerdictKind.GUIDE_ONLY,
            roles=(
                RoleFlags(role="head", node_rank=0, flags=(flag("tensor_parallel_size", "16"),)),
                RoleFlags(role="worker", node_rank=1, flags=(flag("tensor_parallel_size", "16"),)),
            ),
            reasons=(Reason(code=ReasonCode.TOPOLOGY_MISMATCH, detail="no multi-node evidence"),),
        ),
        verdict_entry(
            recipe=RECIPE,
            selection=sel("mxfp8", "b300"),
            verdict=VerdictKind.RECOMMENDED,
            roles=(
                RoleFlags(role="serve", flags=(flag("kv_cache_dtype", "fp8", (REC_1834, "1834")),)),
            ),
        ),
    )
    return AuditReport(
        tool_version="0.1.0",
        recipes=(RECIPE,),
        ledger="ledger",
        summary=AuditSummary(
            combinations=10,
            recommended=4,
            guide_only=6,
            declared=2,
            undeclared_guide_only=4,
            by_reason={"flag-unevidenced": 1, "value-mismatch": 2, "no-evidence": 2},
        ),
        verdicts=verdicts,
        reverse=(
            ReverseEntry(
                record=REC_2310,
                config_key="minimaxm3-fp4-b300-dynamo-vllm-8k1k-tp1-tep4",
                prs=(f"{IX}#2310",),
                status="not-expressible",
                why="4 × TP1 prefill workers and a TEP4 decode worker colocated on one node",
            ),
            ReverseEntry(
                record=REC_2314,
                config_key="minimaxm3-fp4-b300-dynamo-vllm-mtp",
                prs=(f"{IX}#2314",),
                status="not-reproduced",
                why="recipe sets num_speculative_tokens=3 on prefill; evidence 1",
            ),
            ReverseEntry(
                record=REC_2120,
                config_key="minimaxm3-fp4-b200-vllm",
                prs=(f"{IX}#2120",),
                status="reproduced",
                combinations=3,
                example=sel("nvfp4", "b200"),
            ),
        ),
        claims=(Claim(recipe=RECIPE, hardware="h200", claim="verified", recommended=0),),
    )


SWEEPS = {
    f"{IX}#2120": (
        SweepRun(
            run_id=29984401390,
            head_sha="0b896e92f975d0ef8e374fdc284b06444fc95242",
            conclusion="success",
            source="review-thread",
        ),
    ),
}


@pytest.fixture
def report() -> AuditReport:
    return sample_report()


@pytest.fixture
def make_report() -> Callable[..., AuditReport]:
    def make(**changes: Any) -> AuditReport:
        return sample_report().model_copy(update=changes)

    return make


@pytest.fixture
def sweeps() -> dict[str, tuple[SweepRun, ...]]:
    return dict(SWEEPS)


@pytest.fixture
def facts() -> dict[str, str]:
    """Strings the tests look for in the rendered page."""
    return {"hostile": HOSTILE, "eagle_detail": EAGLE_DETAIL, "recipe": RECIPE, "ix": IX}


# --- a report the size of MiniMax-M3's full cross-product ------------------------------------
# 23 variant × hardware rows, 43 deployment shapes (3 single-node, 4 multi-node, 36 P/D pool
# pairs), 72 feature sets: 71,208 combinations, as the recipes builder enumerates for
# MiniMax-M3 at 8959cf6. Outcomes differ by row, shape, speculative mode and text-only, so
# the audit's grouping leaves ~6,000 groups — more than a real audit, whose groups also
# merge across shapes.

FULL_ROWS = (
    *(("default", hw) for hw in ("h100", "h200", "h20", "b200", "b300", "gb200", "gb300")),
    *(("mxfp8", hw) for hw in ("h100", "h200", "b200", "b300", "gb200", "gb300")),
    *(("nvfp4", hw) for hw in ("b200", "b300", "gb200", "gb300", "rtx6000")),
    *(("mxfp4", hw) for hw in ("mi300x", "mi325x", "mi355x", "mi350x", "mi308x")),
)
_POOLS = tuple((n, p) for n in (1, 2) for p in ("tp", "tep", "dep"))


def _full_shapes() -> list[dict[str, Any]]:
    shapes: list[dict[str, Any]] = [
        {"strategy": f"single_node_{p}", "nodes": 1} for p in ("tp", "tep", "dep")
    ]
    shapes += [{"strategy": f"multi_node_{p}", "nodes": 2} for p in ("tp", "tp_pp", "tep", "dep")]
    shapes += [
        {"strategy": "pd_cluster", "pd": (pn, pp, dn, dp)} for pn, pp in _POOLS for dn, dp in _POOLS
    ]
    return shapes


def _full_feature_sets() -> list[tuple[tuple[str, ...], dict[str, str | None], str | None, bool]]:
    out = []
    for spec in (None, "eagle3", "eagle3_gqa"):
        for tools in (False, True):
            for think in (None, "reasoning", "thinking_always_on"):
                for text_only in (False, True):
                    for encoder in (False, True):
                        names = [
                            *(["tool_calling"] if tools else []),
                            *([think] if think else []),
                            *(["spec_decoding"] if spec else []),
                            *(["text_only"] if text_only else []),
                            *(["encoder_parallel"] if encoder else []),
                        ]
                        modes: dict[str, str | None] = {"spec_decoding": spec} if spec else {}
                        out.append((tuple(names), modes, spec, text_only))
    return out


def full_cross_product_report() -> AuditReport:
    shapes = _full_shapes()
    feature_sets = _full_feature_sets()
    groups: dict[tuple[Any, ...], list[Selection]] = {}
    for variant, hardware in FULL_ROWS:
        for shape in shapes:
            # One validated selection per shape; its feature variants are copies (fast).
            base = sel(
                variant, hardware, shape["strategy"], nodes=shape.get("nodes"), pd=shape.get("pd")
            )
            for names, modes, spec, text_only in feature_sets:
                selection = dataclasses.replace(base, features=names, feature_modes=dict(modes))
                key = (variant, hardware, shape["strategy"], shape.get("pd"), spec, text_only)
                groups.setdefault(key, []).append(selection)
    verdicts = []
    for (variant, hardware, strategy, pd, spec, text_only), selections in groups.items():
        record = hashlib.sha256(f"{variant}/{hardware}/{strategy}".encode()).hexdigest()
        pr = f"{IX}#{2000 + len(hardware) * 37 + len(variant)}"
        role_flags = [
            flag("kv_cache_dtype", "fp8" if variant != "default" else "auto", (record, pr[-4:])),
            flag("tensor_parallel_size", "8" if pd is None else str(pd[0] * 4), (record, pr[-4:])),
        ]
        if text_only:
            role_flags.append(flag("language_model_only", "true"))
        if spec:
            role_flags.append(flag("speculative_config.method", spec, (record, pr[-4:])))
            role_flags.append(flag("speculative_config.num_speculative_tokens", "3"))
        roles = (
            (RoleFlags(role="serve", flags=tuple(role_flags)),)
            if pd is None
            else tuple(RoleFlags(role=r, flags=tuple(role_flags)) for r in ("prefill", "decode"))
        )
        recommended = spec is None and not text_only and strategy == "single_node_tp"
        verdicts.append(
            verdict_entry(
                recipe=RECIPE,
                selections=tuple(selections),
                verdict=VerdictKind.RECOMMENDED if recommended else VerdictKind.GUIDE_ONLY,
                roles=roles,
                reasons=()
                if recommended
                else (
                    Reason(
                        code=ReasonCode.FLAG_UNEVIDENCED,
                        role=roles[0].role,
                        flag="speculative_config.num_speculative_tokens",
                        recipe_value="3",
                        sources=(pr,),
                        detail=f"no evidence point on {hardware} sets it with {strategy}",
                    ),
                ),
                nearest=()
                if recommended
                else (
                    NearestEvidence(
                        record=record,
                        config_key=f"minimaxm3-{variant}-{hardware}-vllm",
                        prs=(pr,),
                        role=roles[0].role,
                        distance=2,
                        only_recipe={"speculative_config.num_speculative_tokens": "3"},
                        changed={"tensor_parallel_size": ("8", "4")},
                    ),
                ),
                evidence=(EvidenceRef(record=record, prs=(pr,)),) if recommended else (),
            )
        )
    total = sum(len(v) for v in groups.values())
    recommended_count = sum(len(v.selections or ()) for v in verdicts if v.verdict == "recommended")
    return AuditReport(
        tool_version="0.1.0",
        recipes=(RECIPE,),
        summary=AuditSummary(
            combinations=total,
            recommended=recommended_count,
            guide_only=total - recommended_count,
            declared=0,
            undeclared_guide_only=total - recommended_count,
        ),
        verdicts=tuple(verdicts),
    )


@pytest.fixture(scope="session")
def full_report() -> AuditReport:
    return full_cross_product_report()
