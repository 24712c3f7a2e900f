"""Which flags need evidence: a class for every canonical flag key.

``major`` flags define what is served (checkpoint, parallelism, precision,
kernels, speculative decoding) and must each be matched by benchmark
evidence; ``tuning`` flags are per-point InferenceX tuning; ``harness`` flags
are plumbing (ports, hosts, placement, logging, NCCL/UCX env); ``functional`` flags
change behaviour, not performance (parsers, chat templates). A key no rule
names takes the class vLLM's own knowledge gives it (its config group, or ``major``
for a ``VLLM_*`` environment variable of ``vllm/envs.py``:
:mod:`provenance.normalise.vllm_policy`); a key neither knows is ``major``: an
unclassified flag is never silently ignored, and one no vLLM version has is said to be
"not a flag of vLLM".

The default table starts from ``specs/inferencex-evidence-spec.md`` §7 (which
in turn cites InferenceX ``docs/PR_REVIEW_CHECKLIST.md`` and the codeowner
sign-off prompt, Check 3(c)) and PR precedents; each rule carries its basis,
shown by ``provenance flags`` and listed in ``docs/flags.md``.

Users override classes in the audited repository: ``provenance.toml``
(``[policy]`` table) or ``pyproject.toml`` (``[tool.provenance.policy]``),
``"pattern" = "class"`` per line. Patterns are canonical keys with optional
globs (``env:NCCL_*``, ``compilation_config.*``). User rules are tried before
the defaults; within one layer an exact key beats a glob, and a longer glob
beats a shorter one.

Three tables refine the classes (each with its basis, each overridable in the same
file): *aliases* map the spellings of one knob to one canonical key
(:mod:`provenance.normalise.aliases`, ``[aliases]``); *context rules* make a flag
inert for a role or next to another flag (:mod:`provenance.normalise.context`,
``[context.<id>]``); *compared defaults* give vLLM's value of a key a command leaves
unset, so that an explicit ``--tensor-parallel-size 1`` against evidence at 8 reads
as the value mismatch it is (:data:`COMPARED_DEFAULTS`).

Why one module (about 780 lines): most of it is data, the default rule table with
the basis of every rule (about 200 lines), kept beside the :class:`Policy` that
applies it; the rest reads the user's override tables into the same
:class:`PolicyRule`/:class:`~provenance.normalise.aliases.AliasRule`/
:class:`~provenance.normalise.context.ContextRule` values, with the same
canonical-pattern rules the defaults are written in.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import functools
import hashlib
import json
import re
import tomllib
from collections.abc import Iterable, Mapping
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from provenance.errors import InputError
from provenance.model.flags import FlagClass, FlagSet
from provenance.normalise.aliases import DEFAULT_ALIASES, AliasRule, AliasTable
from provenance.normalise.canonical import ONE_BY_DEFAULT
from provenance.normalise.context import DEFAULT_CONTEXT_RULES, ContextRule, ContextRules
from provenance.normalise.vllm_knowledge import versions
from provenance.normalise.vllm_policy import (
    FIELD_CLASSES,
    GROUP_CLASSES,
    VersionDefaults,
    knowledge_class,
    not_a_vllm_flag,
    stable_defaults,
)

__all__ = [
    "COMPARED_DEFAULTS",
    "DEFAULT_RULES",
    "KNOWLEDGE",
    "POLICY_FILES",
    "TOOL_INJECTED_ENV",
    "UNKNOWN_BASIS",
    "Policy",
    "PolicyRule",
    "default_policy",
    "load_policy",
    "parse_aliases_table",
    "parse_context_table",
    "parse_policy_table",
    "toml_line",
]

MAJOR = FlagClass.MAJOR
TUNING = FlagClass.TUNING
HARNESS = FlagClass.HARNESS
FUNCTIONAL = FlagClass.FUNCTIONAL

#: The origin of a rule that vLLM's knowledge gives (:mod:`provenance.normalise.vllm_policy`).
KNOWLEDGE = "vllm"

UNKNOWN_BASIS = (
    "unclassified key: major by default (spec §7 catch-all, "
    "'other flags that materially change the served model')"
)


class PolicyRule(BaseModel):
    """``pattern`` (canonical key, globs allowed) → ``flag_class``, with the reason why."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    pattern: str
    flag_class: FlagClass
    basis: str
    origin: str = "default"

    @property
    def is_glob(self) -> bool:
        return any(ch in self.pattern for ch in "*?[")

    @property
    def specificity(self) -> tuple[int, int]:
        """Exact keys first, then longer patterns (more literal characters)."""
        literal = sum(1 for ch in self.pattern if ch not in "*?[]")
        return (0 if self.is_glob else 1, literal)

    def matches(self, key: str) -> bool:
        if not self.is_glob:
            return key == self.pattern
        return fnmatch.fnmatchcase(key, self.pattern)


# Bases, one per source, so the table below stays readable.
_S7_PARALLEL = "spec §7: explicit ('parallelism: TP/EP/DP/PP and DP-attention'), Check 3(c)"
_S7_QUANT = "spec §7: explicit (--quantization, --kv-cache-dtype), Check 3(c)"
_S7_KERNEL = "spec §7: explicit ('kernel-selection backends'), Check 3(c)"
_S7_KERNEL_ANALOGY = "spec §7: kernel selection, by analogy to the explicit backends"
_S7_INDEXER = (
    "spec §7: precedent InferenceX #2120 rejected 2026-07-23 (indexer K cache precision) "
    "until recipes #682; #2470 (minimax_m3_msa_decode_backend); every attention_config.* is "
    "kernel or precision selection"
)
_S7_SPEC_METHOD = (
    "spec §7: precedent InferenceX #2337 rejected 2026-07-28 (draft model contradicted the "
    "recipe) until recipes #702"
)
_S7_SPEC_TOKENS = (
    "default major although spec §7 cites InferenceX #2006 ('per-point num_speculative_tokens "
    "... InferenceX-specific tuning'): the recipes #682 review flagged a prefill/decode "
    "num_speculative_tokens asymmetry as a parity issue, and the MiniMax-M3 review treats a "
    "P/D mismatch as value-mismatch (DESIGN.md verdict semantics)"
)
_S7_SPEC_DRAFTER = (
    "spec §7: drafter kernel selection (analogy); recipes carry per-platform overrides"
)
_S7_BLOCK = "spec §7: correctness (MiniMax-M3 recipe base_args: mandatory for MSA)"
_S7_LMO = "spec §7: verifier #1929 listed it among matched major args"
_S7_NUMERICS = "spec §7: numerics env (recipe extra_env blackwell/nvfp4)"
_S7_FORBIDDEN = (
    "spec §7: FORBIDDEN in InferenceX (Check 8, model-config editing); major so it is never ignored"
)
_S7_MODEL = "spec §7: explicit (model / checkpoint)"
_S7_DTYPE = "spec §7 catch-all: changes the served model's numerics (analogy to --quantization)"
_S7_TUNING = "spec §7: InferenceX-specific tuning (analogy to the explicit list)"
_S7_TUNING_EXPLICIT = "spec §7: InferenceX-specific, explicit"
_S7_AR_BACKEND = (
    "spec §7: precedent #2006 ('pins the single-node choice of vLLM's auto default'), informational"
)
_S7_HARNESS = "spec §7: harness/plumbing (analogy)"
_S7_HARNESS_EXPLICIT = "spec §7: explicit ('ports, result filenames'), harness"
_S7_BENCH = (
    "spec §7 Check 11: synthetic rejection sampling is benchmark methodology (required for "
    "agentic, forbidden for fixed-seq-len), not a serving choice"
)
_S7_FUNCTIONAL = "spec §7: functional, perf-neutral (recipe features)"
_RECIPES_S3 = (
    "recipes-builder-spec §3.3: emitted per node by the parallelism emitter (placement plumbing)"
)
_ENV_KERNEL = (
    "kernel and backend switches of vLLM's environment ({}): kernel selection, by analogy "
    "to the explicit backends (spec §7)"
)
_ENV_CLIENT = (
    "benchmark client settings ({}): read by the benchmark client, not by the server "
    "(spec §7: harness)"
)
_ENV_STORAGE = (
    "weight and data loading from storage ({}): where bytes come from, not what is served "
    "(spec §7: harness, like HF_*)"
)
_S7_CATCH_ALL = "spec §7 catch-all ('other flags that materially change ... its throughput')"
_CHANGES = _S7_CATCH_ALL + ": "
_LOAD_FORMAT = (
    _CHANGES + "the format decides which weights are loaded (dummy = random weights; "
    "bitsandbytes, gguf = quantised), not only where bytes come from (was harness)"
)
_KV_CONNECTOR = (
    _CHANGES + "the KV connector and its settings decide where the KV cache lives and moves "
    "(CPU/filesystem offload tiers and their sizes, PD transfer, LMCache, Mooncake store), so "
    "prefix hits and throughput differ (was harness)"
)
_KV_OFFLOAD = (
    _CHANGES + "vLLM's {} (CacheConfig) picks the KV offload tier and its size, the shorthand "
    "for an offloading kv_transfer_config"
)
_KV_LMCACHE = (
    _CHANGES + "LMCache's environment configures its KV tiers (chunk size, local CPU/disk "
    "sizes, remote backend), like kv_transfer_config"
)
_KV_EXTRA = "kv_transfer_config.kv_connector_extra_config."
_KV_PLUMBING = (
    "spec §7: harness/plumbing inside kv_transfer_config ({}): how to reach the connector, "
    "not what it caches"
)
_KV_ROLE = (
    "spec §7: harness/plumbing inside kv_transfer_config: the transfer direction of a PD "
    "worker; the connector (major) decides the path, and NixlConnector reads no role "
    "(recipes write kv_producer/kv_consumer where InferenceX writes kv_both)"
)
_KV_FAILURE = (
    "spec §7: harness/plumbing inside kv_transfer_config: what to do when a KV transfer fails "
    "(recompute or fail); a benchmark run whose transfers succeed is unchanged"
)
_RECIPES_S4 = (
    "recipes-builder-spec §4 step 6: env the builder emits per PD pool / multi-node rendezvous "
    "(placement plumbing, like NCCL_SOCKET_IFNAME)"
)


_ENV_BUILD = (
    "build hint ({}): the target architectures of kernels compiled just in time, not a "
    "choice of kernel or precision (spec §7: harness)"
)
_ENV_HOST = (
    "host runtime ({}): CPU threads, allocator or queues of the process (spec §7: tuning, "
    "like GPU_MAX_HW_QUEUES)"
)
_ENV_RUNTIME_KERNEL = _S7_KERNEL_ANALOGY + " ({})"
_ENV_VLLM_TIMEOUT = (
    "vLLM envs.py: a timeout ({}): how long to wait, not what is served (spec §7: harness)"
)
_ENV_VLLM_TUNING = "vLLM envs.py ({}): a size or threshold of the engine (spec §7: tuning)"
_ENV_FOREIGN = (
    "{}: not in vLLM's envs.py of any covered version (a custom image's switch); reviewed by name "
    "(spec §7 classes)"
)
_INJECTED = (
    "set for every point by InferenceX's benchmark workflow (benchmark-tmpl.yml and the "
    "multi-node templates), which provenance's point evaluation reproduces "
    "(evidence.inferencex.scripts, amd_disagg): a workflow input, never a serving choice "
    "(spec §7: harness)"
)

#: Environment names the InferenceX benchmark workflow sets for every point, as
#: provenance's point evaluation synthesises them (``evidence.inferencex.scripts``,
#: ``evidence.inferencex.amd_disagg``); a launcher that exports one passes it on to the
#: server, where it means nothing. ``tests/flags/test_policy_vllm.py`` checks the list
#: against those modules.
TOOL_INJECTED_ENV: tuple[str, ...] = (
    "CONC",
    "CONC_LIST",
    "DCP_SIZE",
    "DISAGG",
    "DP_ATTENTION",
    "DURATION",
    "EP_SIZE",
    "EVAL_ONLY",
    "EXP_NAME",
    "FRAMEWORK",
    "FRAMEWORK_SUFFIX",
    "FW_SUFFIX",
    "GITHUB_WORKSPACE",
    "GPU_COUNT",
    "IMAGE",
    "ISL",
    "IS_AGENTIC",
    "IS_MULTINODE",
    "KV_OFFLOADING",
    "KV_OFFLOAD_BACKEND",
    "LEGACY_FW_SUFFIX",
    "MAX_MODEL_LEN",
    "MODEL",
    "MODEL_CODE",
    "MODEL_NAME",
    "MODEL_PATH",
    "MODEL_PREFIX",
    "NODE0_ADDR",
    "OSL",
    "PCP_SIZE",
    "PORT",
    "PP_SIZE",
    "PRECISION",
    "PROXY_PING_PORT",
    "RANDOM_RANGE_RATIO",
    "RESULT_DIR",
    "RESULT_FILENAME",
    "RUNNER_NAME",
    "RUNNER_TYPE",
    "RUN_EVAL",
    "SCENARIO_SUBDIR",
    "SCENARIO_TYPE",
    "SERVED_MODEL",
    "SERVER_PORT",
    "SPEC_DECODING",
    "SPEC_SUFFIX",
    "TOTAL_CPU_DRAM_GB",
    "TP",
    "USER",
)


def _rules(table: Iterable[tuple[str, FlagClass, str]]) -> tuple[PolicyRule, ...]:
    return tuple(PolicyRule(pattern=p, flag_class=c, basis=b) for p, c, b in table)


#: The default policy. Order does not matter (specificity decides).
DEFAULT_RULES: tuple[PolicyRule, ...] = _rules(
    [
        # --- major: what is served ------------------------------------------------
        ("model", MAJOR, _S7_MODEL),
        ("tokenizer", MAJOR, _S7_MODEL),
        ("revision", MAJOR, _S7_MODEL),
        ("tensor_parallel_size", MAJOR, _S7_PARALLEL),
        ("data_parallel_size", MAJOR, _S7_PARALLEL),
        ("pipeline_parallel_size", MAJOR, _S7_PARALLEL),
        ("decode_context_parallel_size", MAJOR, _S7_PARALLEL),
        ("prefill_context_parallel_size", MAJOR, _S7_PARALLEL),
        ("enable_expert_parallel", MAJOR, _S7_PARALLEL),
        ("enable_dp_attention", MAJOR, _S7_PARALLEL),
        ("enable_dp_lm_head", MAJOR, _S7_PARALLEL),
        ("enable_eplb", MAJOR, _S7_PARALLEL),
        ("mm_encoder_tp_mode", MAJOR, _S7_PARALLEL + " (encoder parallelism)"),
        ("quantization", MAJOR, _S7_QUANT),
        ("kv_cache_dtype", MAJOR, _S7_QUANT),
        ("dtype", MAJOR, _S7_DTYPE),
        ("attention_backend", MAJOR, _S7_KERNEL),
        ("attention_config.*", MAJOR, _S7_INDEXER),
        ("attention_config.backend", MAJOR, _S7_KERNEL),
        ("attention_config.use_trtllm_attention", MAJOR, _S7_KERNEL),
        ("moe_backend", MAJOR, _S7_KERNEL),
        ("moe_runner_backend", MAJOR, _S7_KERNEL),
        ("linear_backend", MAJOR, _S7_KERNEL),
        ("all2all_backend", MAJOR, _S7_KERNEL),
        ("enable_flashinfer_allreduce_fusion", MAJOR, _S7_KERNEL),
        ("mm_encoder_attn_backend", MAJOR, _S7_KERNEL_ANALOGY),
        ("speculative_config.method", MAJOR, _S7_SPEC_METHOD),
        ("speculative_config.model", MAJOR, _S7_SPEC_METHOD),
        ("speculative_config.num_speculative_tokens", MAJOR, _S7_SPEC_TOKENS),
        ("speculative_config.attention_backend", MAJOR, _S7_SPEC_DRAFTER),
        ("speculative_config.draft_tensor_parallel_size", MAJOR, _S7_PARALLEL + " (drafter)"),
        ("block_size", MAJOR, _S7_BLOCK),
        ("language_model_only", MAJOR, _S7_LMO),
        ("hf_overrides", MAJOR, _S7_FORBIDDEN),
        ("hf_overrides.*", MAJOR, _S7_FORBIDDEN),
        ("json_model_override_args", MAJOR, _S7_FORBIDDEN),
        ("env:VLLM_FLOAT32_MATMUL_PRECISION", MAJOR, _S7_NUMERICS),
        ("env:VLLM_MINIMAX_M3_MSA_DECODE_BACKEND", MAJOR, _S7_INDEXER),
        ("env:VLLM_USE_FLASHINFER_MOE_*", MAJOR, _S7_KERNEL_ANALOGY + " (MoE kernels)"),
        ("env:VLLM_FLASHINFER_MOE_BACKEND", MAJOR, _S7_KERNEL_ANALOGY + " (MoE kernels)"),
        (
            "env:VLLM_ATTENTION_BACKEND",
            MAJOR,
            _S7_KERNEL + " (env spelling of --attention-backend)",
        ),
        (
            "env:VLLM_USE_TRTLLM_ATTENTION",
            MAJOR,
            _S7_KERNEL + " (env spelling of use_trtllm_attention)",
        ),
        ("env:VLLM_USE_DEEP_GEMM", MAJOR, _S7_KERNEL_ANALOGY),
        ("env:VLLM_USE_TRTLLM_RAGGED_DEEPSEEK_PREFILL", MAJOR, _S7_KERNEL_ANALOGY),
        (
            "env:VLLM_ROCM_USE_AITER*",
            MAJOR,
            _S7_KERNEL_ANALOGY + " (AITER kernels, MiniMax-M3 AMD env)",
        ),
        ("env:TORCH_BLAS_PREFER_HIPBLASLT", MAJOR, _S7_KERNEL_ANALOGY + " (GEMM library)"),
        ("env:VLLM_ROCM_QUICK_REDUCE_QUANTIZATION", MAJOR, _S7_NUMERICS + "; quantised all-reduce"),
        ("env:VLLM_ROCM_QUICK_REDUCE_*", MAJOR, _S7_NUMERICS + "; quantised all-reduce settings"),
        ("env:VLLM_USE_*", MAJOR, _ENV_KERNEL.format("VLLM_USE_*")),
        ("env:VLLM_ROCM_*", MAJOR, _ENV_KERNEL.format("VLLM_ROCM_*, the ROCm kernel switches")),
        ("env:VLLM_*_BACKEND", MAJOR, _ENV_KERNEL.format("VLLM_*_BACKEND")),
        ("env:NCCL_ALGO", MAJOR, _ENV_KERNEL.format("NCCL collective algorithm")),
        ("env:NCCL_PROTO", MAJOR, _ENV_KERNEL.format("NCCL collective protocol")),
        ("cpu_offload_gb", MAJOR, _S7_CATCH_ALL + ": weights offloaded to CPU memory"),
        ("kv_transfer_config", MAJOR, _KV_CONNECTOR),
        ("kv_transfer_config.*", MAJOR, _KV_CONNECTOR),
        ("kv_offloading_backend", MAJOR, _KV_OFFLOAD.format("--kv-offloading-backend")),
        ("kv_offloading_size", MAJOR, _KV_OFFLOAD.format("--kv-offloading-size")),
        ("env:LMCACHE_*", MAJOR, _KV_LMCACHE),
        ("load_format", MAJOR, _LOAD_FORMAT),
        # --- tuning: InferenceX per-point tuning ----------------------------------
        ("max_num_seqs", TUNING, _S7_TUNING),
        ("max_num_batched_tokens", TUNING, _S7_TUNING),
        ("max_model_len", TUNING, _S7_TUNING + " (=ISL+OSL+256)"),
        ("max_cudagraph_capture_size", TUNING, _S7_TUNING),
        ("cuda_graph_sizes", TUNING, _S7_TUNING + " (older spelling of capture sizes)"),
        ("gpu_memory_utilization", TUNING, _S7_TUNING),
        ("stream_interval", TUNING, _S7_TUNING),
        ("enable_prefix_caching", TUNING, _S7_TUNING),
        ("enable_chunked_prefill", TUNING, _S7_TUNING),
        ("enforce_eager", TUNING, _S7_TUNING),
        ("compilation_config", TUNING, _S7_TUNING + " (cudagraph mode)"),
        ("compilation_config.*", TUNING, _S7_TUNING + " (cudagraph mode)"),
        ("enable_flashinfer_autotune", TUNING, _S7_TUNING),
        ("async_scheduling", TUNING, _S7_TUNING),
        ("enable_dbo", TUNING, _S7_TUNING),
        ("dbo_*_threshold", TUNING, _S7_TUNING + " (DBO thresholds)"),
        ("enable_cumem_allocator", TUNING, _S7_TUNING + " (memory allocator)"),
        ("mm_processor_cache_type", TUNING, _S7_TUNING + " (multimodal cache)"),
        ("long_prefill_token_threshold", TUNING, _S7_TUNING),
        ("max_num_partial_prefills", TUNING, _S7_TUNING),
        ("scheduler_recv_interval", TUNING, _S7_TUNING_EXPLICIT),
        ("chunked_prefill_size", TUNING, _S7_TUNING_EXPLICIT),
        ("disable_piecewise_cuda_graph", TUNING, _S7_TUNING_EXPLICIT),
        ("env:SGLANG_RADIX_FORCE_MISS", TUNING, _S7_TUNING_EXPLICIT),
        ("kernel_config.enable_flashinfer_autotune", TUNING, _S7_TUNING + " (autotune)"),
        ("mm_processor_cache_gb", TUNING, _S7_TUNING + " (multimodal cache)"),
        ("disable_custom_all_reduce", TUNING, _S7_TUNING + " (communication)"),
        ("env:VLLM_USE_BREAKABLE_CUDAGRAPH", TUNING, _S7_TUNING + " (cudagraph mode)"),
        ("env:GPU_MAX_HW_QUEUES", TUNING, _S7_TUNING + " (HIP queues)"),
        ("env:VLLM_FLASHINFER_ALLREDUCE_BACKEND", TUNING, _S7_AR_BACKEND),
        ("env:VLLM_USE_NCCL_SYMM_MEM", TUNING, _S7_TUNING + " (communication)"),
        ("env:VLLM_ALLREDUCE_USE_SYMM_MEM", TUNING, _S7_TUNING + " (communication)"),
        ("env:VLLM_MOE_DP_CHUNK_SIZE", TUNING, _S7_TUNING),
        ("env:VLLM_SHARED_EXPERTS_STREAM_TOKEN_THRESHOLD", TUNING, _S7_TUNING),
        # --- harness: plumbing ----------------------------------------------------
        ("host", HARNESS, _S7_HARNESS_EXPLICIT),
        ("port", HARNESS, _S7_HARNESS_EXPLICIT),
        ("served_model_name", HARNESS, _S7_HARNESS),
        # KV connectors (offload tiers, PD transfer, LMCache, Mooncake store) change what
        # is served, so ``kv_transfer_config.*`` is major (above); only its addresses,
        # names and failure handling are plumbing.
        ("kv_transfer_config.kv_role", HARNESS, _KV_ROLE),
        ("kv_transfer_config.kv_ip", HARNESS, _KV_PLUMBING.format("rendezvous address")),
        ("kv_transfer_config.kv_port", HARNESS, _KV_PLUMBING.format("rendezvous port")),
        ("kv_transfer_config.engine_id", HARNESS, _KV_PLUMBING.format("engine identifier")),
        ("kv_transfer_config.kv_load_failure_policy", HARNESS, _KV_FAILURE),
        (_KV_EXTRA + "proxy_ip", HARNESS, _KV_PLUMBING.format("proxy address")),
        (_KV_EXTRA + "proxy_ping_port", HARNESS, _KV_PLUMBING.format("proxy port")),
        (_KV_EXTRA + "http_port", HARNESS, _KV_PLUMBING.format("HTTP port")),
        (_KV_EXTRA + '"lmcache.mp.port"', HARNESS, _KV_PLUMBING.format("LMCache server port")),
        (_KV_EXTRA + '"lmcache.mp.mq_timeout"', HARNESS, _KV_PLUMBING.format("LMCache timeout")),
        ("kv_events_config.*", HARNESS, _S7_HARNESS),
        ("data_parallel_rpc_port", HARNESS, _S7_HARNESS),
        ("data_parallel_hybrid_lb", HARNESS, _S7_HARNESS),
        ("data_parallel_external_lb", HARNESS, _S7_HARNESS),
        ("data_parallel_address", HARNESS, _RECIPES_S3),
        ("data_parallel_start_rank", HARNESS, _RECIPES_S3),
        ("data_parallel_size_local", HARNESS, _RECIPES_S3),
        ("data_parallel_rank", HARNESS, _RECIPES_S3),
        ("data_parallel_backend", HARNESS, _S7_HARNESS + " (process launcher)"),
        ("nnodes", HARNESS, _RECIPES_S3),
        ("node_rank", HARNESS, _RECIPES_S3),
        ("master_addr", HARNESS, _RECIPES_S3),
        ("master_port", HARNESS, _RECIPES_S3),
        ("headless", HARNESS, _RECIPES_S3),
        ("kv_cache_metrics", HARNESS, _S7_HARNESS + " (metrics)"),
        ("disable_log_requests", HARNESS, _S7_HARNESS + " (logging)"),
        ("disable_log_stats", HARNESS, _S7_HARNESS + " (logging)"),
        ("enable_log_requests", HARNESS, _S7_HARNESS + " (logging)"),
        ("uvicorn_log_level", HARNESS, _S7_HARNESS + " (logging)"),
        ("download_dir", HARNESS, _S7_HARNESS),
        ("api_key", HARNESS, _S7_HARNESS),
        ("speculative_config.rejection_sample_method", HARNESS, _S7_BENCH),
        ("speculative_config.synthetic_acceptance_length", HARNESS, _S7_BENCH),
        ("env:NCCL_*", HARNESS, _S7_HARNESS + " (NCCL_*)"),
        ("env:GLOO_SOCKET_IFNAME", HARNESS, _RECIPES_S4),
        ("env:CUDA_VISIBLE_DEVICES", HARNESS, _RECIPES_S4),
        ("env:TORCH_NCCL_*", HARNESS, _S7_HARNESS + " (NCCL_*)"),
        ("env:UCX_*", HARNESS, _S7_HARNESS + " (UCX_*)"),
        ("env:NIXL_*", HARNESS, _S7_HARNESS + " (NIXL)"),
        ("env:VLLM_NIXL_*", HARNESS, _S7_HARNESS + " (VLLM_NIXL_*)"),
        ("env:VLLM_MOONCAKE_*", HARNESS, _S7_HARNESS + " (KV transfer, like VLLM_NIXL_*)"),
        ("env:NVSHMEM_*", HARNESS, _S7_HARNESS + " (transport, like UCX_*)"),
        ("env:NVIDIA_GDRCOPY", HARNESS, _S7_HARNESS + " (transport, like UCX_*)"),
        ("env:DYN_*", HARNESS, _S7_HARNESS + " (Dynamo frontend)"),
        ("env:VLLM_ENGINE_READY_TIMEOUT_S", HARNESS, _S7_HARNESS),
        ("env:VLLM_EXECUTE_MODEL_TIMEOUT_SECONDS", HARNESS, _S7_HARNESS + " (timeout)"),
        ("env:VLLM_LOG_STATS_INTERVAL", HARNESS, _S7_HARNESS + " (logging)"),
        ("env:VLLM_SKIP_P2P_CHECK", HARNESS, _S7_HARNESS + " (start-up check)"),
        ("env:VLLM_RANDOMIZE_DP_DUMMY_INPUTS", HARNESS, _S7_HARNESS + " (DP dummy batches)"),
        ("env:VLLM_CACHE_ROOT", HARNESS, _S7_HARNESS + " (cache directory: a path)"),
        ("env:VLLM_CONFIG_ROOT", HARNESS, _S7_HARNESS + " (config directory: a path)"),
        ("env:VLLM_ASSETS_CACHE", HARNESS, _S7_HARNESS + " (cache directory: a path)"),
        ("env:VLLM_XLA_CACHE_PATH", HARNESS, _S7_HARNESS + " (cache directory: a path)"),
        ("env:VLLM_RPC_BASE_PATH", HARNESS, _S7_HARNESS + " (IPC socket directory)"),
        ("env:VLLM_LOGGING_*", HARNESS, _S7_HARNESS + " (logging)"),
        ("env:VLLM_TORCH_PROFILER_*", HARNESS, _S7_HARNESS + " (profiler output)"),
        ("env:TRITON_CACHE_DIR", HARNESS, _S7_HARNESS + " (cache directory: a path)"),
        ("env:TORCHINDUCTOR_CACHE_DIR", HARNESS, _S7_HARNESS + " (cache directory: a path)"),
        ("env:XDG_CACHE_HOME", HARNESS, _S7_HARNESS + " (cache directory: a path)"),
        ("env:HF_*", HARNESS, _S7_HARNESS + " (HF_HUB_OFFLINE)"),
        ("env:HUGGINGFACE_*", HARNESS, _S7_HARNESS + " (HF cache)"),
        ("env:TRANSFORMERS_CACHE", HARNESS, _S7_HARNESS + " (HF cache)"),
        ("env:PYTHONUNBUFFERED", HARNESS, _S7_HARNESS),
        ("env:PYTHONNOUSERSITE", HARNESS, _S7_HARNESS + " (Python start-up; #2511 launchers)"),
        ("env:EVAL_FRAMEWORK", HARNESS, _S7_HARNESS + " (benchmark harness eval selector; #2511)"),
        ("safetensors_load_strategy", HARNESS, _ENV_STORAGE.format("safetensors loading")),
        ("env:AIPERF_*", HARNESS, _ENV_CLIENT.format("AIPerf, AIPERF_*")),
        (
            "env:MC_*",
            HARNESS,
            _S7_HARNESS + " (Mooncake transfer engine, MC_*: KV-transfer plumbing)",
        ),
        ("env:MOONCAKE_CONFIG_PATH", HARNESS, _S7_HARNESS + " (Mooncake config file path)"),
        ("env:PYTHONHASHSEED", HARNESS, _S7_HARNESS + " (Python hash seed of the launcher)"),
        ("env:WEKA_*", HARNESS, _ENV_STORAGE.format("WEKA storage, WEKA_*")),
        ("env:RUNAI_STREAMER_*", HARNESS, _ENV_STORAGE.format("Run:ai model streamer")),
        ("env:AWS_*", HARNESS, _ENV_STORAGE.format("object storage credentials, AWS_*")),
        ("env:S3_*", HARNESS, _ENV_STORAGE.format("object storage, S3_*")),
        ("env:SAFETENSORS_*", HARNESS, _ENV_STORAGE.format("safetensors loading")),
        # --- environment of other programs, reviewed by name ----------------------
        ("env:TORCH_CUDA_ARCH_LIST", HARNESS, _ENV_BUILD.format("PyTorch extensions")),
        ("env:CUTE_DSL_ARCH", HARNESS, _ENV_BUILD.format("CuTe DSL")),
        ("env:DG_JIT_CACHE_DIR", HARNESS, _ENV_STORAGE.format("DeepGEMM JIT cache directory")),
        (
            "env:FLASH_ATTENTION_CUTE_DSL_CACHE_ENABLED",
            HARNESS,
            _ENV_STORAGE.format("FlashAttention CuTe DSL compile cache"),
        ),
        ("env:TILELANG_CLEANUP_TEMP_FILES", HARNESS, _S7_HARNESS + " (TileLang temp files)"),
        ("env:WITH_NVIDIA_PEERMEM", HARNESS, _S7_HARNESS + " (GPUDirect RDMA, like UCX_*)"),
        ("env:ETCD_*", HARNESS, _S7_HARNESS + " (Dynamo's etcd discovery, like DYN_*)"),
        ("env:TP_SOCKET_IFNAME", HARNESS, _RECIPES_S4),
        ("env:MN_IF_NAME", HARNESS, _RECIPES_S4),
        ("env:OMPI_MCA_*", HARNESS, _S7_HARNESS + " (Open MPI transport)"),
        ("env:EVAL_CONCURRENT_REQUESTS", HARNESS, _S7_HARNESS + " (benchmark harness eval)"),
        ("env:OMP_*", TUNING, _ENV_HOST.format("OpenMP")),
        ("env:PYTORCH_*ALLOC_CONF", TUNING, _ENV_HOST.format("PyTorch allocator")),
        ("env:HSA_NO_SCRATCH_RECLAIM", TUNING, _ENV_HOST.format("ROCm scratch memory")),
        ("env:HIP_FORCE_DEV_KERNARG", TUNING, _ENV_HOST.format("HIP kernel arguments")),
        ("env:HCCL_BUFFSIZE", TUNING, _ENV_HOST.format("Ascend HCCL buffer")),
        ("env:TORCH_SYMMMEM", TUNING, _S7_TUNING + " (communication, like symmetric memory)"),
        ("env:AITER_*", MAJOR, _ENV_RUNTIME_KERNEL.format("AITER kernel settings")),
        ("env:AMDGCN_USE_BUFFER_OPS", MAJOR, _ENV_RUNTIME_KERNEL.format("Triton AMD codegen")),
        ("env:B12X_*", MAJOR, _ENV_RUNTIME_KERNEL.format("B12X kernels")),
        ("env:CUDA_LAUNCH_BLOCKING", MAJOR, _S7_CATCH_ALL + ": serialises every kernel launch"),
        # --- vLLM's own environment, reviewed (vllm/envs.py) -----------------------
        ("env:VLLM_*TIMEOUT*", HARNESS, _ENV_VLLM_TIMEOUT.format("VLLM_*TIMEOUT*")),
        ("env:VLLM_SERVER_DEV_MODE", HARNESS, _S7_HARNESS + " (development endpoints)"),
        (
            "env:VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS",
            TUNING,
            _ENV_VLLM_TUNING.format("KV cache memory profiling, like gpu_memory_utilization"),
        ),
        ("env:VLLM_SPARSE_INDEXER_MAX_LOGITS_MB", TUNING, _ENV_VLLM_TUNING.format("workspace")),
        ("env:VLLM_MAX_TOKENS_PER_EXPERT_FP4_MOE", TUNING, _ENV_VLLM_TUNING.format("MoE chunk")),
        (
            "env:VLLM_PREFIX_CACHE_RETENTION_INTERVAL",
            TUNING,
            _ENV_VLLM_TUNING.format("prefix cache, like enable_prefix_caching"),
        ),
        (
            "env:VLLM_ALLREDUCE_USE_FLASHINFER",
            TUNING,
            _S7_TUNING + " (communication, like VLLM_FLASHINFER_ALLREDUCE_BACKEND)",
        ),
        (
            "env:VLLM_MOE_ROUTING_SIMULATION_STRATEGY",
            MAJOR,
            _CHANGES + "simulated expert routing changes which experts run",
        ),
        (
            "env:VLLM_ROUTED_DOWN_PROJ_STREAM_TOKEN_THRESHOLD",
            TUNING,
            _ENV_FOREIGN.format("a stream threshold")
            + "; tuning like VLLM_SHARED_EXPERTS_STREAM_TOKEN_THRESHOLD",
        ),
        (
            "env:VLLM_V2_WARMUP_MAX_NUM_SEQS",
            TUNING,
            _ENV_FOREIGN.format("warm-up batch size") + "; tuning like max_num_seqs",
        ),
        (
            "env:VLLM_CONNECTOR_PREFETCH_*",
            MAJOR,
            _ENV_FOREIGN.format("KV connector prefetch") + "; major like kv_transfer_config",
        ),
        (
            "kernel_config.enable_cutedsl_warmup",
            TUNING,
            _S7_TUNING + " (kernel warm-up at start-up)",
        ),
        (
            "env:VLLM_DSV4_MEGA_FP8_COMBINE",
            MAJOR,
            _ENV_FOREIGN.format("MoE combine precision") + "; numerics (major)",
        ),
        (
            "env:VLLM_ENABLE_K3_LATENT_MOE_TAIL_FUSION",
            MAJOR,
            _ENV_FOREIGN.format("MoE kernel fusion") + "; kernel selection (major)",
        ),
        *((f"env:{name}", HARNESS, _INJECTED) for name in TOOL_INJECTED_ENV),
        ("init_timeout", HARNESS, _S7_HARNESS + " (timeout)"),
        ("distributed_executor_backend", HARNESS, _S7_HARNESS + " (process launcher)"),
        ("enable_sleep_mode", HARNESS, _S7_HARNESS + " (server lifecycle)"),
        # --- functional: behaviour, not performance -------------------------------
        ("tool_call_parser", FUNCTIONAL, _S7_FUNCTIONAL),
        ("reasoning_parser", FUNCTIONAL, _S7_FUNCTIONAL),
        ("enable_auto_tool_choice", FUNCTIONAL, _S7_FUNCTIONAL),
        ("trust_remote_code", FUNCTIONAL, _S7_FUNCTIONAL),
        ("default_chat_template_kwargs", FUNCTIONAL, _S7_FUNCTIONAL),
        ("default_chat_template_kwargs.*", FUNCTIONAL, _S7_FUNCTIONAL),
        ("chat_template", FUNCTIONAL, _S7_FUNCTIONAL),
        ("chat_template_content_format", FUNCTIONAL, _S7_FUNCTIONAL),
        ("tool_parser_plugin", FUNCTIONAL, _S7_FUNCTIONAL),
        ("limit_mm_per_prompt.*", FUNCTIONAL, _S7_FUNCTIONAL + " (multimodal limits)"),
        ("tokenizer_mode", FUNCTIONAL, _S7_FUNCTIONAL + " (tokenizer front end)"),
        ("tool_call_parser_plugin", FUNCTIONAL, _S7_FUNCTIONAL),
        ("reasoning_parser_plugin", FUNCTIONAL, _S7_FUNCTIONAL),
        ("reasoning_config.*", FUNCTIONAL, _S7_FUNCTIONAL + " (reasoning markers)"),
        ("generation_config", FUNCTIONAL, _S7_FUNCTIONAL + " (default sampling parameters)"),
        ("override_generation_config.*", FUNCTIONAL, _S7_FUNCTIONAL + " (sampling defaults)"),
        ("logits_processors", FUNCTIONAL, _S7_FUNCTIONAL + " (sampling)"),
        ("allowed_local_media_path", FUNCTIONAL, _S7_FUNCTIONAL + " (media access)"),
        ("media_io_kwargs.*", FUNCTIONAL, _S7_FUNCTIONAL + " (media decoding)"),
        ("dyn_tool_call_parser", FUNCTIONAL, _S7_FUNCTIONAL + " (Dynamo spelling)"),
        ("dyn_reasoning_parser", FUNCTIONAL, _S7_FUNCTIONAL + " (Dynamo spelling)"),
        ("dyn_default_thinking_mode", FUNCTIONAL, _S7_FUNCTIONAL + " (Dynamo chat template)"),
        ("enable_prompt_tokens_details", FUNCTIONAL, _S7_FUNCTIONAL + " (usage details)"),
    ]
)

#: vLLM's value of a key a command leaves unset, for the keys whose explicit default
#: the normaliser drops (``ONE_BY_DEFAULT``): comparisons read an absent key as this
#: value, so ``--tensor-parallel-size 1`` against evidence at 8 is a value mismatch
#: (1 vs 8), not a flag missing from the recipe. Booleans are not here: a switch left
#: off is reported as the missing flag it is (``missing-flag language_model_only``).
COMPARED_DEFAULTS: dict[str, str] = {key: "1" for key in sorted(ONE_BY_DEFAULT)}
COMPARED_DEFAULTS_BASIS = (
    "vLLM EngineArgs: tensor/pipeline/data parallel size default to 1; the normaliser drops "
    "an explicit 1 so that equal deployments compare equal (docs/flags.md)"
)


class _Layer:
    """One layer of rules, indexed: exact keys in a dict, globs compiled, most specific first."""

    __slots__ = ("exact", "globs", "rules")

    def __init__(self, rules: Iterable[PolicyRule]) -> None:
        self.rules = _by_specificity(rules)
        self.exact = {r.pattern: r for r in reversed(self.rules) if not r.is_glob}
        self.globs = [
            (re.compile(fnmatch.translate(r.pattern)), r) for r in self.rules if r.is_glob
        ]

    def find(self, key: str) -> PolicyRule | None:
        rule = self.exact.get(key)
        if rule is not None:
            return rule
        return next((r for pattern, r in self.globs if pattern.match(key)), None)


class Policy:
    """Classifies canonical flag keys; memoised per key (audits classify very often).

    A key that is a spelling of an aliased knob is classified as its canonical key.
    :meth:`major` keeps the major flags of a command (spellings as written);
    :meth:`in_context` then puts aliased spellings under their canonical key and drops
    the flags a context rule makes inert for the command's role.
    """

    __slots__ = (
        "_classes",
        "_context_memo",
        "_digest",
        "_layers",
        "_rules",
        "_versions",
        "aliases",
        "context",
        "knowledge",
        "origin",
    )

    def __init__(
        self,
        rules: Iterable[PolicyRule] = DEFAULT_RULES,
        overrides: Iterable[PolicyRule] = (),
        *,
        origin: str = "default",
        aliases: Iterable[AliasRule] = DEFAULT_ALIASES,
        context: Iterable[ContextRule] = DEFAULT_CONTEXT_RULES,
        knowledge: bool = True,
    ) -> None:
        self._layers = (_Layer(overrides), _Layer(rules))
        self.knowledge = knowledge
        self._rules: dict[str, PolicyRule | None] = {}
        self._classes: dict[str, FlagClass] = {}
        self._context_memo: dict[tuple[FlagSet, str | None], FlagSet] = {}
        self.aliases = AliasTable(aliases)
        self.context = ContextRules(context)
        self.origin = origin
        self._digest: str | None = None
        self._versions: VersionDefaults | None = None

    @property
    def digest(self) -> str:
        """A hash of every rule, alias and context rule: equal digests compare alike (the
        key of whatever is computed under a policy, such as a normalised evidence graph)."""
        if self._digest is None:
            parts: list[object] = [
                [r.model_dump(mode="json") for r in layer.rules] for layer in self._layers
            ]
            parts.append([r.model_dump(mode="json") for r in self.aliases.rules])
            parts.append([r.model_dump(mode="json") for r in self.context.rules])
            if self.knowledge:
                parts.append(_knowledge_digest_part())
            text = json.dumps(parts, sort_keys=True, separators=(",", ":"))
            self._digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
        return self._digest

    @property
    def overrides(self) -> tuple[PolicyRule, ...]:
        return self._layers[0].rules

    @property
    def rules(self) -> tuple[PolicyRule, ...]:
        return self._layers[1].rules

    def rule_for(self, key: str) -> PolicyRule | None:
        """The rule that decides ``key``: an override, else a default rule, else the class
        vLLM's knowledge gives it (:mod:`provenance.normalise.vllm_policy`, origin
        ``vllm``); ``None``: no rule, so major by default."""
        if key in self._rules:
            return self._rules[key]
        target = self.aliases.canonical(key)
        found = self._layers[0].find(target) or self._layers[1].find(target)
        if found is None and self.knowledge:
            known = knowledge_class(target)
            if known is not None:
                found = PolicyRule(
                    pattern=target, flag_class=known[0], basis=known[1], origin=KNOWLEDGE
                )
        self._rules[key] = found
        return found

    def is_classified(self, key: str) -> bool:
        """Whether a rule or vLLM's knowledge names ``key`` (else it is major only by the
        catch-all)."""
        return self.rule_for(key) is not None

    def classify(self, key: str) -> FlagClass:
        cls = self._classes.get(key)
        if cls is None:
            rule = self.rule_for(key)
            cls = MAJOR if rule is None else rule.flag_class
            self._classes[key] = cls
        return cls

    def basis(self, key: str) -> str:
        rule = self.rule_for(key)
        text = UNKNOWN_BASIS if rule is None else rule.basis
        unknown = None
        if rule is None and self.knowledge:
            unknown = not_a_vllm_flag(self.aliases.canonical(key))
        if unknown is not None:
            text = f"{unknown}: {text}"
        if rule is not None and rule.origin not in ("default", KNOWLEDGE):
            text = f"{rule.origin}: {text}"
        alias = self.aliases.rule_of(key)
        if alias is not None:
            text = f"spelling of {alias.canonical} ({alias.basis}); {text}"
        return text

    def major(self, flags: FlagSet) -> FlagSet:
        """The flags that need evidence (before their context: see :meth:`in_context`),
        without a flag written at vLLM's default where that default is the same in every
        covered version (:func:`~provenance.normalise.vllm_policy.stable_defaults`): an
        explicit ``--moe-backend auto`` equals its absence, on both sides."""
        defaults = stable_defaults() if self.knowledge else {}
        return FlagSet.of_strings(
            {k: v for k, v in flags.items() if self.classify(k) is MAJOR and defaults.get(k) != v}
        )

    def explicit_default(self, key: str, value: str) -> bool:
        """Whether ``key=value`` is vLLM's default in every covered version that has the
        flag (so :meth:`major` drops it)."""
        return self.knowledge and stable_defaults().get(key) == value

    @property
    def versions(self) -> VersionDefaults | None:
        """The defaults that depend on the vLLM version, read at the version each evidence
        record's image ran (:class:`~provenance.normalise.vllm_policy.VersionDefaults`);
        None without vLLM's knowledge."""
        if self._versions is None and self.knowledge:
            self._versions = VersionDefaults()
        return self._versions

    def in_context(self, major: FlagSet, role: str | None) -> FlagSet:
        """``major`` (a command's major flags) with aliased spellings under their canonical
        key and without the flags a context rule makes inert for ``role`` (an evidence
        role: serve, prefill, decode). Memoised per (flags, role)."""
        memo_key = (major, role)
        found = self._context_memo.get(memo_key)
        if found is not None:
            return found
        flags = self.aliases.apply(major)
        applying = self.context.applying(role, flags) if self.context else None
        if applying:  # most commands meet no rule's conditions: no key is matched then
            canonical = self.aliases.canonical
            inert = [
                k for k in flags if any(pattern.match(canonical(k)) for pattern, _ in applying)
            ]
            if inert:
                flags = flags.without(inert)
        found = self._context_memo[memo_key] = flags
        return found

    def effective(self, flags: FlagSet, role: str | None) -> FlagSet:
        """:meth:`major` then :meth:`in_context`: what a command of ``role`` is compared by."""
        return self.in_context(self.major(flags), role)

    def inert_rule(self, key: str, role: str | None, major: FlagSet) -> ContextRule | None:
        """The context rule that makes ``key`` inert in a command with these major flags."""
        flags = self.aliases.apply(major)
        return self.context.inert(self.aliases.canonical(key), role, flags)

    @staticmethod
    def compared_default(key: str) -> str | None:
        """vLLM's value of ``key`` when a command leaves it unset, where comparisons use it
        (:data:`COMPARED_DEFAULTS`); None for every other key."""
        return COMPARED_DEFAULTS.get(key)

    def by_class(self, flags: FlagSet) -> dict[FlagClass, FlagSet]:
        """Split a FlagSet by class (every class present, possibly empty)."""
        split: dict[FlagClass, dict[str, str]] = {cls: {} for cls in FlagClass}
        for key, value in flags.items():
            split[self.classify(key)][key] = value
        return {cls: FlagSet(items) for cls, items in split.items()}


def _knowledge_digest_part() -> list[object]:
    """What the classes from vLLM's knowledge depend on: the reviewed tables and the
    covered versions (their files are fixed per version)."""
    return [
        sorted((g, c.value, r) for g, (c, r) in GROUP_CLASSES.items()),
        sorted((k, c.value, r) for k, (c, r) in FIELD_CLASSES.items()),
        list(versions()),
    ]


def _by_specificity(rules: Iterable[PolicyRule]) -> tuple[PolicyRule, ...]:
    return tuple(sorted(rules, key=lambda r: r.specificity, reverse=True))


@functools.cache
def default_policy() -> Policy:
    """The built-in policy (one shared, memoised instance)."""
    return Policy()


# ---------------------------------------------------------------------------
# Overrides from the audited repository
# ---------------------------------------------------------------------------

_PATTERN_HEAD = re.compile(r"[a-z0-9_*?\[\]!]+")
_ENV_PATTERN = re.compile(r"env:[A-Za-z0-9_*?\[\]!]+")


def _canonical_pattern(raw: str) -> str | None:
    """Canonical spelling of a user pattern, or ``None`` if it cannot be a key pattern."""
    if raw.startswith("env:"):
        return raw if _ENV_PATTERN.fullmatch(raw) else None
    head, dot, rest = raw.removeprefix("--").partition(".")
    head = head.replace("-", "_")
    if not _PATTERN_HEAD.fullmatch(head):
        return None
    if dot and (not rest or any(not part for part in rest.split("."))):
        return None
    return head + dot + rest


def parse_policy_table(table: object, *, path: str, table_name: str) -> tuple[PolicyRule, ...]:
    """Validate a ``pattern = "class"`` table into rules; errors name the key."""
    if not isinstance(table, Mapping):
        raise InputError(
            f'[{table_name}] must be a table of "flag key" = "class"',
            path=path,
            key_path=table_name,
        )
    allowed = ", ".join(cls.value for cls in FlagClass)
    rules: list[PolicyRule] = []
    seen: dict[str, str] = {}
    for raw_key, raw_value in table.items():
        key_path = f"{table_name}.{raw_key}"
        pattern = _canonical_pattern(str(raw_key))
        if pattern is None:
            raise InputError(
                f"{raw_key!r} is not a flag key or pattern",
                path=path,
                key_path=key_path,
                hint="use canonical keys such as stream_interval, attention_config.backend, "
                "env:NCCL_* (globs * ? [] allowed)",
            )
        if pattern in seen:
            raise InputError(
                f"{raw_key!r} and {seen[pattern]!r} name the same key {pattern!r}",
                path=path,
                key_path=key_path,
            )
        seen[pattern] = str(raw_key)
        if not isinstance(raw_value, str) or raw_value not in {c.value for c in FlagClass}:
            raise InputError(
                f"class of {raw_key!r} must be one of {allowed}, not {raw_value!r}",
                path=path,
                key_path=key_path,
            )
        rules.append(
            PolicyRule(
                pattern=pattern,
                flag_class=FlagClass(raw_value),
                basis=f"override in {Path(path).name} [{table_name}]",
                origin=Path(path).name,
            )
        )
    return tuple(rules)


def _key_pattern(raw: object, *, path: str, key_path: str) -> str:
    pattern = _canonical_pattern(str(raw))
    if pattern is None:
        raise InputError(
            f"{raw!r} is not a flag key or pattern",
            path=path,
            key_path=key_path,
            hint="use canonical keys such as stream_interval, attention_config.backend, "
            "env:NCCL_* (globs * ? [] allowed)",
        )
    return pattern


def parse_aliases_table(table: object, *, path: str, table_name: str) -> tuple[AliasRule, ...]:
    """``"canonical key" = ["spelling", ...]`` per line; an empty list drops a default alias."""
    if not isinstance(table, Mapping):
        raise InputError(
            f'[{table_name}] must be a table of "canonical key" = ["spelling", ...]',
            path=path,
            key_path=table_name,
        )
    rules = []
    origin = Path(path).name
    for raw_key, raw_value in table.items():
        key_path = f"{table_name}.{raw_key}"
        canonical = _key_pattern(raw_key, path=path, key_path=key_path)
        if not isinstance(raw_value, list) or not all(isinstance(v, str) for v in raw_value):
            raise InputError(
                f"the spellings of {raw_key!r} must be a list of flag keys",
                path=path,
                key_path=key_path,
            )
        spellings = tuple(_key_pattern(v, path=path, key_path=key_path) for v in raw_value)
        if any(ch in item for item in (canonical, *spellings) for ch in "*?["):
            raise InputError("aliases name exact keys, not globs", path=path, key_path=key_path)
        rules.append(
            AliasRule(
                canonical=canonical,
                spellings=spellings,
                basis=f"override in {origin} [{table_name}]",
                origin=origin,
            )
        )
    return tuple(rules)


_CONTEXT_FIELDS = {"keys", "roles", "when", "enabled", "basis"}


def parse_context_table(table: object, *, path: str, table_name: str) -> tuple[ContextRule, ...]:
    """``[context.<id>]`` tables: ``keys`` (a pattern), ``roles``, ``when``, ``enabled``,
    ``basis``. An id of a default rule changes that rule; another id adds one."""
    if not isinstance(table, Mapping):
        raise InputError(
            f"[{table_name}] must hold one table per rule id", path=path, key_path=table_name
        )
    defaults = {rule.id: rule for rule in DEFAULT_CONTEXT_RULES}
    origin = Path(path).name
    rules = []
    for rule_id, fields in table.items():
        key_path = f"{table_name}.{rule_id}"
        if not isinstance(fields, Mapping):
            raise InputError("a context rule is a table", path=path, key_path=key_path)
        unknown = sorted(set(fields) - _CONTEXT_FIELDS)
        if unknown:
            raise InputError(
                f"unknown field {unknown[0]!r} (allowed: {', '.join(sorted(_CONTEXT_FIELDS))})",
                path=path,
                key_path=f"{key_path}.{unknown[0]}",
            )
        base = defaults.get(str(rule_id))
        update: dict[str, object] = {"origin": origin}
        if "keys" in fields:
            update["pattern"] = _key_pattern(fields["keys"], path=path, key_path=f"{key_path}.keys")
        if "roles" in fields:
            roles = fields["roles"]
            if not isinstance(roles, list) or not all(isinstance(r, str) for r in roles):
                raise InputError(
                    "roles must be a list of role names (serve, prefill, decode)",
                    path=path,
                    key_path=f"{key_path}.roles",
                )
            update["roles"] = tuple(roles)
        if "when" in fields:
            when = fields["when"]
            if not isinstance(when, Mapping) or not all(
                isinstance(v, str | bool | int) for v in when.values()
            ):
                raise InputError(
                    'when must be a table of "flag key" = value',
                    path=path,
                    key_path=f"{key_path}.when",
                )
            update["when"] = {
                _key_pattern(k, path=path, key_path=f"{key_path}.when.{k}"): _toml_value(v)
                for k, v in when.items()
            }
        if "enabled" in fields:
            if not isinstance(fields["enabled"], bool):
                raise InputError(
                    "enabled must be true or false", path=path, key_path=f"{key_path}.enabled"
                )
            update["enabled"] = fields["enabled"]
        if "basis" in fields:
            update["basis"] = str(fields["basis"])
        if base is not None:
            rule = base.model_copy(update=update)
        else:
            if "pattern" not in update or not (update.get("roles") or update.get("when")):
                raise InputError(
                    f"new context rule {rule_id!r} needs keys and roles or when",
                    path=path,
                    key_path=key_path,
                )
            update.setdefault("basis", f"override in {origin} [{table_name}]")
            rule = ContextRule.model_validate({"id": str(rule_id), **update})
        rules.append(rule)
    return tuple(rules)


def _toml_value(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _read_toml(path: Path) -> tuple[str, dict[str, object]]:
    """The text of ``path`` and its TOML tables."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror}", path=path) from None
    try:
        text = raw.decode("utf-8")
        return text, tomllib.loads(text)
    except UnicodeDecodeError:
        raise InputError("not UTF-8 text", path=path) from None
    except tomllib.TOMLDecodeError as exc:
        found = _DECODE_AT.search(str(exc))
        line = int(found.group(1)) if found else None
        raise InputError(f"not valid TOML: {exc}", path=path, line=line) from None


_DECODE_AT = re.compile(r"at line (\d+)")
_TOML_HEADER = re.compile(r"^\s*\[\s*([^\[\]]+?)\s*\]")
_TOML_ONE_KEY = r"""(?:[A-Za-z0-9_-]+|"[^"]*"|'[^']*')"""
_TOML_KEY = re.compile(rf"^\s*({_TOML_ONE_KEY}(?:\s*\.\s*{_TOML_ONE_KEY})*)\s*=")
_TOML_PART = re.compile(r"\"([^\"]*)\"|'([^']*)'|[A-Za-z0-9_-]+")


def _toml_parts(dotted: str) -> list[str]:
    return [m.group(1) or m.group(2) or m.group(0) for m in _TOML_PART.finditer(dotted)]


def toml_line(text: str, key_path: str) -> int | None:
    """The 1-based line of ``text`` (a TOML document) that defines ``key_path`` (dotted;
    its keys may hold dots), else of its longest defined prefix (a table header, an inline
    table), else of the first table under it; None if none.

    Good enough for error messages: table headers and ``key = value`` lines, keys bare
    or quoted; a key inside a multi-line value is not found (its prefix is).
    """
    table: list[str] = []
    best: tuple[int, int] | None = None  # (matched characters, line)
    for number, line in enumerate(text.splitlines(), start=1):
        header = _TOML_HEADER.match(line)
        if header is not None and not line.lstrip().startswith("[["):
            table = _toml_parts(header.group(1))
            here = ".".join(table)
        else:
            key = _TOML_KEY.match(line)
            if key is None:
                continue
            here = ".".join([*table, *_toml_parts(key.group(1))])
        if key_path == here or key_path.startswith(here + "."):
            score = len(here)
        elif here.startswith(key_path + "."):
            score = len(key_path)
        else:
            continue
        if best is None or score > best[0]:
            best = (score, number)
    return best[1] if best is not None else None


_SECTIONS = ("policy", "aliases", "context")

#: The files of a repository :func:`load_policy` reads, at its root.
POLICY_FILES = ("provenance.toml", "pyproject.toml")


def load_policy(repo_dir: Path | None) -> Policy:
    """The default policy plus the overrides of the repository at ``repo_dir``.

    Reads ``provenance.toml`` (``[policy]``, ``[aliases]``, ``[context.<id>]``) and
    ``pyproject.toml`` (the same under ``[tool.provenance]``); a repository may use one
    of them, not both. ``None`` or a repository with neither gives the default policy.
    """
    if repo_dir is None:
        return default_policy()
    found: list[tuple[Path, str, dict[str, object], str]] = []
    own = repo_dir / "provenance.toml"
    if own.is_file():
        text, data = _read_toml(own)
        sections = {name: data[name] for name in _SECTIONS if name in data}
        if sections:
            found.append((own, "", sections, text))
    pyproject = repo_dir / "pyproject.toml"
    if pyproject.is_file():
        text, data = _read_toml(pyproject)
        tool = data.get("tool")
        section = tool.get("provenance") if isinstance(tool, dict) else None
        if isinstance(section, dict):
            sections = {name: section[name] for name in _SECTIONS if name in section}
            if sections:
                found.append((pyproject, "tool.provenance.", sections, text))
    if not found:
        return default_policy()
    if len(found) > 1:
        raise InputError(
            "the policy is defined twice: in provenance.toml and in "
            "pyproject.toml [tool.provenance]",
            path=found[1][0],
            line=toml_line(found[1][3], "tool.provenance"),
            key_path="tool.provenance",
            hint="keep one of them",
        )
    path, prefix, sections, text = found[0]
    overrides: tuple[PolicyRule, ...] = ()
    aliases: tuple[AliasRule, ...] = ()
    context: tuple[ContextRule, ...] = ()
    try:
        if "policy" in sections:
            overrides = parse_policy_table(
                sections["policy"], path=str(path), table_name=f"{prefix}policy"
            )
        if "aliases" in sections:
            aliases = parse_aliases_table(
                sections["aliases"], path=str(path), table_name=f"{prefix}aliases"
            )
        if "context" in sections:
            context = parse_context_table(
                sections["context"], path=str(path), table_name=f"{prefix}context"
            )
    except InputError as exc:
        where = exc.location
        if where is not None and where.line is None and where.key_path:
            exc.location = dataclasses.replace(where, line=toml_line(text, where.key_path))
        raise
    return Policy(
        DEFAULT_RULES,
        overrides,
        origin=str(path),
        aliases=(*DEFAULT_ALIASES, *aliases),
        context=(*DEFAULT_CONTEXT_RULES, *context),
    )
