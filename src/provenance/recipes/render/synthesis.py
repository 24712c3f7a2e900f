"""Render a selection to the argv and env of every process, as the recipes builder does.

The unit of work is one *role command*: one process of a deployment (the
single-node ``serve``, a multi-node head or follower, one node of a PD pool, one
Mooncake instance or its follower). :func:`render_role` computes it from a
:class:`RoleInputs` that holds only the inputs that role depends on — a PD prefill
node does not see the decode pool, a multi-node follower only its own rank — so
a caller rendering a whole cross-product can memoise it (:class:`Renderer` does).
:func:`render` assembles a full :class:`RenderResult` for one selection.

argv = ``vllm serve <model>`` + last-wins dedupe of, in order (spec §3.2):
base args, variant args, variant exact-id args, strategy/role args, the
parallelism emitter, strategy-override args, the generation layer (a strategy
generation override *replaces* the recipe and variant generation layers),
exact-id strategy and role args, Advanced-panel args, feature args, KV args.

Why one module (about 850 lines): it is the builder's ``resolveCommand``, one
ordered sequence of layers over one per-render context (``_Context``); every
``build_*`` stage reads the same context, and keeping the sequence in one file
keeps it checkable against spec §3.2 line by line. The token rules the layers are
joined with (units, dedupe, shell text) are in :mod:`provenance.recipes.render.argv`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import NamedTuple

from provenance.errors import UsageError
from provenance.model.combination import (
    DeployType,
    EnvValue,
    PdPool,
    RenderResult,
    Role,
    RoleCommand,
    Selection,
)
from provenance.recipes.enumerate.hardware import (
    HardwareView,
    generation_block,
    hardware_view,
    keyed_value,
)
from provenance.recipes.enumerate.rules import (
    active_kv_option,
    feature_allowed_for_strategy,
    omni_tasks,
    pd_pool_modes,
    recipe_is_omni,
    resolve_mode_key,
    resolve_single_node_tp,
    strategy_of,
    variant_of,
)
from provenance.recipes.load.loader import Recipe, RecipesRoot
from provenance.recipes.load.schema import KvStore, Strategy, StrategyRole
from provenance.recipes.render.argv import (
    RenderedPart,
    dedupe_args,
    dedupe_units,
    format_command,
    join_units,
)

#: NVL4-only env vars, kept under pd_cluster only on GB200/GB300 trays.
NVL4_ONLY_ENV_KEYS = (
    "VLLM_USE_NCCL_SYMM_MEM",
    "NCCL_CUMEM_ENABLE",
    "NCCL_MNNVL_ENABLE",
    "NCCL_NVLS_ENABLE",
    "UCX_NET_DEVICES",
)
NVL4_HARDWARE_IDS = frozenset({"gb200", "gb300"})
PD_ROLES: tuple[Role, Role] = ("prefill", "decode")


class PoolKey(NamedTuple):
    """One PD pool node as ``resolveCommand`` receives it: pool size, node index, mode."""

    nodes: int
    rank: int
    parallelism: str


class RoleInputs(NamedTuple):
    """Every input one role's argv/env depends on (hashable, for memoisation)."""

    variant: str
    hardware: str
    strategy: str
    #: serve, head, worker, prefill, decode, instance or instance_worker
    role: Role
    #: node count of a non-PD deployment (per instance under Mooncake); 1 for PD.
    node_count: int
    #: follower rank (``worker``), 0 otherwise.
    node_rank: int
    pool: PoolKey | None
    kv_offload: str | None
    #: (instance count, current instance) under Mooncake composition, else None.
    kv_instances: tuple[int, int] | None
    features: tuple[str, ...]
    #: user-picked mode per modes-feature, sorted by feature.
    feature_modes: tuple[tuple[str, str], ...]
    advanced_args: tuple[str, ...] = ()


def _js_number(text: str | None) -> float:
    """JavaScript ``Number(text)`` for the strings a recipe can hold."""
    if text is None:
        return math.nan
    stripped = text.strip()
    if not stripped:
        return 0.0
    try:
        return float(int(stripped, 10))
    except ValueError:
        pass
    try:
        return float(stripped)
    except ValueError:
        return math.nan


def _js_number_text(value: float) -> str:
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if value == int(value):
        return str(int(value))
    return repr(value)


# ---------------------------------------------------------------- per-render context


@dataclass(frozen=True)
class _Context:
    recipe: Recipe
    root: RecipesRoot
    variant_key: str
    strategy_name: str
    strategy: Strategy | None
    deploy_type: str | None
    hw: HardwareView
    kv_store: KvStore | None
    kv_composing: bool
    #: the recipe's PD pool modes (``pd_pool_modes``: the spec alone), read once per
    #: context instead of once per pool; empty unless the strategy is ``pd_cluster``
    pool_modes: tuple[str, ...] = ()


def _context(recipe: Recipe, root: RecipesRoot, key: RoleInputs) -> _Context:
    strategy = strategy_of(root, key.strategy)
    deploy_type = strategy.deploy_type if strategy is not None else None
    kv_store = root.kv_store.get(key.kv_offload) if key.kv_offload else None
    return _Context(
        recipe=recipe,
        root=root,
        variant_key=key.variant,
        strategy_name=key.strategy,
        strategy=strategy,
        deploy_type=deploy_type,
        hw=hardware_view(root.taxonomy, key.hardware),
        kv_store=kv_store,
        kv_composing=kv_store is not None and deploy_type != "pd_cluster",
        pool_modes=tuple(pd_pool_modes(recipe.spec)) if deploy_type == "pd_cluster" else (),
    )


def _strategy_role(strategy: Strategy | None, role: str) -> StrategyRole | None:
    if strategy is None:
        return None
    return strategy.prefill if role == "prefill" else strategy.decode if role == "decode" else None


def _pd_parallelism(ctx: _Context, role: str, pool: PoolKey) -> str:
    """The pool's mode before snapping (pool pick > override > strategy role > ``tp``)."""
    overrides = (ctx.recipe.spec.strategy_overrides or {}).get(ctx.strategy_name)
    role_override = getattr(overrides, role, None) if overrides is not None else None
    strategy_role = _strategy_role(ctx.strategy, role)
    return (
        pool.parallelism
        or (role_override.parallelism if role_override is not None else None)
        or (strategy_role.parallelism if strategy_role is not None else None)
        or "tp"
    )


def _master_address(ctx: _Context, key: RoleInputs) -> str:
    if ctx.kv_composing and key.kv_instances is not None and key.kv_instances[0] > 1:
        return f"$VLLM_INSTANCE_{key.kv_instances[1] + 1}"
    return "$HEAD_IP"


def _parallel_args(ctx: _Context, key: RoleInputs, pd_role: str | None) -> list[str]:
    """Step 3b: the parallelism emitter (spec §3.3)."""
    spec = ctx.recipe.spec
    hw = ctx.hw
    gpu_count = hw.gpu_count
    strategy = ctx.strategy
    node_count = key.node_count
    parallel_flag = (strategy.parallel_flag if strategy is not None else None) or (
        "--tensor-parallel-size"
    )
    is_multi = ctx.deploy_type == "multi_node" and node_count > 1
    worker = key.role in ("worker", "instance_worker")
    mp_rank = max(1, key.node_rank) if worker else 0
    total_gpus = gpu_count * max(1, node_count)
    master = _master_address(ctx, key)
    parallelism = strategy.parallelism if strategy is not None else None
    args: list[str] = []
    if is_multi and parallel_flag == "--data-parallel-size":
        override = (spec.strategy_overrides or {}).get(ctx.strategy_name)
        dp_local: float = float(gpu_count)
        if override is not None:
            gen_block = generation_block(override.hardware_overrides, hw)
            exact = (override.hardware_overrides or {}).get(hw.id)
            scanned = [
                *(override.vllm_args or []),
                *(override.extra_args or []),
                *((gen_block.extra_args or []) if gen_block is not None else []),
                *((exact.extra_args or []) if exact is not None else []),
            ]
            for index in range(len(scanned) - 1, -1, -1):
                if scanned[index] == "--data-parallel-size-local":
                    following = scanned[index + 1] if index + 1 < len(scanned) else None
                    dp_local = _js_number(following)
                    break
        args += ["--data-parallel-size", str(total_gpus)]
        args += ["--data-parallel-size-local", str(gpu_count)]
        args += ["--data-parallel-address", master]
        if worker:
            args += ["--data-parallel-start-rank", _js_number_text(mp_rank * dp_local)]
    elif is_multi and parallelism == "tp_pp":
        args += ["--tensor-parallel-size", str(gpu_count)]
        args += ["--pipeline-parallel-size", str(node_count)]
        args += ["--nnodes", str(node_count), "--node-rank", str(mp_rank)]
        args += ["--master-addr", master]
        if mp_rank > 0:
            args.append("--headless")
    elif is_multi and parallelism == "tp_dp":
        args += ["--tensor-parallel-size", str(gpu_count)]
        args += ["--data-parallel-size", str(node_count)]
        args += ["--data-parallel-size-local", "1"]
        args += ["--data-parallel-address", master]
        if worker:
            args += ["--data-parallel-start-rank", str(mp_rank)]
    elif is_multi:
        args += ["--tensor-parallel-size", str(total_gpus)]
        args += ["--nnodes", str(node_count), "--node-rank", str(mp_rank)]
        args += ["--master-addr", master]
        if mp_rank > 0:
            args.append("--headless")
    elif ctx.deploy_type == "pd_cluster":
        assert pd_role is not None and key.pool is not None
        args += _pd_pool_args(ctx, key.pool, pd_role)
    else:
        variant = variant_of(spec, ctx.variant_key)
        tp = resolve_single_node_tp(spec, variant, hw, ctx.strategy_name)
        args += [parallel_flag, str(tp)]
    return args


def _pd_pool_args(ctx: _Context, pool: PoolKey, role: str) -> list[str]:
    spec = ctx.recipe.spec
    gpu_count = ctx.hw.gpu_count
    overrides = (spec.strategy_overrides or {}).get(ctx.strategy_name)
    role_override = getattr(overrides, role, None) if overrides is not None else None
    strategy_role = _strategy_role(ctx.strategy, role)
    pool_nodes = pool.nodes
    pool_gpus = gpu_count // 2 if pool_nodes == 0 else pool_nodes * gpu_count
    parallelism = _pd_parallelism(ctx, role, pool)
    allowed = ctx.pool_modes or tuple(pd_pool_modes(spec))
    if parallelism not in allowed:
        parallelism = allowed[0]
    upper = role.upper()
    args: list[str] = []
    if parallelism == "dep":
        nodes_in_pool = max(1, pool_nodes)
        tp_explicit = role_override.tp if role_override is not None else None
        if tp_explicit is None and strategy_role is not None:
            tp_explicit = strategy_role.tp
        role_tp = tp_explicit if tp_explicit is not None else 1
        dp_local = max(1, gpu_count // role_tp) if role_tp else 1
        dp_size = nodes_in_pool * dp_local
        node_index = max(0, min(nodes_in_pool - 1, pool.rank))
        if tp_explicit is not None:
            args += ["--tensor-parallel-size", str(role_tp)]
        args += ["--data-parallel-size", str(dp_size)]
        args += ["--data-parallel-size-local", str(dp_local)]
        args += ["--data-parallel-start-rank", str(node_index * dp_local)]
        args += ["--data-parallel-address", f"${upper}_NODE_1"]
        args += ["--data-parallel-rpc-port", f"${upper}_DP_RPC_PORT"]
        if nodes_in_pool > 1:
            args.append("--data-parallel-hybrid-lb")
        args.append("--enable-expert-parallel")
        return args
    flag = (
        (role_override.parallel_flag if role_override is not None else None)
        or (strategy_role.parallel_flag if strategy_role is not None else None)
        or (ctx.strategy.parallel_flag if ctx.strategy is not None else None)
        or "--tensor-parallel-size"
    )
    args += [flag, str(max(1, pool_gpus))]
    if parallelism == "tep":
        args.append("--enable-expert-parallel")
    if pool_nodes > 1:
        node_index = max(0, min(pool_nodes - 1, pool.rank))
        args += ["--nnodes", str(pool_nodes), "--node-rank", str(node_index)]
        args += ["--master-addr", f"${upper}_NODE_1"]
        if node_index > 0:
            args.append("--headless")
    return args


def _allowed_features(ctx: _Context) -> list[str]:
    """The features whose args a deployment of ``ctx`` renders (strategy and KV gates)."""
    features = ctx.recipe.spec.features or {}
    return [
        name
        for name, feature in features.items()
        if feature_allowed_for_strategy(feature, ctx.strategy_name)
        and not (ctx.kv_composing and feature.companion is not None and feature.companion.command)
    ]


def _feature_args(ctx: _Context, key: RoleInputs) -> list[str]:
    """Step 7: feature args in the order of ``key.features``.

    Depends only on variant, hardware, strategy, KV composition and the features.
    """
    spec = ctx.recipe.spec
    features = spec.features or {}
    variant = variant_of(spec, ctx.variant_key)
    selected = dict(key.feature_modes)
    args: list[str] = []
    for name in key.features:
        feature = features.get(name)
        if feature is None or not feature_allowed_for_strategy(feature, ctx.strategy_name):
            continue
        if ctx.kv_composing and feature.companion is not None and feature.companion.command:
            continue
        if feature.modes is not None:
            mode_key = resolve_mode_key(
                feature, name, variant, ctx.variant_key, ctx.hw, selected.get(name)
            )
            mode = feature.modes.get(mode_key) if mode_key is not None else None
            if mode is not None:
                override = keyed_value(mode.hardware_overrides, ctx.hw)
                mode_args = override.args if override is not None else None
                if mode_args is None:
                    mode_args = mode.args
                if mode_args:
                    args += mode_args
            continue
        block = generation_block(feature.hardware_overrides, ctx.hw)
        feature_args = block.args if block is not None else None
        if feature_args is None:
            feature_args = feature.args
        if feature_args:
            args += feature_args
    return args


def build_prefix_args(ctx: _Context, key: RoleInputs) -> list[str]:
    """Steps 1-6 of one role's arguments: everything before the feature args.

    Depends on neither ``key.features`` nor ``key.feature_modes``.
    """
    spec = ctx.recipe.spec
    hw = ctx.hw
    variant = variant_of(spec, ctx.variant_key)
    pd_role = key.role if key.role in PD_ROLES else None
    args: list[str] = []
    if spec.model is not None and spec.model.base_args:
        args += spec.model.base_args
    if variant.extra_args:
        args += variant.extra_args
    variant_exact = (variant.hardware_overrides or {}).get(hw.id)
    if variant_exact is not None and variant_exact.extra_args:
        args += variant_exact.extra_args
    strategy = ctx.strategy
    if ctx.deploy_type != "pd_cluster":
        if strategy is not None and strategy.vllm_args:
            args += strategy.vllm_args
    elif pd_role is not None:
        strategy_role = _strategy_role(strategy, pd_role)
        if strategy_role is not None and strategy_role.vllm_args:
            args += strategy_role.vllm_args
    args += _parallel_args(ctx, key, pd_role)
    override = (spec.strategy_overrides or {}).get(ctx.strategy_name)
    role_override = getattr(override, pd_role) if override is not None and pd_role else None
    if override is not None:
        if pd_role is not None:
            if role_override is not None:
                args += role_override.extra_args or []
                args += role_override.vllm_args or []
        else:
            args += override.extra_args or []
            args += override.vllm_args or []
    strategy_gen = generation_block(override.hardware_overrides, hw) if override else None
    if strategy_gen is not None:
        args += strategy_gen.extra_args or []
    else:
        recipe_gen = generation_block(spec.hardware_overrides, hw)
        if recipe_gen is not None:
            args += recipe_gen.extra_args or []
        variant_gen = generation_block(variant.hardware_overrides, hw)
        if variant_gen is not None:
            args += variant_gen.extra_args or []
    if override is not None:
        strategy_exact = (override.hardware_overrides or {}).get(hw.id)
        if strategy_exact is not None:
            args += strategy_exact.extra_args or []
    if role_override is not None:
        role_exact = (role_override.hardware_overrides or {}).get(hw.id)
        if role_exact is not None:
            args += role_exact.extra_args or []
    args += key.advanced_args
    return args


def build_kv_args(ctx: _Context, key: RoleInputs) -> list[str]:
    """Step 8: KV offload / Mooncake connector args (after the features)."""
    spec = ctx.recipe.spec
    hw = ctx.hw
    pd_role = key.role if key.role in PD_ROLES else None
    args: list[str] = []
    kv_option = active_kv_option(
        ctx.root, spec, key.kv_offload, ctx.strategy_name, ctx.deploy_type, hw
    )
    if kv_option is not None:
        args += kv_option.args or []
    store = ctx.kv_store
    if ctx.kv_composing and store is not None and store.vllm is not None:
        args += store.vllm.vllm_args or []
    if ctx.deploy_type == "pd_cluster" and pd_role is not None and store is not None:
        store_role = getattr(store.pd, pd_role, None) if store.pd is not None else None
        if store_role is not None and store_role.args:
            args += store_role.args
    return args


def build_args(ctx: _Context, key: RoleInputs) -> list[str]:
    """The raw (not yet deduplicated) argument list of one role (spec §3.2)."""
    return [*build_prefix_args(ctx, key), *_feature_args(ctx, key), *build_kv_args(ctx, key)]


def build_env(ctx: _Context, key: RoleInputs) -> dict[str, EnvValue]:
    """The environment of one role, in the builder's assignment order (spec §4)."""
    spec = ctx.recipe.spec
    hw = ctx.hw
    variant = variant_of(spec, ctx.variant_key)
    pd_role = key.role if key.role in PD_ROLES else None
    strategy = ctx.strategy
    env: dict[str, EnvValue] = {}
    if spec.model is not None and spec.model.base_env:
        env.update(spec.model.base_env)
    if variant.extra_env:
        env.update(variant.extra_env)
    variant_exact = (variant.hardware_overrides or {}).get(hw.id)
    if variant_exact is not None and variant_exact.extra_env:
        env.update(variant_exact.extra_env)
    if ctx.deploy_type != "pd_cluster":
        if strategy is not None and strategy.env:
            env.update(strategy.env)
    elif pd_role is not None:
        strategy_role = _strategy_role(strategy, pd_role)
        if strategy_role is not None and strategy_role.env:
            env.update(strategy_role.env)
    kv_option = active_kv_option(
        ctx.root, spec, key.kv_offload, ctx.strategy_name, ctx.deploy_type, hw
    )
    if kv_option is not None and kv_option.env:
        env.update(kv_option.env)
    store = ctx.kv_store
    composes_store = ctx.kv_composing or (
        ctx.deploy_type == "pd_cluster"
        and pd_role is not None
        and store is not None
        and store.pd is not None
    )
    if composes_store and store is not None and store.vllm is not None and store.vllm.env:
        env.update(store.vllm.env)
    if ctx.deploy_type == "pd_cluster" and pd_role is not None and key.pool is not None:
        pool_nodes = key.pool.nodes
        gpu_count = hw.gpu_count
        if pool_nodes >= 1:
            env["CUDA_VISIBLE_DEVICES"] = ",".join(str(i) for i in range(gpu_count))
            if pool_nodes >= 2:
                env["GLOO_SOCKET_IFNAME"] = "$IFACE_NAME"
                env["NCCL_SOCKET_IFNAME"] = "$IFACE_NAME"
        else:
            half = gpu_count // 2
            if half > 0:
                ids = range(half) if pd_role == "prefill" else range(half, gpu_count)
                env["CUDA_VISIBLE_DEVICES"] = ",".join(str(i) for i in ids)
    override = (spec.strategy_overrides or {}).get(ctx.strategy_name)
    role_override = getattr(override, pd_role) if override is not None and pd_role else None
    if override is not None:
        if override.env:
            env.update(override.env)
        if role_override is not None and role_override.env:
            env.update(role_override.env)
        if pd_role is None and override.extra_env:
            env.update(override.extra_env)
    strategy_gen = generation_block(override.hardware_overrides, hw) if override else None
    if strategy_gen is not None:
        if strategy_gen.extra_env:
            env.update(strategy_gen.extra_env)
    else:
        recipe_gen = generation_block(spec.hardware_overrides, hw)
        if recipe_gen is not None and recipe_gen.extra_env:
            env.update(recipe_gen.extra_env)
        variant_gen = generation_block(variant.hardware_overrides, hw)
        if variant_gen is not None and variant_gen.extra_env:
            env.update(variant_gen.extra_env)
    if override is not None:
        strategy_exact = (override.hardware_overrides or {}).get(hw.id)
        if strategy_exact is not None and strategy_exact.extra_env:
            env.update(strategy_exact.extra_env)
    if role_override is not None:
        role_exact = (role_override.hardware_overrides or {}).get(hw.id)
        if role_exact is not None and role_exact.extra_env:
            env.update(role_exact.extra_env)
    if ctx.deploy_type == "pd_cluster" and hw.id not in NVL4_HARDWARE_IDS:
        for name in NVL4_ONLY_ENV_KEYS:
            env.pop(name, None)
    if ctx.deploy_type == "pd_cluster" and pd_role is not None and key.pool is not None:
        rank = key.pool.rank
        if rank > 0 and _pd_parallelism(ctx, pd_role, key.pool) == "dep":
            old = f"${pd_role.upper()}_NODE_1"
            new = f"${pd_role.upper()}_NODE_{rank + 1}"
            for name, value in env.items():
                if value == old:
                    env[name] = new
    return env


def model_id_of(recipe: Recipe, variant_key: str) -> str:
    variant = variant_of(recipe.spec, variant_key)
    model = recipe.spec.model
    return variant.model_id or (model.model_id if model is not None else None) or "unknown"


def _role_command(
    recipe: Recipe,
    key: RoleInputs,
    args: list[str],
    env: dict[str, EnvValue],
) -> RoleCommand:
    """Wrap deduplicated ``args`` and ``env`` as the role's command."""
    argv = ("vllm", "serve", model_id_of(recipe, key.variant), *args)
    node_rank: int | None
    if key.role == "serve":
        node_rank = None
    elif key.pool is not None:
        node_rank = key.pool.rank
    else:
        node_rank = key.node_rank
    instance = key.kv_instances[1] if key.kv_instances is not None else None
    return RoleCommand(role=key.role, node_rank=node_rank, argv=argv, env=env, instance=instance)


def render_role(recipe: Recipe, root: RecipesRoot, key: RoleInputs) -> RoleCommand:
    """argv and env of one process; a pure function of ``key`` for a given recipe and root."""
    ctx = _context(recipe, root, key)
    args = dedupe_args([t for t in build_args(ctx, key) if t])
    return _role_command(recipe, key, args, build_env(ctx, key))


# ---------------------------------------------------------------- whole selections


class Renderer:
    """Renders selections of one recipe, memoising by the inputs each part depends on.

    A role command is cached by its :class:`RoleInputs`; underneath, the arguments
    before the features and the env are cached by the key without its features,
    and the feature args by (variant, hardware, strategy, KV, features), so a PD
    pool or a feature subset shared by many selections is computed once.
    ``role(key)`` always equals :func:`render_role` for the same key.
    """

    def __init__(self, recipe: Recipe, root: RecipesRoot, *, memoise: bool = True) -> None:
        self.recipe = recipe
        self.root = root
        self.memoise = memoise
        self._memo: dict[RoleInputs, RoleCommand] = {}
        self._contexts: dict[tuple[str, str, str, str | None], _Context] = {}
        self._prefix: dict[RoleInputs, tuple[RenderedPart, RenderedPart, dict[str, EnvValue]]] = {}
        self._features: dict[tuple[object, ...], RenderedPart] = {}
        #: the part of each distinct token run (:meth:`_part`)
        self._parts: dict[tuple[str, ...], RenderedPart] = {}
        #: allowed feature names per context (same key as the contexts)
        self._allowed: dict[tuple[str, str, str, str | None], frozenset[str]] = {}

    def _context(self, key: RoleInputs) -> _Context:
        ident = (key.variant, key.hardware, key.strategy, key.kv_offload)
        found = self._contexts.get(ident)
        if found is None:
            found = _context(self.recipe, self.root, key)
            self._contexts[ident] = found
        return found

    def allowed_features(self, key: RoleInputs) -> frozenset[str]:
        """The features whose args ``key``'s deployment renders (strategy and KV gates)."""
        ident = (key.variant, key.hardware, key.strategy, key.kv_offload)
        allowed = self._allowed.get(ident)
        if allowed is None:
            allowed = self._allowed[ident] = frozenset(_allowed_features(self._context(key)))
        return allowed

    def role(self, key: RoleInputs) -> RoleCommand:
        if not self.memoise:
            return render_role(self.recipe, self.root, key)
        found = self._memo.get(key)
        if found is not None:
            return found
        prefix, kv_args, env = self.parts(key)
        args = dedupe_units(join_units((prefix, self.feature_part(key), kv_args)))
        found = _role_command(self.recipe, key, args, dict(env))
        self._memo[key] = found
        return found

    def parts(self, key: RoleInputs) -> tuple[RenderedPart, RenderedPart, dict[str, EnvValue]]:
        """The args before the features, the KV args after them, and the env of ``key``'s
        role: none of them depends on ``key.features`` or ``key.feature_modes``."""
        prefix_key = (
            key._replace(features=(), feature_modes=())
            if key.features or key.feature_modes
            else key
        )
        parts = self._prefix.get(prefix_key)
        if parts is None:
            ctx = self._context(key)
            parts = (
                self._part(build_prefix_args(ctx, key)),
                self._part(build_kv_args(ctx, key)),
                build_env(ctx, key),
            )
            self._prefix[prefix_key] = parts
        return parts

    def _part(self, tokens: Sequence[str]) -> RenderedPart:
        """``RenderedPart.of(tokens)``, split once per distinct run of tokens: a PD
        strategy's pools render a few distinct prefixes and KV runs many times each
        (thousands of pools, some tens of runs on recipes #828)."""
        run = tuple(tokens)
        found = self._parts.get(run)
        if found is None:
            found = self._parts[run] = RenderedPart.of(run)
        return found

    def feature_part(self, key: RoleInputs) -> RenderedPart:
        """The feature args of ``key`` (the same for every role of a deployment).

        They depend on the strategy and the KV choice only through which features
        these allow, so deployments that allow the same features share one part.
        """
        allowed = self.allowed_features(key)
        features = tuple(f for f in key.features if f in allowed)
        modes = (
            tuple((f, m) for f, m in key.feature_modes if f in allowed) if key.feature_modes else ()
        )
        feature_key = (key.variant, key.hardware, features, modes)
        found = self._features.get(feature_key)
        if found is None:
            ctx = self._context(key)
            found = RenderedPart.of(
                _feature_args(ctx, key._replace(features=features, feature_modes=modes))
            )
            self._features[feature_key] = found
        return found

    def render(self, selection: Selection, advanced_args: Sequence[str] = ()) -> RenderResult:
        if recipe_is_omni(self.recipe):
            return render_omni(self.recipe, self.root, selection)
        keys = role_inputs(self.recipe, self.root, selection, advanced_args)
        roles = tuple(self.role(k) for k in keys)
        deploy_type = result_deploy_type(self.root, selection)
        if roles and roles[0].argv:
            model_id = roles[0].argv[2]
        else:
            model_id = model_id_of(self.recipe, selection.variant)
        return RenderResult(deploy_type=deploy_type, model_id=model_id, roles=roles)


def result_deploy_type(root: RecipesRoot, selection: Selection) -> DeployType:
    strategy = strategy_of(root, selection.strategy or "")
    deploy_type: DeployType = (
        strategy.deploy_type if strategy is not None else None
    ) or "single_node"
    kv = selection.kv_offload
    if kv and kv in root.kv_store and deploy_type != "pd_cluster":
        return "kv_store_lb"
    return deploy_type


def shape_role_inputs(
    recipe: Recipe,
    root: RecipesRoot,
    shape: Selection,
    features: tuple[str, ...] = (),
    feature_modes: tuple[tuple[str, str], ...] = (),
    advanced_args: tuple[str, ...] = (),
) -> list[RoleInputs]:
    """The role inputs of a non-PD selection (``features`` is used, ``shape.features`` is not)."""
    strategy = strategy_of(root, shape.strategy or "")
    deploy_type = strategy.deploy_type if strategy is not None else None
    kv = shape.kv_offload or None
    node_count = shape.node_count or 1
    multi = deploy_type == "multi_node" and node_count > 1

    def key(role: Role, rank: int, instances: tuple[int, int] | None) -> RoleInputs:
        return RoleInputs(
            shape.variant,
            shape.hardware,
            shape.strategy or "",
            role,
            node_count,
            rank,
            None,
            kv,
            instances,
            features,
            feature_modes,
            advanced_args,
        )

    if kv and kv in root.kv_store:
        store = root.kv_store[kv]
        count = shape.kv_instances or store.default_instances or 2
        keys = []
        for instance in range(count):
            instances = (count, instance)
            keys.append(key("instance", 0, instances))
            if multi:
                keys.extend(
                    key("instance_worker", rank, instances) for rank in range(1, node_count)
                )
        return keys
    if multi:
        return [key("head", 0, None)] + [key("worker", rank, None) for rank in range(1, node_count)]
    return [key("serve", 0, None)]


def pool_role_inputs(
    shape: Selection,
    role: Role,
    pool: PdPool,
    features: tuple[str, ...] = (),
    feature_modes: tuple[tuple[str, str], ...] = (),
    advanced_args: tuple[str, ...] = (),
) -> list[RoleInputs]:
    """The role inputs of one PD pool (one per node); they do not depend on the other pool."""
    return [
        RoleInputs(
            shape.variant,
            shape.hardware,
            shape.strategy or "",
            role,
            1,
            0,
            PoolKey(pool.nodes, rank, pool.parallelism),
            shape.kv_offload or None,
            None,
            features,
            feature_modes,
            advanced_args,
        )
        for rank in range(pool.nodes)
    ]


def role_inputs(
    recipe: Recipe,
    root: RecipesRoot,
    selection: Selection,
    advanced_args: Sequence[str] = (),
) -> list[RoleInputs]:
    """The role inputs of every process a selection deploys, in the oracle's role order."""
    if selection.strategy is None:
        raise UsageError("a non-omni selection needs a strategy")
    strategy = strategy_of(root, selection.strategy)
    deploy_type = strategy.deploy_type if strategy is not None else None
    modes = tuple(sorted((f, m) for f, m in selection.feature_modes.items() if m is not None))
    features = tuple(selection.features)
    advanced = tuple(advanced_args)
    if deploy_type == "pd_cluster":
        if selection.pd is None:
            raise UsageError("a pd_cluster selection needs prefill and decode pools")
        return [
            *pool_role_inputs(
                selection, "prefill", selection.pd.prefill, features, modes, advanced
            ),
            *pool_role_inputs(selection, "decode", selection.pd.decode, features, modes, advanced),
        ]
    return shape_role_inputs(recipe, root, selection, features, modes, advanced)


def render(
    recipe: Recipe,
    root: RecipesRoot,
    selection: Selection,
    advanced_args: Sequence[str] = (),
) -> RenderResult:
    """Render one selection without memoisation (see :class:`Renderer` for bulk renders)."""
    return Renderer(recipe, root, memoise=False).render(selection, advanced_args)


# ---------------------------------------------------------------- omni recipes


def render_omni(recipe: Recipe, root: RecipesRoot, selection: Selection) -> RenderResult:
    """``vllm serve <model> … --omni`` (spec §5.4); the builder gives it no argv form."""
    spec = recipe.spec
    hw = hardware_view(root.taxonomy, selection.hardware)
    task = None
    if selection.omni_task is not None:
        for candidate in omni_tasks(recipe, selection.hardware):
            if candidate.key == selection.omni_task:
                task = candidate
                break
    omni = spec.omni
    binary = (omni.serve_binary if omni is not None else None) or "vllm serve"
    variant = variant_of(spec, selection.variant)
    model = spec.model
    if task is None:
        model_id = variant.model_id or (model.model_id if model is not None else None) or "model"
        role = RoleCommand(role="serve", argv=None, command=f"{binary} {model_id} --omni")
        return RenderResult(deploy_type="omni", model_id=model_id, roles=(role,))
    model_id = (
        task.model_id
        or variant.model_id
        or (model.model_id if model is not None else None)
        or "unknown"
    )
    not_default = selection.variant != "default"
    env: dict[str, EnvValue] = {}
    if model is not None and model.base_env:
        env.update(model.base_env)
    if not_default and variant.extra_env:
        env.update(variant.extra_env)
    recipe_gen = generation_block(spec.hardware_overrides, hw)
    variant_gen = generation_block(variant.hardware_overrides, hw)
    variant_exact = (variant.hardware_overrides or {}).get(hw.id)
    for block in (recipe_gen, variant_gen, variant_exact):
        if block is not None and block.extra_env:
            env.update(block.extra_env)
    args: list[str] = []
    if model is not None and model.base_args:
        args += model.base_args
    if not_default and variant.extra_args:
        args += variant.extra_args
    args += task.extra_args
    for block_args in (recipe_gen, variant_gen, variant_exact):
        if block_args is not None and block_args.extra_args:
            args += block_args.extra_args
    if omni is not None and omni.port:
        args += ["--port", str(omni.port)]
    args.append("--omni")
    command = format_command(binary, model_id, dedupe_args([a for a in args if a]))
    role = RoleCommand(role="serve", argv=None, env=env, command=command)
    return RenderResult(deploy_type="omni", model_id=model_id, roles=(role,))


def env_items(env: Mapping[str, EnvValue]) -> tuple[tuple[str, EnvValue], ...]:
    """Env as an ordered, hashable tuple (for memo keys and digests)."""
    return tuple(env.items())
