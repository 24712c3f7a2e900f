"""Normalisation and policy over the real corpus (skipped when ``../shared/corpus`` is absent)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from provenance.errors import InputError
from provenance.model.flags import FlagSet
from provenance.normalise.canonical import (
    normalise_argv,
    normalise_mapping,
    normalise_mapping_command,
    render_argv,
    render_env,
)
from provenance.normalise.policy import default_policy
from provenance.safe_yaml import load_yaml

CORPUS = Path(__file__).resolve().parents[2] / ".." / "shared" / "corpus"
pytestmark = pytest.mark.corpus

ARG_KEYS = {"args", "extra_args", "base_args", "vllm_args"}


@pytest.fixture(scope="module")
def corpus() -> Path:
    if not CORPUS.is_dir():
        pytest.skip("../shared/corpus is absent")
    return CORPUS.resolve()


def arg_lists(node: Any, path: str = "") -> Iterator[tuple[str, list[str]]]:
    """Every argv list of a recipe (base_args, extra_args, feature args, ...), with its key path."""
    if isinstance(node, dict):
        for key, value in node.items():
            where = f"{path}.{key}" if path else str(key)
            if key in ARG_KEYS and isinstance(value, list):
                yield where, [str(item) for item in value]
            else:
                yield from arg_lists(value, where)
    elif isinstance(node, list):
        for index, item in enumerate(node):
            yield from arg_lists(item, f"{path}[{index}]")


def srt_slurm_roles(corpus: Path) -> Iterator[tuple[Path, str, dict[str, Any], dict[str, Any]]]:
    for path in sorted(corpus.glob("**/srt-slurm-recipes/**/*.yaml")):
        try:
            data = load_yaml(path).data
        except InputError as exc:
            assert "duplicate key" in str(exc), exc  # the only refusal seen in this corpus
            continue
        backend = data["backend"]
        for role, config in backend["vllm_config"].items():
            yield path, role, config, backend.get(f"{role}_environment") or {}


def test_minimax_m3_recipe_values(corpus: Path) -> None:
    recipe = load_yaml(corpus / "recipes/models/MiniMaxAI/MiniMax-M3.yaml").data
    nvfp4 = normalise_argv(recipe["variants"]["nvfp4"]["extra_args"]).flags
    assert nvfp4 == FlagSet(
        {
            "trust_remote_code": "true",
            "kv_cache_dtype": "fp8",
            "attention_config.backend": "FLASHINFER",
            "attention_config.use_trtllm_attention": "true",
            "attention_config.indexer_kv_dtype": "fp8",
            "attention_config.minimax_m3_msa_decode_backend": "cutlass",
        }
    )
    mxfp8 = normalise_argv(recipe["variants"]["mxfp8"]["extra_args"]).flags
    assert mxfp8 == FlagSet({"attention_config.indexer_kv_dtype": "fp8"})
    gqa = recipe["features"]["spec_decoding"]["modes"]["eagle3_gqa"]["args"]
    assert normalise_argv(gqa).flags == FlagSet(
        {
            "speculative_config.method": "eagle3",
            "speculative_config.model": "MiniMax-M3-EAGLE3-GQA",
            "speculative_config.num_speculative_tokens": "3",
            "speculative_config.attention_backend": "FLASH_ATTN",
        }
    )


def test_every_minimax_m3_recipe_version_normalises(corpus: Path) -> None:
    versions = sorted((corpus / "recipes-history/MiniMax-M3").glob("*.yaml"))
    versions.append(corpus / "recipes/models/MiniMaxAI/MiniMax-M3.yaml")
    count = 0
    for path in versions:
        for where, argv in arg_lists(load_yaml(path).data):
            flags = normalise_argv(argv, source=f"{path.name}:{where}").flags
            assert normalise_argv(render_argv(flags)).flags == flags
            count += 1
    assert len(versions) > 20 and count > 100


def test_recipe_attention_config_matches_inferencex_json(corpus: Path) -> None:
    """The recipe's dotted pd_cluster overrides equal InferenceX's JSON attention config (#2314)."""
    recipe = load_yaml(corpus / "recipes/models/MiniMaxAI/MiniMax-M3.yaml").data
    dotted = recipe["strategy_overrides"]["pd_cluster"]["hardware_overrides"]["blackwell"]
    recipe_flags = normalise_argv(dotted["extra_args"]).flags
    pr2314 = next((corpus / "inferencex-at").glob("pr2314_*"))
    path = next(pr2314.glob("**/b300-fp4/8k1k/mtp/1p1d-dep2-tp4-eagle3-8k1k.yaml"))
    prefill = load_yaml(path).data["backend"]["vllm_config"]["prefill"]
    evidence = normalise_mapping(prefill)
    assert recipe_flags.items() <= evidence.items()


def test_pr2314_mtp_prefill_and_decode_draft_different_token_counts(corpus: Path) -> None:
    pr2314 = next((corpus / "inferencex-at").glob("pr2314_*"))
    paths = sorted(pr2314.glob("**/minimax-m3/b300-fp4/8k1k/mtp/*.yaml"))
    assert len(paths) == 5
    policy = default_policy()
    for path in paths:
        backend = load_yaml(path).data["backend"]
        roles = {
            role: policy.major(
                normalise_mapping(
                    backend["vllm_config"][role], backend.get(f"{role}_environment") or {}
                )
            )
            for role in ("prefill", "decode")
        }
        diff = roles["prefill"].diff(roles["decode"])
        assert diff.changed["speculative_config.num_speculative_tokens"] == ("1", "3"), path


def test_every_srt_slurm_role_normalises_and_round_trips(corpus: Path) -> None:
    policy = default_policy()
    roles = 0
    unclassified: set[str] = set()
    for path, role, config, env in srt_slurm_roles(corpus):
        command = normalise_mapping_command(config, env, source=str(path))
        flags = command.flags
        assert normalise_argv(render_argv(flags), render_env(flags)).flags == flags, (path, role)
        unclassified |= {key for key in flags if policy.rule_for(key) is None}
        roles += 1
    assert roles > 200
    # Everything InferenceX's srt-slurm recipes set has an explicit class, except
    # the simple KV offload switch, which stays major by default (unknown → major).
    assert unclassified <= {"env:VLLM_USE_SIMPLE_KV_OFFLOAD"}
