"""Default flag classes (with their basis), memoised classification, repository overrides."""

from __future__ import annotations

import fnmatch
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from provenance.errors import EXIT_INPUT, InputError
from provenance.model.flags import FlagClass, FlagSet
from provenance.normalise.canonical import normalise_mapping
from provenance.normalise.policy import (
    DEFAULT_RULES,
    UNKNOWN_BASIS,
    Policy,
    PolicyRule,
    default_policy,
    load_policy,
)

MAJOR, TUNING, HARNESS, FUNCTIONAL = (
    FlagClass.MAJOR,
    FlagClass.TUNING,
    FlagClass.HARNESS,
    FlagClass.FUNCTIONAL,
)

DEFAULTS: list[tuple[str, FlagClass]] = [
    ("tensor_parallel_size", MAJOR),
    ("data_parallel_size", MAJOR),
    ("pipeline_parallel_size", MAJOR),
    ("enable_expert_parallel", MAJOR),
    ("enable_dp_attention", MAJOR),
    ("quantization", MAJOR),
    ("kv_cache_dtype", MAJOR),
    ("attention_backend", MAJOR),
    ("attention_config.backend", MAJOR),
    ("attention_config.indexer_kv_dtype", MAJOR),
    ("attention_config.minimax_m3_msa_decode_backend", MAJOR),
    ("attention_config.some_future_knob", MAJOR),
    ("moe_backend", MAJOR),
    ("linear_backend", MAJOR),
    ("all2all_backend", MAJOR),
    ("speculative_config.method", MAJOR),
    ("speculative_config.model", MAJOR),
    ("speculative_config.attention_backend", MAJOR),
    ("speculative_config.num_speculative_tokens", MAJOR),
    ("block_size", MAJOR),
    ("language_model_only", MAJOR),
    ("env:VLLM_FLOAT32_MATMUL_PRECISION", MAJOR),
    ("hf_overrides.text_config.rope_scaling.factor", MAJOR),
    ("max_num_seqs", TUNING),
    ("max_num_batched_tokens", TUNING),
    ("gpu_memory_utilization", TUNING),
    ("stream_interval", TUNING),
    ("max_cudagraph_capture_size", TUNING),
    ("compilation_config.cudagraph_mode", TUNING),
    ("compilation_config.pass_config", TUNING),
    ("enable_prefix_caching", TUNING),
    ("enable_chunked_prefill", TUNING),
    ("enforce_eager", TUNING),
    ("async_scheduling", TUNING),
    ("max_model_len", TUNING),
    ("enable_dbo", TUNING),
    ("dbo_decode_token_threshold", TUNING),
    ("env:VLLM_FLASHINFER_ALLREDUCE_BACKEND", TUNING),
    ("host", HARNESS),
    ("port", HARNESS),
    # KV connectors change what is served: every kv_transfer_config key is major but for
    # its addresses, names, role and failure handling.
    ("kv_transfer_config.kv_connector", MAJOR),
    ("kv_transfer_config.kv_connector_extra_config.connectors", MAJOR),
    ("kv_transfer_config.kv_connector_extra_config.cpu_bytes_to_use", MAJOR),
    ("kv_transfer_config.kv_connector_extra_config.some_future_knob", MAJOR),
    ("kv_transfer_config", MAJOR),
    ("kv_offloading_backend", MAJOR),
    ("kv_offloading_size", MAJOR),
    ("env:LMCACHE_CHUNK_SIZE", MAJOR),
    ("load_format", MAJOR),
    ("kv_transfer_config.kv_role", HARNESS),
    ("kv_transfer_config.kv_port", HARNESS),
    ("kv_transfer_config.engine_id", HARNESS),
    ("kv_transfer_config.kv_load_failure_policy", HARNESS),
    ('kv_transfer_config.kv_connector_extra_config."lmcache.mp.port"', HARNESS),
    ("kv_transfer_config.kv_connector_extra_config.proxy_ping_port", HARNESS),
    ("kv_events_config.enable_kv_cache_events", HARNESS),
    ("safetensors_load_strategy", HARNESS),
    ("data_parallel_rpc_port", HARNESS),
    ("data_parallel_hybrid_lb", HARNESS),
    ("data_parallel_address", HARNESS),
    ("data_parallel_start_rank", HARNESS),
    ("data_parallel_size_local", HARNESS),
    ("env:NCCL_CUMEM_ENABLE", HARNESS),
    ("env:UCX_TLS", HARNESS),
    ("env:VLLM_NIXL_SIDE_CHANNEL_PORT", HARNESS),
    ("env:VLLM_ENGINE_READY_TIMEOUT_S", HARNESS),
    ("env:HF_HUB_OFFLINE", HARNESS),
    ("env:PYTHONUNBUFFERED", HARNESS),
    ("env:GLOO_SOCKET_IFNAME", HARNESS),
    ("env:CUDA_VISIBLE_DEVICES", HARNESS),
    ("env:VLLM_ROCM_USE_AITER_MOE", MAJOR),
    ("env:VLLM_ROCM_QUICK_REDUCE_QUANTIZATION", MAJOR),
    ("env:GPU_MAX_HW_QUEUES", TUNING),
    ("env:VLLM_USE_FLASHINFER_MOE_FP4", MAJOR),
    ("env:VLLM_USE_FLASHINFER_MOE_MXFP4_MXFP8", MAJOR),
    ("env:VLLM_ATTENTION_BACKEND", MAJOR),
    ("speculative_config.synthetic_acceptance_length", HARNESS),
    ("tool_call_parser", FUNCTIONAL),
    ("reasoning_parser", FUNCTIONAL),
    ("enable_auto_tool_choice", FUNCTIONAL),
    ("trust_remote_code", FUNCTIONAL),
    ("default_chat_template_kwargs.thinking_mode", FUNCTIONAL),
    ("chat_template", FUNCTIONAL),
    ("some_flag_nobody_classified", MAJOR),
    ("env:SOME_UNKNOWN_VAR", MAJOR),
]


@pytest.mark.parametrize(("key", "expected"), DEFAULTS, ids=[k for k, _ in DEFAULTS])
def test_default_classes(key: str, expected: FlagClass) -> None:
    assert default_policy().classify(key) is expected


def test_every_default_rule_cites_its_basis() -> None:
    for rule in DEFAULT_RULES:
        assert any(mark in rule.basis for mark in ("spec §", "recipes-builder-spec", "#")), rule


def test_num_speculative_tokens_basis_cites_both_sources() -> None:
    basis = default_policy().basis("speculative_config.num_speculative_tokens")
    assert "#2006" in basis and "#682" in basis


def test_unknown_key_basis() -> None:
    # a flag no vLLM version has says so before the catch-all's basis (docs/flags.md)
    assert default_policy().basis("brand_new_flag") == (
        f"not a flag of vLLM 0.10.1–0.27.1 (vLLM refuses it): {UNKNOWN_BASIS}"
    )
    assert default_policy().rule_for("brand_new_flag") is None
    assert Policy(knowledge=False).basis("brand_new_flag") == UNKNOWN_BASIS


def test_classification_is_memoised_and_stable() -> None:
    policy = Policy()
    first = policy.rule_for("env:NCCL_IB_HCA")
    assert first is not None and first.pattern == "env:NCCL_*"
    assert policy.rule_for("env:NCCL_IB_HCA") is first
    assert default_policy() is default_policy()


def test_exact_rule_beats_glob() -> None:
    policy = Policy(
        [
            PolicyRule(pattern="x.*", flag_class=TUNING, basis="t"),
            PolicyRule(pattern="x.y", flag_class=HARNESS, basis="h"),
            PolicyRule(pattern="x.y*", flag_class=FUNCTIONAL, basis="f"),
        ]
    )
    assert policy.classify("x.y") is HARNESS
    assert policy.classify("x.yz") is FUNCTIONAL
    assert policy.classify("x.a") is TUNING


def test_major_keeps_only_major_flags() -> None:
    flags = normalise_mapping(
        {
            "tensor-parallel-size": 4,
            "attention-config": '{"backend": "FLASHINFER", "indexer_kv_dtype": "fp8"}',
            "speculative-config": '{"method":"eagle3","num_speculative_tokens":1}',
            "max-num-seqs": 1024,
            "trust-remote-code": True,
            "data-parallel-rpc-port": 13345,
        },
        {"VLLM_FLOAT32_MATMUL_PRECISION": "high", "UCX_TLS": "rc"},
    )
    assert default_policy().major(flags) == FlagSet(
        {
            "tensor_parallel_size": "4",
            "attention_config.backend": "FLASHINFER",
            "attention_config.indexer_kv_dtype": "fp8",
            "speculative_config.method": "eagle3",
            "speculative_config.num_speculative_tokens": "1",
            "env:VLLM_FLOAT32_MATMUL_PRECISION": "high",
        }
    )
    split = default_policy().by_class(flags)
    assert set(split) == set(FlagClass)
    assert sum(len(part) for part in split.values()) == len(flags)


# ---------------------------------------------------------------------------
# Overrides
# ---------------------------------------------------------------------------


def test_no_repo_or_no_config_gives_default(tmp_path: Path) -> None:
    assert load_policy(None) is default_policy()
    assert load_policy(tmp_path) is default_policy()
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\n')
    assert load_policy(tmp_path) is default_policy()


def test_provenance_toml_override(tmp_path: Path) -> None:
    (tmp_path / "provenance.toml").write_text(
        '[policy]\n"stream_interval" = "major"\n"env:NCCL_*" = "tuning"\n'
        '"attention_config.*" = "tuning"\n'
    )
    policy = load_policy(tmp_path)
    assert policy.classify("stream_interval") is MAJOR
    assert policy.classify("env:NCCL_IB_HCA") is TUNING
    # A user glob wins over a default exact rule: user rules are tried first.
    assert policy.classify("attention_config.backend") is TUNING
    assert policy.classify("max_num_seqs") is TUNING  # untouched default
    assert "provenance.toml" in policy.basis("stream_interval")


def test_pyproject_override_canonicalises_spelling(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(
        '[tool.provenance.policy]\n"--max-num-seqs" = "major"\n'
        '"kv-transfer-config.kv_role" = "major"\n'
    )
    policy = load_policy(tmp_path)
    assert policy.classify("max_num_seqs") is MAJOR
    assert policy.classify("kv_transfer_config.kv_role") is MAJOR
    assert policy.classify("kv_transfer_config.kv_port") is HARNESS  # untouched default


BAD_CONFIGS: list[tuple[str, str, str, str]] = [
    (
        "bad-class",
        "provenance.toml",
        '[policy]\n"stream_interval" = "important"\n',
        "stream_interval",
    ),
    ("class-not-string", "provenance.toml", '[policy]\n"block_size" = 1\n', "block_size"),
    ("bad-pattern", "provenance.toml", '[policy]\n"Block Size" = "major"\n', "Block Size"),
    (
        "empty-sub-key",
        "provenance.toml",
        '[policy]\n"attention_config." = "major"\n',
        "attention_config.",
    ),
    (
        "same-key-two-spellings",
        "provenance.toml",
        '[policy]\n"stream-interval" = "major"\n"stream_interval" = "tuning"\n',
        "stream_interval",
    ),
    (
        "policy-not-table",
        "pyproject.toml",
        '[tool.provenance]\npolicy = "major"\n',
        "tool.provenance.policy",
    ),
    ("toml-syntax", "provenance.toml", "[policy\n", "not valid TOML"),
]


@pytest.mark.parametrize(
    ("filename", "text", "needle"),
    [(f, t, n) for _, f, t, n in BAD_CONFIGS],
    ids=[i for i, _, _, _ in BAD_CONFIGS],
)
def test_invalid_override_names_the_key(
    tmp_path: Path, filename: str, text: str, needle: str
) -> None:
    (tmp_path / filename).write_text(text)
    with pytest.raises(InputError) as info:
        load_policy(tmp_path)
    assert info.value.exit_code == EXIT_INPUT
    message = info.value.diagnostic()
    assert needle in message
    assert filename in message


def test_policy_defined_twice_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "provenance.toml").write_text('[policy]\n"block_size" = "major"\n')
    (tmp_path / "pyproject.toml").write_text('[tool.provenance.policy]\n"block_size" = "tuning"\n')
    with pytest.raises(InputError, match="defined twice"):
        load_policy(tmp_path)


def _naive_classify(policy: Policy, key: str) -> FlagClass:
    """Reference: user rules then defaults; exact before glob; longer glob first. A key is
    classified under its canonical spelling (the alias table's one knob, several names)."""
    target = policy.aliases.canonical(key)
    for layer in (policy.overrides, policy.rules):
        ranked = sorted(layer, key=lambda r: r.specificity, reverse=True)
        for rule in ranked:
            if fnmatch.fnmatchcase(target, rule.pattern):
                return rule.flag_class
    return MAJOR


_PIECES = [r.pattern.replace("*", "") for r in DEFAULT_RULES] + ["x", ".", "_", "env:", "NCCL_"]
_OVERRIDES = Policy(
    DEFAULT_RULES,
    [
        PolicyRule(pattern="env:NCCL_*", flag_class=TUNING, basis="o", origin="provenance.toml"),
        PolicyRule(pattern="attention_config.*", flag_class=FUNCTIONAL, basis="o", origin="x"),
        PolicyRule(pattern="max_num_seqs", flag_class=MAJOR, basis="o", origin="x"),
    ],
)


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(_PIECES), min_size=1, max_size=3).map("".join))
def test_indexed_classification_equals_reference(key: str) -> None:
    for policy in (Policy(), _OVERRIDES):
        assert policy.classify(key) is _naive_classify(policy, key)
        assert policy.classify(key) is policy.classify(key)
