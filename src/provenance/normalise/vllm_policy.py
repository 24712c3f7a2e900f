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
import re
from collections.abc import Iterable
from typing import NamedTuple

from provenance.model.flags import FlagClass, FlagSet
from provenance.normalise.canonical import canonical_value
from provenance.normalise.vllm_knowledge import raw, versions

__all__ = [
    "ABSENT",
    "COMPUTED",
    "FIELD_CLASSES",
    "GROUP_CLASSES",
    "UNSET",
    "KnownFlag",
    "VersionDefaults",
    "default_at",
    "defaults_at",
    "describe_default",
    "image_release",
    "image_version",
    "knowledge_class",
    "known_env",
    "known_flags",
    "not_a_vllm_flag",
    "stable_defaults",
    "unknown_version_note",
    "version_defaults",
    "version_range",
    "versioned_values",
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


def _concrete(facts: dict[str, object]) -> str | None:
    """A flag's default in one version, canonical, when it is one concrete scalar (not
    computed at run time, not ``None``, a list, a mapping or the empty text)."""
    default = facts.get("default")
    if "default_expr" in facts or not isinstance(default, str | int | float):
        return None
    value = canonical_value(default)
    return value or None


@functools.cache
def stable_defaults() -> dict[str, str]:
    """Flag key → its default, canonical, for every flag whose default is one and the same
    concrete value in every covered version that has it (``moe_backend`` → ``auto``,
    0.17.0–0.27.1). A flag whose default changed between versions
    (``disable_cascade_attn``: false to 0.17.0, true from 0.18.0), is computed at run
    time (``None``, a ``default_expr``) or is a list or mapping is not here: its default
    depends on the version (:func:`version_defaults`)."""
    seen: dict[str, set[str | None]] = {}
    for version in versions():
        for key, facts in raw(version)["flags"].items():
            seen.setdefault(key, set()).add(_concrete(facts))
    return {
        key: value
        for key, values in sorted(seen.items())
        if len(values) == 1 and (value := next(iter(values))) is not None and key not in _IDENTITY
    }


#: Never a default: the model is what is served (vLLM's default model is a placeholder).
_IDENTITY = frozenset({"model", "tokenizer", "revision", "served_model_name"})

#: :func:`version_defaults` entries where a version has no concrete default (never a
#: canonical value): the flag is not there, its default is ``None``, or it is computed
#: at run time (a ``default_expr``, a list, a mapping, the empty text)
ABSENT = "\0not a flag"
UNSET = "\0unset"
COMPUTED = "\0computed"


_NOT_CONCRETE = frozenset({ABSENT, UNSET, COMPUTED})


@functools.cache
def version_defaults() -> dict[str, dict[str, str]]:
    """Flag key → covered version → its default there, for every flag whose default
    depends on the version: concrete in at least one covered version and not the same
    concrete value in all that have the flag (:func:`stable_defaults` has those). A version
    without the flag maps to :data:`ABSENT`, one whose default is computed at run time
    (or ``None``, a list, a mapping) to :data:`COMPUTED`:
    ``disable_cascade_attn`` → false to 0.17.0, true from 0.18.0."""
    found: dict[str, dict[str, str]] = {}
    for version in versions():
        for key, facts in raw(version)["flags"].items():
            default = _concrete(facts)
            if default is None:
                unset = "default_expr" not in facts and facts.get("default") is None
                default = UNSET if unset else COMPUTED
            found.setdefault(key, {})[version] = default
    stable = stable_defaults()
    return {
        key: {version: by_version.get(version, ABSENT) for version in versions()}
        for key, by_version in sorted(found.items())
        if key not in stable
        and key not in _IDENTITY
        and any(value not in _NOT_CONCRETE for value in by_version.values())
    }


@functools.cache
def defaults_at(version: str) -> dict[str, str]:
    """The version-dependent defaults (:func:`version_defaults`) that are concrete in
    ``version``: what a command of that version runs when it leaves the flag out."""
    return {
        key: by_version[version]
        for key, by_version in version_defaults().items()
        if by_version.get(version, ABSENT) not in _NOT_CONCRETE
    }


def default_at(key: str, version: str) -> str | None:
    """vLLM ``version``'s default of the flag ``key`` (canonical) when it is one concrete
    value, whether or not it depends on the version; None when it is computed or ``None``,
    or the version has no such flag."""
    facts = raw(version)["flags"].get(key)
    return None if facts is None or key in _IDENTITY else _concrete(facts)


@functools.cache
def versioned_values() -> dict[str, frozenset[str]]:
    """Flag key → every concrete default it has in some covered version, for the flags
    whose default depends on the version: a command that writes one of these may be
    writing its version's default."""
    return {
        key: frozenset(v for v in by_version.values() if v not in _NOT_CONCRETE)
        for key, by_version in version_defaults().items()
    }


def describe_default(key: str) -> str:
    """How ``key``'s default runs over the covered versions, oldest first:
    ``false ≤0.17.0, true ≥0.18.0`` (``not a flag``: the version has none; ``unset``: its
    default is ``None``; ``computed``: set at run time)."""
    covered = versions()
    runs: list[list[str]] = []  # [value, first, last]
    for version, value in version_defaults()[key].items():
        if runs and runs[-1][0] == value:
            runs[-1][2] = version
        else:
            runs.append([value, version, version])
    parts = []
    for value, first, last in runs:
        shown = value.lstrip("\0")
        if first == covered[0] and last != covered[-1]:
            span = f"≤{last}"
        elif last == covered[-1] and first != covered[0]:
            span = f"≥{first}"
        else:
            span = _span(first, last)
        parts.append(f"{shown} {span}")
    return ", ".join(parts)


def _order(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split("."))


#: An upstream release image: vLLM's own ``vllm/vllm-openai`` or ``vllm/vllm-openai-rocm``
#: (optionally behind a registry host), a ``vX.Y.Z`` tag, optionally a build variant of
#: that release (``-cu130``, ``-ubuntu2404``, ``-cu129``, ``-x86_64``, ``-aarch64``,
#: ``-arm64``) and a digest pin.
_RELEASE_IMAGE = re.compile(
    r"(?:[a-z0-9.-]+(?::[0-9]+)?/)?vllm/vllm-openai(?:-rocm)?"
    r":v(?P<version>(?:0|[1-9][0-9]*)\.(?:0|[1-9][0-9]*)\.(?:0|[1-9][0-9]*))"
    r"(?:-(?:cu[0-9]+|ubuntu[0-9]+|x86_64|aarch64|arm64))*"
    r"(?:@sha256:[0-9a-f]{64})?"
)


def image_release(image: str | None) -> str | None:
    """The vLLM release an image tag names (``vllm/vllm-openai-rocm:v0.17.0`` → ``0.17.0``,
    ``vllm/vllm-openai:v0.19.0-cu130`` → ``0.19.0``), covered or not; None for every other
    image: nightly and commit builds (``nightly-<sha>``, ``nightly-dev-…``), model-specific
    builds (``minimax-m3``, ``kimi-k3``), release candidates, other vendors' images
    (``rocm/…_vllm_0.10.1_…``, a fork) and no image at all."""
    if image is None:
        return None
    found = _RELEASE_IMAGE.fullmatch(image.strip())
    return found["version"] if found else None


@functools.cache
def image_version(image: str | None) -> str | None:
    """The covered vLLM version a record's image ran (:func:`image_release`, when the
    knowledge table has that release); None when it is unknown: not a release image, or a
    release the table does not cover."""
    release = image_release(image)
    return release if release in versions() else None


def unknown_version_note(key: str, images: Iterable[str | None]) -> str:
    """Why a flag's absence cannot be read as its default: ``vLLM's default of
    disable_cascade_attn depends on the version (false ≤0.17.0, true ≥0.18.0); the
    evidence's vLLM version is unknown (image vllm/vllm-openai:nightly-…)``."""
    named = sorted({image or "none" for image in images})
    shown = ", ".join(named[:_IMAGES_SHOWN])
    if len(named) > _IMAGES_SHOWN:
        shown += f" and {len(named) - _IMAGES_SHOWN} more"
    return (
        f"vLLM's default of {key} depends on the version ({describe_default(key)}); the "
        f"evidence's vLLM version is unknown (image{'s' if len(named) > 1 else ''} {shown})"
    )


_IMAGES_SHOWN = 3


class VersionDefaults:
    """The defaults that depend on the vLLM version, read at the version an evidence
    record's image ran (:func:`image_version`); memoised per FlagSet (an audit meets the
    same role FlagSets many times).

    * :meth:`drop`: a record's flags without those written at its version's default (an
      explicit default equals its absence; a record of unknown version keeps them);
    * :meth:`versioned`: the items of a command that may be some version's default (a
      recipe's, which runs on whatever version: judged per record);
    * :meth:`runs`: whether a record that leaves a flag out runs it at a given value.
    """

    __slots__ = ("_dropped", "_values", "_versioned")

    def __init__(self) -> None:
        self._values = versioned_values()
        self._dropped: dict[tuple[FlagSet, str | None], FlagSet] = {}
        self._versioned: dict[FlagSet, frozenset[tuple[str, str]]] = {}

    @staticmethod
    def version(image: str | None) -> str | None:
        return image_version(image)

    def drop(self, flags: FlagSet, image: str | None) -> FlagSet:
        """``flags`` (a record's) without the flags written at the default of the vLLM
        version ``image`` ran, where that default depends on the version."""
        memo = (flags, image)
        found = self._dropped.get(memo)
        if found is None:
            version = image_version(image)
            found = flags
            if version is not None:
                defaults = defaults_at(version)
                drop = [k for k in defaults.keys() & flags.key_set() if flags[k] == defaults[k]]
                if drop:
                    found = flags.without(drop)
            self._dropped[memo] = found
        return found

    def versioned(self, flags: FlagSet) -> frozenset[tuple[str, str]]:
        """The items of ``flags`` whose value is the default of the flag in some covered
        version where that default depends on the version (usually none)."""
        found = self._versioned.get(flags)
        if found is None:
            values = self._values
            found = self._versioned[flags] = frozenset(
                (k, flags[k]) for k in values.keys() & flags.key_set() if flags[k] in values[k]
            )
        return found

    @staticmethod
    def runs(key: str, value: str, image: str | None) -> bool:
        """Whether a record of ``image`` that leaves ``key`` out runs it at ``value`` (its
        known version's default)."""
        version = image_version(image)
        return version is not None and defaults_at(version).get(key) == value

    def may_default(self, key: str, value: str) -> bool:
        """Whether ``value`` is ``key``'s default in some covered version where that default
        depends on the version (only then can a record's version change what it means)."""
        return value in self._values.get(key, ())

    def unknown(self, key: str, value: str, image: str | None) -> bool:
        """Whether a record of ``image`` may run ``key`` at ``value`` by default: its version
        is unknown and ``value`` is the default of some covered version."""
        return self.may_default(key, value) and image_version(image) is None
