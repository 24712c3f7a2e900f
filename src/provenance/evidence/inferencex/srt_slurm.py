"""srt-slurm recipe YAMLs (spec §4): per-role flags, topology and workload.

A disaggregated (or aggregated multi-node) master-config point names its
recipe with ``CONFIG_FILE=recipes/<rest>``; the launcher overlays
``benchmarks/multi_node/srt-slurm-recipes/<rest>`` of the InferenceX tree onto
srt-slurm's ``recipes/`` before ``srtctl apply`` (spec §2.5), so that is the
file this module reads. A ``path.yaml:selector`` suffix (srt-slurm matrix
overrides) is not evaluated: the recipe is marked partial instead.

Per role the ``vllm_config.<role>`` mapping and ``<role>_environment`` env go
through the Flag normaliser (``normalise_mapping``). Topology comes from
``resources`` and the role's parallelism keys. :func:`check_against_master`
compares the recipe with the master-config labels (spec §4.4).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from provenance.errors import InputError
from provenance.evidence.inferencex.master import MultiNodePoint, WorkerSpec
from provenance.model.flags import FlagSet
from provenance.model.record import PartialMarker, RoleTopology, Topology
from provenance.normalise.canonical import normalise_mapping
from provenance.safe_yaml import LoadedYaml, format_key_path, load_yaml_bytes, parse_model

RECIPES_PREFIX = "recipes/"
RECIPES_DIR = "benchmarks/multi_node/srt-slurm-recipes/"

RecipeRole = Literal["prefill", "decode", "serve"]
#: srt-slurm role name → evidence role.
ROLE_NAMES: dict[str, RecipeRole] = {
    "prefill": "prefill",
    "decode": "decode",
    "aggregated": "serve",
    "agg": "serve",
}
_CONC_SPLIT = re.compile(r"[x,\s]+")


class NotVllmRecipeError(InputError):
    """The recipe configures another engine (no ``backend.vllm_config``)."""


class _Raw(BaseModel):
    model_config = ConfigDict(extra="ignore", populate_by_name=True, frozen=True)


class _RawModel(_Raw):
    path: str | None = None
    container: str | None = None
    precision: str | None = None


class _RawResources(_Raw):
    gpu_type: str | None = None
    gpus_per_node: int | None = None
    prefill_nodes: int | None = None
    decode_nodes: int | None = None
    prefill_workers: int | None = None
    decode_workers: int | None = None
    gpus_per_prefill: int | None = None
    gpus_per_decode: int | None = None
    agg_nodes: int | None = None
    agg_workers: int | None = None
    gpus_per_agg: int | None = None


class _RawBackend(_Raw):
    type: str | None = None
    allow_prefill_decode_colocation: bool = False
    prefill_environment: dict[str, Any] | None = None
    decode_environment: dict[str, Any] | None = None
    aggregated_environment: dict[str, Any] | None = None
    agg_environment: dict[str, Any] | None = None
    vllm_config: dict[str, dict[str, Any] | None] | None = None


class _RawBenchmark(_Raw):
    type: str | None = None
    isl: int | None = None
    osl: int | None = None
    concurrencies: str | int | list[int] | None = None


class _RawRecipe(_Raw):
    name: str | None = None
    model: _RawModel = Field(default_factory=_RawModel)
    resources: _RawResources = Field(default_factory=_RawResources)
    backend: _RawBackend = Field(default_factory=_RawBackend)
    benchmark: _RawBenchmark = Field(default_factory=_RawBenchmark)


class RecipeRoleConfig(BaseModel):
    """One role of a recipe: its canonical flags (incl. ``env:``) and deployment shape."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    role: RecipeRole
    flags: FlagSet
    topology: RoleTopology


class SrtRecipe(BaseModel):
    """What one srt-slurm recipe deploys and benchmarks."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    path: str
    name: str | None
    model_path: str | None
    container: str | None
    backend_type: str | None
    roles: dict[str, RecipeRoleConfig]
    topology: Topology
    isl: int | None
    osl: int | None
    concurrencies: tuple[int, ...] | None
    partial: tuple[PartialMarker, ...] = ()


def recipe_repo_path(config_file: str, *, origin: str) -> tuple[str, str | None]:
    """``CONFIG_FILE`` value → (path in the InferenceX tree, srt-slurm selector or None)."""
    value = config_file.strip()
    selector: str | None = None
    if ":" in value:
        value, _, selector = value.partition(":")
    if value.startswith(RECIPES_PREFIX):
        return RECIPES_DIR + value[len(RECIPES_PREFIX) :], selector
    return value, selector


def parse_concurrencies(value: str | int | list[int] | None) -> tuple[int, ...] | None:
    """``"4x32x64"`` → (4, 32, 64); ``4096`` → (4096,)."""
    if value is None:
        return None
    if isinstance(value, bool):
        raise ValueError("concurrencies must be numbers")
    if isinstance(value, int):
        return (value,)
    if isinstance(value, list):
        return tuple(int(v) for v in value)
    parts = [p for p in _CONC_SPLIT.split(value.strip()) if p]
    if not parts or not all(p.isdigit() for p in parts):
        raise ValueError(f"concurrencies {value!r} is not like '4x32x64'")
    return tuple(int(p) for p in parts)


def _int(config: Mapping[str, Any], *names: str, default: int = 1) -> int:
    for name in names:
        if name in config and config[name] is not None:
            value = config[name]
            if isinstance(value, bool):
                break
            return int(value)
    return default


def _truthy(config: Mapping[str, Any], *names: str) -> bool:
    for name in names:
        if name in config:
            value = config[name]
            if isinstance(value, str):
                return value.strip().lower() in {"true", "1", "yes"}
            return bool(value)
    return False


def role_topology(
    config: Mapping[str, Any], *, workers: int, gpus: int | None, nodes: int | None
) -> RoleTopology:
    """Parallelism of one role from its ``vllm_config`` keys (dashes or underscores)."""
    tp = _int(config, "tensor-parallel-size", "tensor_parallel_size", "tp")
    dp = _int(config, "data-parallel-size", "data_parallel_size", "dp")
    pp = _int(config, "pipeline-parallel-size", "pipeline_parallel_size")
    expert = _truthy(config, "enable-expert-parallel", "enable_expert_parallel")
    per_worker = gpus if gpus is not None else tp * dp * pp
    return RoleTopology(
        workers=workers,
        gpus_per_worker=per_worker,
        tp=tp,
        ep=tp * dp if expert else 1,
        dp=dp,
        dp_attention=dp > 1,
        expert_parallel=expert,
        nodes=nodes,
    )


def _environment(backend: _RawBackend, role: str) -> dict[str, Any]:
    if role == "prefill":
        return dict(backend.prefill_environment or {})
    if role == "decode":
        return dict(backend.decode_environment or {})
    return dict(backend.aggregated_environment or backend.agg_environment or {})


def parse_recipe(loaded: LoadedYaml) -> SrtRecipe:
    """Build an :class:`SrtRecipe` from a loaded recipe YAML."""
    raw = parse_model(_RawRecipe, loaded)
    partial: list[PartialMarker] = []
    res = raw.resources
    vllm_config = raw.backend.vllm_config or {}
    if raw.backend.type not in (None, "vllm"):
        raise NotVllmRecipeError(
            f"backend type {raw.backend.type!r} is not vLLM; only vllm_config recipes are read",
            location=loaded.location(("backend", "type")),
        )
    roles: dict[str, RecipeRoleConfig] = {}
    topo_roles: dict[str, RoleTopology] = {}
    for name, config in vllm_config.items():
        role = ROLE_NAMES.get(str(name))
        if role is None:
            partial.append(
                PartialMarker(
                    construct_name="srt-slurm-unknown-role",
                    path=loaded.path,
                    line=loaded.line_of(("backend", "vllm_config", name)),
                    detail=f"vllm_config role {name!r} is not prefill/decode/aggregated",
                )
            )
            continue
        mapping = dict(config or {})
        if role == "prefill":
            workers, gpus, nodes = res.prefill_workers, res.gpus_per_prefill, res.prefill_nodes
        elif role == "decode":
            workers, gpus, nodes = res.decode_workers, res.gpus_per_decode, res.decode_nodes
        else:
            workers, gpus, nodes = res.agg_workers, res.gpus_per_agg, res.agg_nodes
        topology = role_topology(mapping, workers=workers or 1, gpus=gpus, nodes=nodes)
        try:
            flags = normalise_mapping(mapping, _environment(raw.backend, str(name)))
        except ValueError as exc:
            raise InputError(
                f"cannot normalise vllm_config.{name}: {exc}",
                location=loaded.location(("backend", "vllm_config", name)),
            ) from None
        roles[role] = RecipeRoleConfig(role=role, flags=flags, topology=topology)
        topo_roles[role] = topology
    if not roles:
        raise NotVllmRecipeError(
            "recipe has no backend.vllm_config roles", location=loaded.location(("backend",))
        )
    kind: Literal["disaggregated", "aggregated_multi_node"] = (
        "aggregated_multi_node" if set(roles) == {"serve"} else "disaggregated"
    )
    node_counts = [n for n in (res.prefill_nodes, res.decode_nodes, res.agg_nodes) if n is not None]
    total = sum(t.workers * t.gpus_per_worker for t in topo_roles.values())
    try:
        concs = parse_concurrencies(raw.benchmark.concurrencies)
    except ValueError as exc:
        raise InputError(
            str(exc), location=loaded.location(("benchmark", "concurrencies"))
        ) from None
    return SrtRecipe(
        path=loaded.path,
        name=raw.name,
        model_path=raw.model.path,
        container=raw.model.container,
        backend_type=raw.backend.type,
        roles=roles,
        topology=Topology(
            kind=kind,
            roles=topo_roles,
            nodes=sum(node_counts) if node_counts else None,
            gpus_per_node=res.gpus_per_node,
            colocated=raw.backend.allow_prefill_decode_colocation,
            total_gpus=total,
        ),
        isl=raw.benchmark.isl,
        osl=raw.benchmark.osl,
        concurrencies=concs,
        partial=tuple(partial),
    )


def load_recipe_bytes(data: bytes, path: str) -> SrtRecipe:
    # Real recipes repeat an env key with the same value (b200-fp4 1p1d-tp4-dep4-eagle3):
    # the meaning is not in doubt, so the repeat is tolerated. A repeat with another value
    # (kimi-k3 agg-gb200-tp16-latency-agentic: two compilation-config) is read as srtctl
    # reads a recipe, with yaml.safe_load (NVIDIA/srt-slurm v1.0.53 core/config.py
    # load_config): the last wins. Which srt-slurm the runner cloned is not evaluated, so
    # each such repeat marks the record partial.
    loaded = load_yaml_bytes(data, path, identical_duplicates=True, last_duplicates=True)
    recipe = parse_recipe(loaded)
    if not loaded.overridden:
        return recipe
    repeats = tuple(
        PartialMarker(
            construct_name="yaml-duplicate-key",
            path=path,
            line=line,
            detail=(
                f"key {format_key_path(key_path)} repeated with another value (earlier on line "
                f"{earlier}); read as srtctl's yaml.safe_load reads it: the last one wins"
            ),
        )
        for key_path, line, earlier in loaded.overridden
    )
    return recipe.model_copy(update={"partial": (*recipe.partial, *repeats)})


def _expected_shapes(worker: WorkerSpec) -> set[tuple[int, int, bool, int]]:
    """Master labels → accepted (tp, dp, expert parallel, GPUs per worker) (spec §1.4).

    DEP-N is labelled ``tp=N ep=N dp-attn=true`` (the usual convention) or
    ``tp=1 ep=N dp-attn=true`` (some DeepSeek-V4 keys); both mean N GPUs.
    """
    if worker.dp_attn:
        return {(1, n, True, n) for n in {worker.tp, worker.ep}}
    return {(worker.tp, 1, worker.ep > 1, worker.tp)}


def check_against_master(
    recipe: SrtRecipe, point: MultiNodePoint, *, image: str | None
) -> list[str]:
    """Master ↔ recipe mismatches (spec §4.4), as human-readable warnings."""
    problems: list[str] = []
    where = recipe.path
    aggregated = recipe.topology.kind == "aggregated_multi_node"
    for role_name, worker in (("prefill", point.prefill), ("decode", point.decode)):
        if worker is None or aggregated:
            continue
        role = recipe.roles.get(role_name)
        if role is None:
            problems.append(f"{where}: master labels a {role_name} role the recipe does not have")
            continue
        topo = role.topology
        if topo.workers != worker.num_worker:
            problems.append(
                f"{where}: {role_name} workers {topo.workers} != master num-worker "
                f"{worker.num_worker}"
            )
        shape = (topo.tp, topo.dp, topo.expert_parallel, topo.gpus_per_worker)
        if shape not in _expected_shapes(worker):
            problems.append(
                f"{where}: {role_name} parallelism tp={topo.tp} dp={topo.dp} "
                f"ep={'on' if topo.expert_parallel else 'off'} on {topo.gpus_per_worker} GPU(s) "
                f"!= master tp={worker.tp} ep={worker.ep} "
                f"dp-attn={str(worker.dp_attn).lower()}"
            )
    if recipe.concurrencies is not None and tuple(recipe.concurrencies) != tuple(point.concs):
        problems.append(
            f"{where}: benchmark concurrencies {list(recipe.concurrencies)} != master "
            f"conc-list {list(point.concs)}"
        )
    if point.scenario == "fixed-seq-len":
        if recipe.isl is not None and recipe.isl != point.isl:
            problems.append(f"{where}: benchmark isl {recipe.isl} != master isl {point.isl}")
        if recipe.osl is not None and recipe.osl != point.osl:
            problems.append(f"{where}: benchmark osl {recipe.osl} != master osl {point.osl}")
    if image is not None and recipe.container is not None and recipe.container != image:
        problems.append(f"{where}: model.container {recipe.container} != master image {image}")
    return problems
