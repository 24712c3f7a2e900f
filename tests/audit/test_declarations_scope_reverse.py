"""Declarations matching, checkpoint/kind scope rules, expressibility and the fast normaliser."""

from __future__ import annotations

import datetime as dt

import pytest
from audit_builders import StandInNormaliser, entry, graph_of, single_combo, single_record
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import TypeAdapter

from provenance.audit.declarations import DeclarationMatcher
from provenance.audit.judge.reachability import expressibility_problems, pool_mode
from provenance.audit.normaliser import PolicyNormaliser
from provenance.audit.pipeline import RecipeInput, audit
from provenance.errors import ProvenanceError
from provenance.model.combination import Selection
from provenance.model.ledger import Declaration, Declarations, SelectionPattern
from provenance.model.record import RoleTopology, Topology
from provenance.model.scope import checkpoint_key, deployment_kind, same_checkpoint
from provenance.normalise.canonical import normalise_argv
from provenance.normalise.policy import default_policy

RECIPE = "MiniMaxAI/MiniMax-M3"


def declaration(ident: str, **match: object) -> Declaration:
    return Declaration(
        id=ident,
        match=SelectionPattern.model_validate(match),
        reason="reviewed",
        date=dt.date(2026, 8, 1),
    )


def selection(**fields: object) -> Selection:
    base: dict[str, object] = {
        "variant": "nvfp4",
        "hardware": "b300",
        "strategy": "pd_cluster",
        "node_count": None,
    }
    base.update(fields)
    return TypeAdapter(Selection).validate_python(base)


def test_declaration_globs_and_features() -> None:
    matcher = DeclarationMatcher(
        [
            declaration(
                "spec",
                hardware="b*",
                features=("spec_*",),
                feature_modes={"spec_decoding": "eagle3_gqa"},
            ),
            declaration("none", variant="mxfp8", features=()),
        ]
    )
    gqa = selection(features=("spec_decoding",), feature_modes={"spec_decoding": "eagle3_gqa"})
    mha = selection(features=("spec_decoding",), feature_modes={"spec_decoding": "eagle3"})
    assert matcher.declared_by(RECIPE, gqa, ["value-mismatch"]) == "spec"
    assert matcher.declared_by(RECIPE, mha, ["value-mismatch"]) is None
    assert matcher.declared_by(RECIPE, selection(hardware="h200"), []) is None
    assert matcher.declared_by(RECIPE, selection(variant="mxfp8"), []) == "none"
    assert (
        matcher.declared_by(RECIPE, selection(variant="mxfp8", features=("reasoning",)), []) is None
    )


def test_declaration_reasons_must_cover_every_reason() -> None:
    matcher = DeclarationMatcher([declaration("vm", reasons=("value-mismatch",))])
    assert matcher.declared_by(RECIPE, selection(), ["value-mismatch"]) == "vm"
    assert matcher.declared_by(RECIPE, selection(), ["value-mismatch", "flag-unevidenced"]) is None


def test_declarations_in_audit_summary() -> None:
    normaliser = StandInNormaliser()
    record = single_record("k", "tensor_parallel_size=8")
    graph = graph_of([record], [entry(1, record)], normaliser)
    combos = [
        single_combo("--tensor-parallel-size 8"),
        single_combo("--tensor-parallel-size 8 --block-size 128", variant="mxfp8"),
        single_combo("--tensor-parallel-size 8 --block-size 128", variant="default"),
    ]
    declarations = Declarations(declarations=(declaration("mx", variant="mxfp8"),))
    report = audit([RecipeInput(ref=RECIPE, combinations=combos)], graph, normaliser, declarations)
    assert report.summary.recommended == 1
    assert report.summary.guide_only == 2
    assert report.summary.declared == 1
    assert report.summary.undeclared_guide_only == 1
    declared = [v for v in report.verdicts if v.declared_by]
    assert [v.declared_by for v in declared] == ["mx"]
    assert {s.variant for s in declared[0].iter_selections()} == {"mxfp8"}


@pytest.mark.parametrize(
    ("recipe", "evidence", "same"),
    [
        ("nvidia/MiniMax-M3-NVFP4", "nvidia/MiniMax-M3-NVFP4", True),
        ("nvidia/MiniMax-M3-NVFP4", "NVIDIA/minimax-m3-nvfp4", True),
        ("nvidia/MiniMax-M3-NVFP4", "minimax-m3-nvfp4", True),
        ("MiniMaxAI/MiniMax-M3-MXFP8", "minimax-m3-mxfp8", True),
        ("MiniMaxAI/MiniMax-M3-MXFP8", "/models/MiniMax-M3-MXFP8/", True),
        ("MiniMaxAI/MiniMax-M3-MXFP8", "nvidia/MiniMax-M3-NVFP4", False),
        ("MiniMaxAI/MiniMax-M3", "MiniMaxAI/MiniMax-M3-MXFP8", False),
        ("amd/MiniMax-M3-MXFP4", "other/MiniMax-M3-MXFP4", False),
    ],
)
def test_checkpoint_matching(recipe: str, evidence: str, same: bool) -> None:
    assert same_checkpoint(recipe, evidence) is same
    if same:
        assert checkpoint_key(recipe) == checkpoint_key(evidence)


def test_deployment_kind() -> None:
    assert deployment_kind("pd_cluster", ["prefill", "decode"]) == "disaggregated"
    assert deployment_kind("multi_node", ["head", "worker"]) == "aggregated_multi_node"
    assert deployment_kind("single_node", ["serve"]) == "single_node"
    assert deployment_kind("kv_store_lb", ["instance", "instance_worker"]) == (
        "aggregated_multi_node"
    )
    assert deployment_kind("kv_store_lb", ["instance"]) == "single_node"


def test_pool_modes() -> None:
    assert pool_mode(RoleTopology(gpus_per_worker=8, tp=8)) == "tp"
    assert pool_mode(RoleTopology(gpus_per_worker=8, tp=8, ep=8, expert_parallel=True)) == "tep"
    assert pool_mode(RoleTopology(gpus_per_worker=8, dp=8, ep=8, dp_attention=True)) == "dep"
    assert pool_mode(RoleTopology(gpus_per_worker=8, tp=4, dp=2)) is None


def _disagg(prefill: RoleTopology, decode: RoleTopology, colocated: bool = False) -> Topology:
    return Topology(
        kind="disaggregated",
        roles={"prefill": prefill, "decode": decode},
        gpus_per_node=8,
        colocated=colocated,
        total_gpus=8,
    )


def test_expressibility_of_pd_topologies() -> None:
    whole = _disagg(RoleTopology(gpus_per_worker=8, tp=8), RoleTopology(gpus_per_worker=16, tp=16))
    assert expressibility_problems(whole, 8) == []
    assert expressibility_problems(whole, 8, {"dep"}) == [
        "prefill pool mode tp is not offered by the recipe",
        "decode pool mode tp is not offered by the recipe",
    ]
    four_p_one_d = _disagg(
        RoleTopology(workers=4, gpus_per_worker=1, tp=1),
        RoleTopology(gpus_per_worker=4, tp=4, ep=4, expert_parallel=True),
        colocated=True,
    )
    problems = expressibility_problems(four_p_one_d, 8)
    assert any("share a node" in p for p in problems)
    assert any("4 prefill workers" in p for p in problems)
    assert any("a decode engine on 4 GPU(s)" in p for p in problems)


def test_expressibility_single_node() -> None:
    tep4 = Topology(
        kind="single_node",
        roles={"serve": RoleTopology(gpus_per_worker=4, tp=4, ep=4, expert_parallel=True)},
        total_gpus=4,
    )
    assert "single_node_tep" in expressibility_problems(tep4, 8)[0]
    tp4 = Topology(
        kind="single_node", roles={"serve": RoleTopology(gpus_per_worker=4, tp=4)}, total_gpus=4
    )
    assert expressibility_problems(tp4, 8) == []


@pytest.mark.parametrize(
    "args",
    [
        ["--block-size", "128", "--tool-call-parser", "minimax_m3", "--enable-auto-tool-choice"],
        ["--port", "8001", "--kv-transfer-config", '{"kv_connector":"NixlConnector"}'],
        [
            "--compilation-config",
            '{"cudagraph_mode":"FULL_DECODE_ONLY"}',
            "--compilation-config.level",
            "3",
        ],
        [
            "--speculative-config",
            '{"method":"eagle3","num_speculative_tokens":3}',
            "--speculative-config.num_speculative_tokens",
            "1",
        ],
        [
            "--default-chat-template-kwargs",
            '{"thinking_mode":"enabled"}',
            "--reasoning-parser",
            "x",
        ],
        ["--max-model-len", "-1", "--tensor-parallel-size", "8"],
    ],
)
def test_fast_normaliser_equals_full_normalisation(args: list[str]) -> None:
    argv = ["vllm", "serve", "nvidia/MiniMax-M3-NVFP4", *args]
    env = {"VLLM_FLOAT32_MATMUL_PRECISION": "high", "VLLM_NIXL_SIDE_CHANNEL_PORT": "5557"}
    fast = PolicyNormaliser().command_major(argv, env)
    full = default_policy().major(normalise_argv(argv, env).flags)
    assert fast == full


UNITS = [
    ["--block-size", "128"],
    ["--port", "8001"],
    ["--tool-call-parser", "minimax_m3"],
    ["--enable-auto-tool-choice"],
    ["--reasoning-parser", "minimax_m3"],
    ["--kv-cache-dtype", "fp8"],
    ["--tensor-parallel-size", "8"],
    ["--max-model-len", "-1"],
    ["--no-enable-prefix-caching"],
    ["--attention_config.backend", "FLASHINFER"],
    ["--attention-config", '{"backend": "TRITON_ATTN", "indexer_kv_dtype": "fp8"}'],
    ["--compilation-config", '{"cudagraph_mode":"FULL_DECODE_ONLY"}'],
    ["--compilation-config.level", "3"],
    ["--speculative-config", '{"method": "eagle3", "num_speculative_tokens": 3}'],
    ["--speculative-config.num_speculative_tokens", "1"],
    ["--default-chat-template-kwargs", '{"thinking_mode": "enabled"}'],
    ["--kv-transfer-config", '{"kv_connector":"NixlConnector","kv_role":"kv_producer"}'],
    ["--gpu-memory-utilization", "0.9"],
    ["--language-model-only"],
]


@settings(max_examples=150, deadline=None)
@given(st.lists(st.sampled_from(range(len(UNITS))), max_size=12))
def test_fast_normaliser_property(indices: list[int]) -> None:
    """Dropping inert units never changes the major flags, whatever the units and order."""
    argv = ["vllm", "serve", "nvidia/MiniMax-M3-NVFP4"]
    for index in indices:
        argv += UNITS[index]
    try:
        full = default_policy().major(normalise_argv(argv).flags)
    except ProvenanceError:
        return
    assert PolicyNormaliser().command_major(argv, {}) == full
