"""Classes from vLLM's own knowledge: each flag's config group, each environment variable.

:mod:`provenance.normalise.policy` tries its explicit rules first (deliberate, each
with its precedent); a key none of them names is classed here, from what the shipped
vLLM tables (:mod:`provenance.normalise.vllm_knowledge`) say about it:

* a ``vllm serve`` flag takes the class of its config group (:data:`GROUP_CLASSES`,
  a short reviewed mapping), unless :data:`FIELD_CLASSES` names the flag (a group that
  mixes classes); the group is the one of the newest version that has the flag;
* a ``VLLM_*`` environment variable of ``vllm/envs.py`` that no rule names is
  ``major``: an engine switch (kernel and backend switches are the most of them);
  timeouts and logging are named by the explicit rules;
* anything else — a flag no covered vLLM version knows, an environment variable of no
  vLLM version that no rule names — is left to the policy's catch-all (``major``), and
  :func:`not_a_vllm_flag` says so for a flag.

Each entry's reason is shown by ``provenance flags --why`` and listed in docs/flags.md.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

from provenance.model.flags import FlagClass
from provenance.normalise.canonical import canonical_value
from provenance.normalise.vllm_knowledge import raw, versions

__all__ = [
    "FIELD_CLASSES",
    "GROUP_CLASSES",
    "KnownFlag",
    "knowledge_class",
    "known_env",
    "known_flags",
    "not_a_vllm_flag",
    "stable_defaults",
    "version_range",
]

MAJOR = FlagClass.MAJOR
TUNING = FlagClass.TUNING
HARNESS = FlagClass.HARNESS
FUNCTIONAL = FlagClass.FUNCTIONAL

_SERVED = "defines what is served (spec §7: model, cache, parallelism, precision, kernels)"

#: Config group (the class vLLM's argparse arguments come from) → class, with the reason.
GROUP_CLASSES: dict[str, tuple[FlagClass, str]] = {
    "SchedulerConfig": (
        TUNING,
        "scheduler knobs (batch sizes, chunking, admission intervals) decide how requests "
        "are batched, not what is served (spec §7 names max_num_seqs and "
        "max_num_batched_tokens tuning)",
    ),
    "CompilationConfig": (
        TUNING,
        "compilation and CUDA graph capture (spec §7: cudagraph sizes are tuning)",
    ),
    "ObservabilityConfig": (HARNESS, "metrics and tracing (spec §7: logging is harness)"),
    "Frontend": (
        HARNESS,
        "the OpenAI server's own arguments: addresses, TLS, CORS, logging, middleware "
        "(spec §7: ports and plumbing are harness)",
    ),
    "LoadConfig": (
        HARNESS,
        "where and how the same weights are read from storage (spec §7: harness, like "
        "download_dir); load_format is major by its own rule",
    ),
    "DecodingConfig": (FUNCTIONAL, "structured output and reasoning parsing (functional)"),
    "StructuredOutputsConfig": (
        FUNCTIONAL,
        "structured output and reasoning parsing (functional)",
    ),
    "ModelConfig": (MAJOR, _SERVED),
    "CacheConfig": (MAJOR, _SERVED),
    "ParallelConfig": (MAJOR, _SERVED),
    "SpeculativeConfig": (MAJOR, _SERVED),
    "AttentionConfig": (MAJOR, _SERVED),
    "KernelConfig": (MAJOR, _SERVED),
    "LoRAConfig": (MAJOR, "LoRA adapters change the served model"),
    "MultiModalConfig": (MAJOR, _SERVED),
    "MambaConfig": (MAJOR, _SERVED),
    "OffloadConfig": (MAJOR, "weights offloaded to CPU memory (spec §7 catch-all)"),
    "UVAOffloadConfig": (MAJOR, "weights offloaded to CPU memory (spec §7 catch-all)"),
    "PrefetchOffloadConfig": (MAJOR, "weights offloaded to CPU memory (spec §7 catch-all)"),
    "VllmConfig": (MAJOR, "a sub-config of the engine (" + _SERVED + ")"),
    "(no group)": (MAJOR, "registered on the parser itself, no config group: " + _SERVED),
}

_TIMEOUT = "a timeout: how long to wait, not what is served (harness)"
_LOGGING = "logging (spec §7: harness)"
_STARTUP = "start-up and loading only: what is served is unchanged (harness)"
_KV_MEMORY = "how much memory the KV cache gets (tuning, like gpu_memory_utilization)"

#: Flags whose class differs from their group's, with the reason (keys are canonical).
FIELD_CLASSES: dict[str, tuple[FlagClass, str]] = {
    # (no group): the parser's own arguments mix plumbing and kernels
    "aggregate_engine_logging": (HARNESS, _LOGGING),
    "api_server_count": (TUNING, "API server processes: front-end throughput (tuning)"),
    "fail_on_environ_validation": (HARNESS, "start-up check of the environment (harness)"),
    "grpc": (HARNESS, "the server's transport (harness)"),
    "shutdown_timeout": (HARNESS, _TIMEOUT),
    # SchedulerConfig: a scheduler implementation is not a knob
    "scheduler_cls": (MAJOR, "names another scheduler implementation (a class), not a knob"),
    # Frontend: adapters served are the model
    "lora_modules": (MAJOR, "LoRA adapters served by the front end change the served model"),
    # ModelConfig
    "seed": (FUNCTIONAL, "sampling seed: which tokens are drawn, not performance"),
    "max_logprobs": (FUNCTIONAL, "a response limit (functional)"),
    "logprobs_mode": (FUNCTIONAL, "what logprobs are returned (functional)"),
    "hf_token": (HARNESS, "a credential (harness)"),
    "skip_tokenizer_init": (FUNCTIONAL, "the server's tokenizer front end (functional)"),
    "allowed_media_domains": (FUNCTIONAL, "media access (functional)"),
    "enable_prompt_embeds": (FUNCTIONAL, "accepted input forms (functional)"),
    "disable_async_output_proc": (TUNING, "output processing overlap (tuning)"),
    "max_seq_len_to_capture": (TUNING, "CUDA graph capture (tuning, like compilation)"),
    "renderer_num_workers": (TUNING, "front-end worker count (tuning)"),
    # CacheConfig
    "swap_space": (TUNING, _KV_MEMORY),
    "num_gpu_blocks_override": (TUNING, _KV_MEMORY),
    "kv_cache_memory_bytes": (TUNING, _KV_MEMORY),
    "prefix_caching_hash_algo": (TUNING, "prefix-cache key hashing (tuning)"),
    "prefix_match_unit": (
        TUNING,
        "prefix-cache hit granularity (vLLM: 'controls matching granularity only'), "
        "tuning like enable_prefix_caching",
    ),
    # ParallelConfig
    "distributed_timeout_seconds": (HARNESS, _TIMEOUT),
    "cpu_distributed_timeout_seconds": (HARNESS, _TIMEOUT),
    "max_parallel_loading_workers": (HARNESS, _STARTUP),
    "enable_ep_weight_filter": (
        HARNESS,
        _STARTUP + " (vLLM: 'skip non-local expert weights during model loading')",
    ),
    "ray_workers_use_nsight": (HARNESS, "profiling (harness)"),
    "device_ids": (HARNESS, "placement (harness, like CUDA_VISIBLE_DEVICES)"),
    "numa_bind": (TUNING, "CPU/NUMA affinity of the workers (tuning)"),
    "numa_bind_nodes": (TUNING, "CPU/NUMA affinity of the workers (tuning)"),
    "numa_bind_cpus": (TUNING, "CPU/NUMA affinity of the workers (tuning)"),
    "ubatch_size": (TUNING, "dual-batch-overlap micro-batch size (tuning, like enable_dbo)"),
    "disable_nccl_for_dp_synchronization": (TUNING, "DP synchronisation transport (tuning)"),
    "eplb_log_balancedness": (HARNESS, _LOGGING),
    "enable_fault_tolerance": (HARNESS, "failure handling (harness)"),
    "fault_tolerance_config": (HARNESS, "failure handling (harness)"),
    # MultiModalConfig
    "skip_mm_profiling": (TUNING, "memory profiling at start-up (tuning)"),
    "disable_mm_preprocessor_cache": (TUNING, "multimodal cache (tuning)"),
    "mm_shm_cache_max_object_size_mb": (TUNING, "multimodal cache (tuning)"),
    "mm_ipc_gpu_memory_gb": (TUNING, "multimodal IPC memory (tuning)"),
    "mm_tensor_ipc": (TUNING, "multimodal IPC (tuning)"),
    "mm_hasher_algorithm": (TUNING, "multimodal cache key hashing (tuning)"),
    "interleave_mm_strings": (FUNCTIONAL, "accepted input forms (functional)"),
    "enable_mm_embeds": (FUNCTIONAL, "accepted input forms (functional)"),
    "mm_encoder_fp8_scale_save_path": (HARNESS, "where scales are saved (harness)"),
    "mm_encoder_fp8_scale_save_margin": (HARNESS, "saving scales (harness)"),
    # VllmConfig: a container of sub-configs, each classed by what it configures
    "optimization_level": (TUNING, "compilation level (tuning, like compilation_config)"),
    "profiler_config": (HARNESS, "profiling (harness)"),
    "weight_transfer_config": (HARNESS, "weight updates from a trainer (harness)"),
    "structured_outputs_config": (FUNCTIONAL, "structured output (functional)"),
}


class KnownFlag(NamedTuple):
    """What the covered vLLM versions say about one flag: its group in the newest version
    that has it, and the oldest and newest version that has it."""

    group: str
    first: str
    last: str


@functools.cache
def known_flags() -> dict[str, KnownFlag]:
    """Every flag of every covered vLLM version (canonical key → :class:`KnownFlag`)."""
    found: dict[str, KnownFlag] = {}
    for version in versions():  # oldest first
        for key, facts in raw(version)["flags"].items():
            first = found[key].first if key in found else version
            found[key] = KnownFlag(str(facts["group"]), first, version)
    return found


@functools.cache
def known_env() -> dict[str, tuple[str, str]]:
    """Every environment variable a covered ``vllm/envs.py`` reads → (first, last) version."""
    found: dict[str, tuple[str, str]] = {}
    for version in versions():
        for name in raw(version)["env"]:
            found[name] = (found[name][0] if name in found else version, version)
    return found


def version_range() -> str:
    """The covered versions, as ``0.10.1–0.27.1``."""
    covered = versions()
    return f"{covered[0]}–{covered[-1]}"


def _span(first: str, last: str) -> str:
    return first if first == last else f"{first}–{last}"


def knowledge_class(key: str) -> tuple[FlagClass, str] | None:
    """The class of a canonical key from vLLM's knowledge, with its reason; None when no
    covered vLLM version knows the key (or it is an environment variable of another
    program)."""
    if key.startswith("env:"):
        name = key[4:]
        span = known_env().get(name)
        if span is None:
            return None
        return MAJOR, (
            f"vLLM environment variable (vllm/envs.py {_span(*span)}) that no reviewed rule "
            "names: major, as vLLM's engine switches are (kernels, backends); timeouts and "
            "logging have their own rules"
        )
    head = key.split(".", 1)[0]
    flag = known_flags().get(head)
    if flag is None:
        return None
    where = f"vLLM {flag.group}, --{head.replace('_', '-')} ({_span(flag.first, flag.last)})"
    override = FIELD_CLASSES.get(head)
    if override is not None:
        return override[0], f"{where}: {override[1]} (field rule)"
    cls, reason = GROUP_CLASSES.get(flag.group, (MAJOR, _SERVED + " (group not reviewed)"))
    return cls, f"{where}: {reason} (group rule)"


def not_a_vllm_flag(key: str) -> str | None:
    """``not a flag of vLLM 0.10.1–0.27.1`` for a flag key no covered version knows; None
    for a known flag and for every environment variable."""
    head = key.split(".", 1)[0]
    if key.startswith("env:") or head in known_flags():
        return None
    longer = sorted(k for k in known_flags() if k.startswith(head))
    if len(longer) == 1:  # argparse's allow_abbrev reads a unique prefix as the flag
        return (
            f"not a flag of vLLM {version_range()} (argparse reads it as an abbreviation "
            f"of --{longer[0].replace('_', '-')})"
        )
    return f"not a flag of vLLM {version_range()} (vLLM refuses it)"


@functools.cache
def stable_defaults() -> dict[str, str]:
    """Flag key → its default, canonical, for every flag whose default is one and the same
    concrete value in every covered version that has it (``moe_backend`` → ``auto``,
    0.17.0–0.27.1). A flag whose default changed between versions
    (``disable_cascade_attn``: false to 0.17.0, true from 0.18.0), is computed at run
    time (``None``, a ``default_expr``) or is a list or mapping is not here: its default
    depends on the version, so an explicit value stays a value."""
    seen: dict[str, set[str]] = {}
    for version in versions():
        for key, facts in raw(version)["flags"].items():
            default = facts.get("default")
            concrete = "default_expr" not in facts and isinstance(default, str | int | float)
            seen.setdefault(key, set()).add(canonical_value(default) if concrete else "\0")
    return {
        key: next(iter(values))
        for key, values in sorted(seen.items())
        if len(values) == 1 and "\0" not in values and "" not in values and key not in _IDENTITY
    }


#: Never a default: the model is what is served (vLLM's default model is a placeholder).
_IDENTITY = frozenset({"model", "tokenizer", "revision", "served_model_name"})
