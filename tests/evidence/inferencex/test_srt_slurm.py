from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from inferencex_fixtures import RECIPE_4P1D

from provenance.errors import InputError
from provenance.evidence.inferencex.extractor import extract_key
from provenance.evidence.inferencex.master import MultiNodePoint, WorkerSpec
from provenance.evidence.inferencex.srt_slurm import (
    check_against_master,
    load_recipe_bytes,
    parse_concurrencies,
    recipe_repo_path,
)
from provenance.sources.git import open_repo, resolve_commit

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


def test_a_key_repeated_with_another_value_is_read_as_srtctl_reads_it() -> None:
    """srtctl loads a recipe with ``yaml.safe_load``: the later ``compilation-config`` wins
    (kimi-k3 agg-gb200-tp16-latency-agentic.yaml). Which srt-slurm ran is not evaluated,
    so the record is partial, naming both lines."""
    text = RECIPE_4P1D.replace(
        "      max-num-seqs: 1024\n",
        "      compilation-config: '{\"cudagraph_capture_sizes\":[3,6]}'\n"
        "      max-num-seqs: 1024\n"
        '      compilation-config: \'{"pass_config":{"fuse_allreduce_rms":false}}\'\n',
    )
    recipe = load_recipe_bytes(text.encode(), PATH)
    decode = recipe.roles["decode"].flags
    assert decode["compilation_config.pass_config.fuse_allreduce_rms"] == "false"
    assert "compilation_config.cudagraph_capture_sizes" not in decode
    (marker,) = recipe.partial
    assert (marker.construct_name, marker.path, marker.line) == ("yaml-duplicate-key", PATH, 36)
    assert "backend.vllm_config.decode.compilation-config" in marker.detail
    assert "earlier on line 34" in marker.detail
    # The same value twice is not in doubt: no marker.
    same = RECIPE_4P1D.replace(
        "      max-num-seqs: 1024\n", "      max-num-seqs: 1024\n      max-num-seqs: 1024\n"
    )
    assert load_recipe_bytes(same.encode(), PATH).partial == ()


_DEFAULT = Path(__file__).resolve().parents[4] / ".mirror" / "SemiAnalysisAI+InferenceX" / "repo"
MIRROR = Path(os.environ.get("PROVENANCE_INFERENCEX", str(_DEFAULT)))


@pytest.mark.parametrize("rev", ["843c6254f", "b1f05e9ac"])
def test_mirror_kimik3_agentic_recipes_with_a_repeated_key_yield_records(rev: str) -> None:
    """``kimik3-fp4-gb200-dynamo-vllm-agentic``: two of its recipes (added by b1f05e9ac,
    #2404) set ``compilation-config`` twice; once skipped as ``recipe-unreadable``."""
    if not (MIRROR / "objects").is_dir() and not (MIRROR / ".git").exists():
        pytest.skip(f"InferenceX mirror not found at {MIRROR}")
    repo = open_repo(MIRROR)
    found = extract_key(repo, resolve_commit(repo, rev), "kimik3-fp4-gb200-dynamo-vllm-agentic")
    assert found.skipped == ()
    repeated = [
        r for r in found.records if any(p.construct_name == "yaml-duplicate-key" for p in r.partial)
    ]
    assert sorted(p.path.rsplit("/", 1)[1] for r in repeated for p in r.partial) == [
        "agg-gb200-tep16-balanced-agentic.yaml",
        "agg-gb200-tp16-latency-agentic.yaml",
    ]
    for record in repeated:
        flags = record.roles["serve"]
        assert flags["compilation_config.pass_config.fuse_allreduce_rms"] == "false"
        assert "compilation_config.cudagraph_capture_sizes" not in flags
