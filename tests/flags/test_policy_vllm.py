"""The policy classes what no rule names from vLLM's own knowledge (config groups,
``vllm/envs.py``), reviewed tables class other programs' environment, and the names the
benchmark workflow injects are never compared (docs/flags.md)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from provenance.model.flags import FlagClass, FlagSet
from provenance.normalise.policy import (
    DEFAULT_RULES,
    KNOWLEDGE,
    TOOL_INJECTED_ENV,
    Policy,
    default_policy,
)
from provenance.normalise.vllm_policy import (
    FIELD_CLASSES,
    GROUP_CLASSES,
    known_flags,
    not_a_vllm_flag,
    stable_defaults,
)

ROOT = Path(__file__).resolve().parents[2]
INFERENCEX = ROOT / "src" / "provenance" / "evidence" / "inferencex"

MAJOR, TUNING, HARNESS, FUNCTIONAL = (
    FlagClass.MAJOR,
    FlagClass.TUNING,
    FlagClass.HARNESS,
    FlagClass.FUNCTIONAL,
)


@pytest.mark.parametrize(
    ("key", "cls"),
    [
        # issue 29's measured reasons, each major before
        ("prefill_schedule_interval", TUNING),
        ("disable_uvicorn_access_log", HARNESS),
        ("env:TORCH_CUDA_ARCH_LIST", HARNESS),
        ("env:OMP_NUM_THREADS", TUNING),
        ("env:WITH_NVIDIA_PEERMEM", HARNESS),
        ("env:ETCD_LEASE_TTL", HARNESS),
        ("env:VLLM_RPC_TIMEOUT", HARNESS),
        ("env:VLLM_HTTP_TIMEOUT_KEEP_ALIVE", HARNESS),
        ("env:GPU_COUNT", HARNESS),
        # the mi355x runner launcher exports its cache directory (a path, not a switch)
        ("env:VLLM_CACHE_ROOT", HARNESS),
        ("env:VLLM_LOGGING_LEVEL", HARNESS),
        # a group's class, and a field that overrides its group
        ("disable_hybrid_kv_cache_manager", TUNING),  # SchedulerConfig
        ("scheduler_cls", MAJOR),  # SchedulerConfig, field rule
        ("kv_cache_metrics_sample", HARNESS),  # ObservabilityConfig
        ("enable_ep_weight_filter", HARNESS),  # ParallelConfig, field rule
        ("dcp_comm_backend", MAJOR),  # ParallelConfig
        ("kda_prefill_backend", MAJOR),  # (no group)
        ("guided_decoding_backend", FUNCTIONAL),  # DecodingConfig
        ("speculative_config.draft_sample_method", MAJOR),  # VllmConfig
        # explicit rules keep precedence over the group
        ("max_model_len", TUNING),  # ModelConfig is major
        ("load_format", MAJOR),  # LoadConfig is harness
        ("kv_transfer_config.kv_connector", MAJOR),
        ("kv_transfer_config.kv_role", HARNESS),
        ("tool_call_parser", FUNCTIONAL),  # Frontend is harness
        # a vLLM environment switch no rule names
        ("env:VLLM_KIMI_K3_SHARD_SP_SHARED_EXPERT", MAJOR),
    ],
)
def test_class_from_rules_then_vllm_knowledge(key: str, cls: FlagClass) -> None:
    assert default_policy().classify(key) is cls
    assert default_policy().is_classified(key)


def test_knowledge_rules_say_which_group_and_versions() -> None:
    policy = default_policy()
    rule = policy.rule_for("prefill_schedule_interval")
    assert rule is not None and rule.origin == KNOWLEDGE
    assert policy.basis("prefill_schedule_interval").startswith(
        "vLLM SchedulerConfig, --prefill-schedule-interval (0.24.0–0.27.1): scheduler knobs"
    )
    assert policy.basis("scheduler_cls").endswith("(field rule)")
    # without the knowledge the catch-all decides, as before
    plain = Policy(knowledge=False)
    assert plain.classify("prefill_schedule_interval") is MAJOR
    assert not plain.is_classified("prefill_schedule_interval")
    assert plain.digest != policy.digest


def test_unknown_names_stay_major_and_unclassified() -> None:
    policy = default_policy()
    for key in ("env:SOME_OTHER_PROGRAM_KNOB", "brand_new_flag", "env:VLLM_NOT_IN_ENVS_PY"):
        assert policy.classify(key) is MAJOR
        assert not policy.is_classified(key)


def test_a_flag_no_vllm_version_knows_is_named_so() -> None:
    assert not_a_vllm_flag("brand_new_flag") == "not a flag of vLLM 0.10.1–0.27.1 (vLLM refuses it)"
    # the Kimi-K3 GB200 records' --kv-cache-memory: argparse expands a unique prefix
    assert not_a_vllm_flag("kv_cache_memory") == (
        "not a flag of vLLM 0.10.1–0.27.1 (argparse reads it as an abbreviation of "
        "--kv-cache-memory-bytes)"
    )
    assert not_a_vllm_flag("max_num_seqs") is None
    assert not_a_vllm_flag("compilation_config.mode") is None
    assert not_a_vllm_flag("env:ANYTHING") is None


def test_every_group_of_the_table_is_reviewed() -> None:
    groups = {flag.group for flag in known_flags().values()}
    assert groups <= set(GROUP_CLASSES), sorted(groups - set(GROUP_CLASSES))


def test_every_field_rule_names_a_vllm_flag_the_rules_leave_to_it() -> None:
    explicit = Policy(knowledge=False)
    for key in FIELD_CLASSES:
        assert key in known_flags(), key
        # a field rule an explicit rule hides would never apply
        assert not explicit.is_classified(key), key


def _synthesised_env_names() -> set[str]:
    """Every upper-case name the InferenceX point evaluation puts in an env mapping:
    ``{"NAME": ...}`` displays of three or more such keys, and ``env["NAME"] = ...``."""
    names: set[str] = set()
    upper = re.compile(r"[A-Z][A-Z0-9_]*")
    for path in sorted(INFERENCEX.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Dict):
                keys = [k.value for k in node.keys if isinstance(k, ast.Constant)]
                if len(keys) >= 3 and all(isinstance(k, str) and upper.fullmatch(k) for k in keys):
                    names.update(str(k) for k in keys)
            elif (
                isinstance(node, ast.Subscript)
                and isinstance(node.ctx, ast.Store)
                and isinstance(node.value, ast.Name)
                and node.value.id == "env"
                and isinstance(node.slice, ast.Constant)
                and isinstance(node.slice.value, str)
            ):
                names.add(node.slice.value)
    return names


def test_every_name_the_point_evaluation_injects_is_harness() -> None:
    names = _synthesised_env_names()
    assert "GPU_COUNT" in names and "RESULT_FILENAME" in names  # the scan finds them
    missing = sorted(names - set(TOOL_INJECTED_ENV))
    # a name covered by another harness rule (HF_HUB_CACHE: env:HF_*) need not be listed
    missing = [n for n in missing if default_policy().classify(f"env:{n}") is not HARNESS]
    assert not missing
    for name in TOOL_INJECTED_ENV:
        assert default_policy().classify(f"env:{name}") is HARNESS, name


def test_reviewed_rules_are_default_rules() -> None:
    patterns = {rule.pattern for rule in DEFAULT_RULES}
    assert {"env:TORCH_CUDA_ARCH_LIST", "env:VLLM_*TIMEOUT*", "env:GPU_COUNT"} <= patterns


def test_docs_list_the_group_and_field_tables() -> None:
    text = (ROOT / "docs" / "flags.md").read_text(encoding="utf-8")
    for group, (cls, reason) in GROUP_CLASSES.items():
        assert f"| `{group}` | {cls.value} | {reason} |" in text, group
    for key, (cls, reason) in FIELD_CLASSES.items():
        assert f"| `{key}` | {cls.value} | {reason} |" in text, key


def test_an_explicit_default_equals_its_absence_on_both_sides() -> None:
    policy = default_policy()
    # vLLM's --moe-backend default is auto in every covered version that has it (0.17.0+)
    explicit = FlagSet({"moe_backend": "auto", "block_size": "64"})
    assert policy.major(explicit) == policy.major(FlagSet({"block_size": "64"}))
    assert policy.explicit_default("moe_backend", "auto")
    assert not policy.explicit_default("moe_backend", "marlin")
    assert policy.major(FlagSet({"moe_backend": "marlin"})) == FlagSet({"moe_backend": "marlin"})
    # without the knowledge it is a flag like any other
    assert Policy(knowledge=False).major(explicit) == explicit


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("disable_cascade_attn", "true"),  # false to 0.17.0, true from 0.18.0
        ("all2all_backend", "allgather_reducescatter"),  # None (computed) before 0.14.0
        ("model", "Qwen/Qwen3-0.6B"),  # vLLM's placeholder default model
    ],
)
def test_a_default_that_depends_on_the_version_stays_a_value(key: str, value: str) -> None:
    assert key not in stable_defaults() or key == "model"
    assert default_policy().major(FlagSet({key: value})) == FlagSet({key: value})
