"""Rendering rules of the recipes builder, checked on the toy root and MiniMax-M3."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import TypeAdapter

from provenance.model.combination import PdPool, PdSelection, Selection
from provenance.recipes.enumerate.selections import EnumerationOptions, enumerate_selections
from provenance.recipes.load.loader import RecipesRoot, load_recipe
from provenance.recipes.render.argv import (
    RenderedPart,
    dedupe_args,
    join_units,
    parse_units,
    shell_quote,
)
from provenance.recipes.render.records import RecordDigester, combination_record, record_digest
from provenance.recipes.render.synthesis import Renderer, render, render_role, role_inputs

TOKENS = st.sampled_from(["--a", "--b", "-c", "--a=1", "x", "1", "-1", "{}", "--b"])


def test_dedupe_keeps_the_last_occurrence_in_its_position() -> None:
    tokens = ["--a", "1", "--flag", "pos", "--a", "2", "--flag"]
    # "--flag pos" is one unit; the later boolean "--flag" wins and moves to the end.
    assert dedupe_args(tokens) == ["--a", "2", "--flag"]


def test_dedupe_flag_identity_is_the_raw_token() -> None:
    tokens = ["--foo=1", "--foo", "1", "--foo_bar", "x", "--foo-bar", "y", "--foo=1"]
    assert dedupe_args(tokens) == ["--foo", "1", "--foo_bar", "x", "--foo-bar", "y", "--foo=1"]


@given(st.lists(TOKENS, max_size=20))
def test_dedupe_is_idempotent_and_leaves_each_flag_once(tokens: list[str]) -> None:
    once = dedupe_args(tokens)
    assert dedupe_args(once) == once
    flags = [flag for flag, _ in parse_units(once) if flag is not None]
    assert len(flags) == len(set(flags))


@given(st.lists(st.lists(TOKENS, max_size=6), max_size=4))
def test_joining_parsed_parts_equals_parsing_the_concatenation(parts: list[list[str]]) -> None:
    joined = join_units([RenderedPart(tuple(p), tuple(parse_units(p)), True) for p in parts])
    assert joined == parse_units([t for part in parts for t in part])


def test_shell_quote() -> None:
    assert shell_quote("fp8") == "fp8"
    assert shell_quote("$HEAD_IP") == "$HEAD_IP"
    assert shell_quote('{"a":1}') == "'{\"a\":1}'"
    assert shell_quote("it's") == "'it'\\''s'"


def _roles(
    root: RecipesRoot, ref: str, **fields: object
) -> list[tuple[str, int | None, tuple[str, ...] | None, dict[str, object]]]:
    recipe = load_recipe(root, ref)
    selection = TypeAdapter(Selection).validate_python(fields)
    return [
        (r.role, r.node_rank, r.argv, dict(r.env)) for r in render(recipe, root, selection).roles
    ]


def test_layer_order_and_replacing_overrides(toy_root: RecipesRoot) -> None:
    [(role, rank, argv, env)] = _roles(
        toy_root,
        "Toy/Toy-1",
        variant="fp4",
        hardware="bw8",
        strategy="single_node_tp",
        node_count=1,
        features=("tools", "spec"),
        feature_modes={"spec": "c"},
        kv_offload="gated_fs",
    )
    assert (role, rank) == ("serve", None)
    assert argv == (
        "vllm", "serve", "Toy/Toy-1-FP4",
        "--block-size", "64",  # base args
        "--kv-cache-dtype", "fp8",  # variant args ...
        "--nv", "variant",  # ... kept: the recipe's nvidia block is shadowed by "blackwell"
        "--exact-hw", "1",  # variant exact-id override
        "--tensor-parallel-size", "1",  # auto-fit: 90 GB <= 180 GB per GPU
        "--recipe-gen", "1",  # recipe generation layer
        "--variant-gen", "1",  # variant generation layer (additive)
        "--tool-call-parser", "toy", "--enable-auto-tool-choice",  # features in list order
        "--speculative-config", '{"method":"c"}',
        "--kv-transfer-config", '{"kv_connector":"ToyFs"}',  # KV option last
    )  # fmt: skip
    assert list(env) == [
        "TOY_BASE", "TOY_VARIANT", "TOY_EXACT", "TOY_HASHSEED", "TOY_RECIPE_GEN", "TOY_VARIANT_GEN",
    ]  # fmt: skip


def test_an_empty_strategy_generation_block_still_replaces_the_recipe_layers(
    toy_root: RecipesRoot,
) -> None:
    common = {"variant": "default", "hardware": "hopper8", "node_count": 1}
    [(_, _, tp_argv, _)] = _roles(toy_root, "Toy/Toy-1", strategy="single_node_tp", **common)
    [(_, _, dep_argv, _)] = _roles(toy_root, "Toy/Toy-1", strategy="single_node_dep", **common)
    assert tp_argv is not None and tp_argv[-2:] == ("--nv", "recipe")
    assert dep_argv == (
        "vllm", "serve", "Toy/Toy-1", "--block-size", "64",
        "--enable-expert-parallel", "--data-parallel-size", "8",
    )  # fmt: skip


def test_pd_pools_nvl4_env_and_dep_rank_rewrite(toy_root: RecipesRoot) -> None:
    pools = PdSelection(
        prefill=PdPool(nodes=1, parallelism="tp"), decode=PdPool(nodes=2, parallelism="dep")
    )
    common = {"variant": "fp4", "strategy": "pd_cluster", "node_count": None, "pd": pools}
    roles = _roles(toy_root, "Toy/Toy-1", hardware="gb200", **common)
    assert [(r, k) for r, k, _, _ in roles] == [("prefill", 0), ("decode", 0), ("decode", 1)]
    prefill_env = roles[0][3]
    assert prefill_env["NCCL_CUMEM_ENABLE"] == "1"  # kept on an NVL4 tray
    decode_1 = roles[2]
    assert decode_1[3]["TOY_SIDE_HOST"] == "$DECODE_NODE_2"
    assert decode_1[2] is not None and "--data-parallel-start-rank" in decode_1[2]
    index = decode_1[2].index("--data-parallel-start-rank")
    assert decode_1[2][index + 1] == "4"
    assert decode_1[2][-4:] == ("--pd-gen", "1", "--decode-exact", "1")
    roles = _roles(toy_root, "Toy/Toy-1", hardware="bw8", **common)
    assert "NCCL_CUMEM_ENABLE" not in roles[0][3]  # stripped elsewhere under PD
    assert "NCCL_MNNVL_ENABLE" not in roles[1][3]


def test_mooncake_instances_name_their_heads(toy_root: RecipesRoot) -> None:
    roles = _roles(
        toy_root,
        "Toy/Toy-1",
        variant="default",
        hardware="amd8",
        strategy="multi_node_dep",
        node_count=2,
        kv_offload="kv_store_toy",
        kv_instances=2,
    )
    assert [(r, k) for r, k, _, _ in roles] == [
        ("instance", 0), ("instance_worker", 1), ("instance", 0), ("instance_worker", 1),
    ]  # fmt: skip
    heads = [argv[argv.index("--data-parallel-address") + 1] for _, _, argv, _ in roles if argv]
    assert heads == ["$VLLM_INSTANCE_1"] * 2 + ["$VLLM_INSTANCE_2"] * 2
    assert roles[0][3]["TOY_SEED"] == 0  # YAML integer kept


def test_memoised_renderer_equals_the_pure_role_function(toy_root: RecipesRoot) -> None:
    recipe = load_recipe(toy_root, "Toy/Toy-1")
    renderer = Renderer(recipe, toy_root)
    digester = RecordDigester(Renderer(recipe, toy_root))
    options = EnumerationOptions(kv="all", pd_nodes="1,2,3", features="default")
    for selection in enumerate_selections(recipe, toy_root, options):
        fast = renderer.render(selection)
        keys = role_inputs(recipe, toy_root, selection)
        assert fast.roles == tuple(render_role(recipe, toy_root, key) for key in keys)
        record = combination_record(recipe.hf_id, selection, fast)
        assert digester.digest(selection) == record_digest(record)


# ---- MiniMax-M3 at 8959cf6, the worked examples of the builder spec (section 6)


def _m3(
    corpus_root: RecipesRoot, **fields: object
) -> list[tuple[str, int | None, tuple[str, ...] | None, dict[str, object]]]:
    return _roles(corpus_root, "MiniMaxAI/MiniMax-M3", **fields)


@pytest.mark.corpus
def test_m3_nvfp4_b200_single_node_tp(corpus_root: RecipesRoot) -> None:
    [(_, _, argv, env)] = _m3(
        corpus_root, variant="nvfp4", hardware="b200", strategy="single_node_tp", node_count=1
    )
    assert argv == (
        "vllm", "serve", "nvidia/MiniMax-M3-NVFP4", "--block-size", "128",
        "--trust-remote-code", "--kv-cache-dtype", "fp8",
        "--attention_config.backend", "FLASHINFER",
        "--attention_config.use_trtllm_attention", "true",
        "--attention_config.indexer_kv_dtype", "fp8",
        "--attention_config.minimax_m3_msa_decode_backend", "cutlass",
        "--tensor-parallel-size", "8",
    )  # fmt: skip
    assert env == {
        "VLLM_FLOAT32_MATMUL_PRECISION": "high",
        "VLLM_FLASHINFER_ALLREDUCE_BACKEND": "trtllm",
    }
    [(_, _, b300, _)] = _m3(
        corpus_root, variant="nvfp4", hardware="b300", strategy="single_node_tp", node_count=1
    )
    assert b300 is not None and b300[-2:] == ("--tensor-parallel-size", "1")


@pytest.mark.corpus
def test_m3_nvfp4_b300_pd_cluster_eagle3_gqa(corpus_root: RecipesRoot) -> None:
    pools = PdSelection(
        prefill=PdPool(nodes=1, parallelism="tp"), decode=PdPool(nodes=1, parallelism="tp")
    )
    prefill, decode = _m3(
        corpus_root,
        variant="nvfp4",
        hardware="b300",
        strategy="pd_cluster",
        node_count=None,
        pd=pools,
        features=("spec_decoding",),
        feature_modes={"spec_decoding": "eagle3_gqa"},
    )
    assert prefill[2] == (
        "vllm", "serve", "nvidia/MiniMax-M3-NVFP4", "--block-size", "128",
        "--trust-remote-code", "--kv-cache-dtype", "fp8",
        "--attention_config.minimax_m3_msa_decode_backend", "cutlass",
        "--port", "8001",
        "--kv-transfer-config",
        '{"kv_connector":"NixlConnector","kv_role":"kv_producer","kv_load_failure_policy":"fail"}',
        "--tensor-parallel-size", "8",
        "--attention_config.backend", "FLASHINFER",
        "--attention_config.use_trtllm_attention", "true",
        "--attention_config.indexer_kv_dtype", "fp8",
        "--speculative-config",
        '{"method": "eagle3", "model": "Inferact/MiniMax-M3-EAGLE3-GQA", '
        '"num_speculative_tokens": 3, "attention_backend": "FLASH_ATTN"}',
    )  # fmt: skip
    assert prefill[3] == {
        "VLLM_FLOAT32_MATMUL_PRECISION": "high",
        "VLLM_FLASHINFER_ALLREDUCE_BACKEND": "trtllm",
        "VLLM_NIXL_SIDE_CHANNEL_PORT": "5557",
        "VLLM_NIXL_SIDE_CHANNEL_HOST": "$PREFILL_NODE_1",
        "CUDA_VISIBLE_DEVICES": "0,1,2,3,4,5,6,7",
    }
    assert decode[2] is not None
    assert decode[2][decode[2].index("--kv-transfer-config") + 2 :][:4] == (
        "--compilation-config", '{"cudagraph_mode":"FULL_DECODE_ONLY"}',
        "--tensor-parallel-size", "8",
    )  # fmt: skip


@pytest.mark.corpus
def test_m3_mxfp8_h200_landing(corpus_root: RecipesRoot) -> None:
    [(_, _, argv, env)] = _m3(
        corpus_root,
        variant="mxfp8",
        hardware="h200",
        strategy="single_node_tp",
        node_count=1,
        features=("tool_calling", "reasoning"),
    )
    assert argv == (
        "vllm", "serve", "MiniMaxAI/MiniMax-M3-MXFP8", "--block-size", "128",
        "--attention_config.indexer_kv_dtype", "fp8", "--tensor-parallel-size", "8",
        "--tool-call-parser", "minimax_m3", "--enable-auto-tool-choice",
        "--reasoning-parser", "minimax_m3",
    )  # fmt: skip
    assert env == {}


@pytest.mark.corpus
def test_m3_pd_on_blackwell_drops_generation_env(corpus_root: RecipesRoot) -> None:
    single = _m3(
        corpus_root, variant="mxfp8", hardware="b200", strategy="single_node_tp", node_count=1
    )
    assert single[0][3].get("VLLM_FLOAT32_MATMUL_PRECISION") == "high"
    pools = PdSelection(
        prefill=PdPool(nodes=1, parallelism="tp"), decode=PdPool(nodes=1, parallelism="tp")
    )
    pd = _m3(
        corpus_root,
        variant="mxfp8",
        hardware="b200",
        strategy="pd_cluster",
        node_count=None,
        pd=pools,
    )
    assert all("VLLM_FLOAT32_MATMUL_PRECISION" not in env for _, _, _, env in pd)
