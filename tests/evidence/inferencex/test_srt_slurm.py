from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from inferencex_fixtures import RECIPE_4P1D

from provenance.errors import InputError
from provenance.evidence.inferencex.master import MultiNodePoint, WorkerSpec
from provenance.evidence.inferencex.srt_slurm import (
    check_against_master,
    load_recipe_bytes,
    parse_concurrencies,
    recipe_repo_path,
)

PATH = "benchmarks/multi_node/srt-slurm-recipes/vllm/toy/4p1d.yaml"


def _point(**changes: object) -> MultiNodePoint:
    base: dict[str, object] = {
        "scenario": "fixed-seq-len",
        "isl": 8192,
        "osl": 1024,
        "concs": (64, 4096),
        "prefill": WorkerSpec(num_worker=4, tp=1, ep=1, dp_attn=False),
        "decode": WorkerSpec(num_worker=1, tp=4, ep=4, dp_attn=False),
    }
    base.update(changes)
    return MultiNodePoint.model_validate(base)


def test_recipe_roles_topology_and_workload() -> None:
    recipe = load_recipe_bytes(RECIPE_4P1D.encode(), PATH)
    prefill, decode = recipe.roles["prefill"], recipe.roles["decode"]
    assert prefill.flags["speculative_config.num_speculative_tokens"] == "1"
    assert decode.flags["speculative_config.num_speculative_tokens"] == "3"
    for role in (prefill, decode):
        assert role.flags["attention_config.backend"] == "FLASHINFER"
        assert role.flags["attention_config.indexer_kv_dtype"] == "fp8"
        assert role.flags["env:VLLM_FLOAT32_MATMUL_PRECISION"] == "high"
    assert (prefill.topology.workers, prefill.topology.tp, prefill.topology.expert_parallel) == (
        4,
        1,
        False,
    )
    assert (decode.topology.workers, decode.topology.tp, decode.topology.ep) == (1, 4, 4)
    assert decode.topology.expert_parallel and not decode.topology.dp_attention
    assert recipe.topology.kind == "disaggregated"
    assert recipe.topology.nodes == 1 and recipe.topology.colocated
    assert recipe.topology.total_gpus == 8
    assert recipe.concurrencies == (64, 4096)
    assert check_against_master(recipe, _point(), image="vllm/vllm-openai:nightly-1") == []


def test_dep_shape_and_mismatches_are_reported() -> None:
    text = RECIPE_4P1D.replace(
        "      tensor-parallel-size: 4\n",
        "      tensor-parallel-size: 1\n      data-parallel-size: 4\n",
    )
    recipe = load_recipe_bytes(text.encode(), PATH)
    decode = recipe.roles["decode"].topology
    assert (decode.tp, decode.dp, decode.ep, decode.dp_attention) == (1, 4, 4, True)
    assert (
        check_against_master(
            recipe, _point(decode=WorkerSpec(num_worker=1, tp=4, ep=4, dp_attn=True)), image=None
        )
        == []
    )
    problems = check_against_master(recipe, _point(concs=(8,), isl=1024), image="other:1")
    joined = "\n".join(problems)
    assert "decode parallelism" in joined
    assert "concurrencies [64, 4096] != master conc-list [8]" in joined
    assert "isl 8192 != master isl 1024" in joined
    assert "model.container" in joined


def test_non_vllm_backend_is_an_input_error() -> None:
    text = RECIPE_4P1D.replace("  type: vllm", "  type: sglang")
    with pytest.raises(InputError, match="not vLLM"):
        load_recipe_bytes(text.encode(), PATH)


def test_config_file_maps_to_the_overlay_directory() -> None:
    assert recipe_repo_path("recipes/vllm/toy/4p1d.yaml", origin="m") == (PATH, None)
    assert recipe_repo_path("recipes/a.yaml:zip_override_x[1]", origin="m") == (
        "benchmarks/multi_node/srt-slurm-recipes/a.yaml",
        "zip_override_x[1]",
    )


@settings(deadline=None)
@given(st.lists(st.integers(1, 100000), min_size=1, max_size=8))
def test_concurrency_strings_round_trip(values: list[int]) -> None:
    assert parse_concurrencies("x".join(map(str, values))) == tuple(values)
    assert parse_concurrencies(values[0]) == (values[0],)


def test_bad_concurrency_string() -> None:
    with pytest.raises(ValueError):
        parse_concurrencies("4xfast")
