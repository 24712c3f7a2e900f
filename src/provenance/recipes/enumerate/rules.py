"""The recipes builder's predicates, shared by enumeration and synthesis.

Each function restates one rule of the site's builder (spec §2–§3) over the
typed schema. JavaScript's ``||`` / ``??`` / truthiness are kept where the
builder uses them: a mapping that exists counts as present even when empty,
``0`` and ``""`` count as absent where the builder uses ``||``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import NamedTuple

from provenance.recipes.enumerate.hardware import HardwareView, hardware_view, keyed_value
from provenance.recipes.load.loader import Recipe, RecipesRoot
from provenance.recipes.load.schema import (
    Feature,
    FeatureMode,
    KvOffloadOption,
    PrecisionHardware,
    RecipeFile,
    Strategy,
    Variant,
)

#: Most nodes the builder offers for one deployment and per PD pool.
MAX_NODES = 16
POOL_MODES = ("tp", "tep", "dep")
_EMPTY_VARIANT = Variant()


def variant_of(spec: RecipeFile, key: str) -> Variant:
    """``variants[key]``, else ``variants.default``, else an empty variant (fail-open)."""
    variants = spec.variants or {}
    found = variants.get(key)
    if found is None:
        found = variants.get("default")
    return found if found is not None else _EMPTY_VARIANT


def strategy_of(root: RecipesRoot, name: str) -> Strategy | None:
    """The serving strategy called ``name`` (kv_store topologies are not serving strategies)."""
    if name in root.kv_store:
        return None
    return root.strategies.get(name)


def strategy_exists(root: RecipesRoot, name: str) -> bool:
    return name in root.strategies or name in root.kv_store


# ---------------------------------------------------------------- strategies and floors


def effective_compatible_strategies(spec: RecipeFile) -> list[str]:
    listed = list(spec.compatible_strategies or [])
    opt_ins = [
        name
        for name, gates in (spec.strategy_hardware or {}).items()
        if name not in listed and gates is not None and "supported" in gates.values()
    ]
    return listed + opt_ins


def strategy_supported_on_hardware(spec: RecipeFile, strategy: str, hw: HardwareView) -> bool:
    gates = (spec.strategy_hardware or {}).get(strategy)
    gate = keyed_value(gates, hw)
    if gate is not None:
        return gate != "unsupported"
    return strategy in (spec.compatible_strategies or [])


def _floor_from_block(block: int | Mapping[str, object] | None, key: str) -> float:
    if block is None:
        return 0
    if isinstance(block, int):
        return block
    for candidate in (key, f"multi_node_{key}", f"single_node_{key}"):
        value = block.get(candidate)
        if value is not None:
            return value if isinstance(value, int) else math.nan
    return 0


def min_gpus(spec: RecipeFile, key: str, hardware_id: str | None) -> float:
    """``strategy_min_gpus`` floor for a strategy id or pool mode (highest applicable wins)."""
    config = spec.strategy_min_gpus
    if config is None:
        return 0
    if isinstance(config, int):
        return config
    exact = config.get(hardware_id) if hardware_id else None
    base = _floor_from_block(config, key)
    extra = _floor_from_block(exact, key) if hardware_id else 0
    if math.isnan(base) or math.isnan(extra):
        return math.nan
    return max(base, extra)


def nodes_for_strategy(spec: RecipeFile, key: str, gpus_per_node: int, hardware_id: str) -> int:
    floor = min_gpus(spec, key, hardware_id)
    if math.isnan(floor):
        return 1
    return math.ceil(floor / (gpus_per_node or 8)) or 1


def strategy_reachable(
    spec: RecipeFile, key: str, deploy_type: str | None, gpus_per_node: int, hardware_id: str
) -> bool:
    scales_out = deploy_type in ("multi_node", "pd_cluster")
    max_nodes = MAX_NODES if scales_out else 1
    floor = min_gpus(spec, key, hardware_id)
    return bool(max_nodes * (gpus_per_node or 8) >= floor)


_DEP = re.compile(r"(?:^|_)dep$")
_TEP = re.compile(r"(?:^|_)tep$")
_TP = re.compile(r"(?:^|_)tp(?:_pp|_dp)?$")


def pd_pool_modes(spec: RecipeFile) -> list[str]:
    modes: set[str] = set()
    for name in effective_compatible_strategies(spec):
        if name == "pd_cluster":
            continue
        if _DEP.search(name):
            modes.add("dep")
        elif _TEP.search(name):
            modes.add("tep")
        elif _TP.search(name):
            modes.add("tp")
    if not modes:
        modes.add("tp")
    ordered = [m for m in POOL_MODES if m in modes]
    overrides = (spec.strategy_overrides or {}).get("pd_cluster")
    restrict = overrides.pool_modes if overrides is not None else None
    if restrict:
        narrowed = [m for m in ordered if m in restrict]
        if narrowed:
            ordered = narrowed
    return ordered


def recommend_strategy(spec: RecipeFile, node_count: int) -> str:
    compatible = effective_compatible_strategies(spec)
    explicit = spec.default_strategy
    if explicit and explicit in compatible:
        if node_count > 1 and explicit.startswith("single_node_"):
            sibling = "multi_node_" + explicit.removeprefix("single_node_")
            if sibling in compatible:
                return sibling
        else:
            return explicit
    if node_count > 1:
        for name in ("multi_node_tp", "multi_node_dep", "multi_node_tep"):
            if name in compatible:
                return name
    if "single_node_tp" in compatible:
        return "single_node_tp"
    return compatible[0] if compatible else "single_node_tp"


# ---------------------------------------------------------------- hardware / variant pairing

_PRECISION_CONSTRAINTS = {
    "nvfp4": PrecisionHardware(brand="NVIDIA", generation="blackwell"),
    "fp4": PrecisionHardware(brand="NVIDIA", generation="blackwell"),
}


def precision_constraint(variant: Variant) -> PrecisionHardware | None:
    if variant.precision_hardware is not None:
        return variant.precision_hardware
    return _PRECISION_CONSTRAINTS.get(variant.precision or "")


def _matches_constraint(root: RecipesRoot, hw: HardwareView, c: PrecisionHardware | None) -> bool:
    if c is None:
        return True
    if c.brand and hw.brand != c.brand:
        return False
    if c.generation:
        profile = root.taxonomy.hardware_profiles.get(hw.id)
        raw = (profile.generation or profile.gpu_generation) if profile is not None else None
        generations = raw if isinstance(raw, list) else [raw]
        if c.generation not in generations:
            return False
    return True


def precision_compatible(root: RecipesRoot, hw: HardwareView, variant: Variant) -> bool:
    return _matches_constraint(root, hw, precision_constraint(variant))


def hardware_supported(spec: RecipeFile, hardware_id: str) -> bool:
    declared = spec.meta.hardware if spec.meta is not None else None
    return (declared or {}).get(hardware_id) != "unsupported"


def variant_hardware_supported(variant: Variant, hardware_id: str) -> bool:
    allow = variant.supported_hardware
    return not allow or hardware_id in allow


def fits_single_node(hw: HardwareView, variant: Variant) -> bool:
    model_vram = variant.vram_minimum_gb or 0
    if model_vram <= 0 or hw.vram_gb <= 0:
        return True
    return model_vram <= hw.vram_gb


def variant_runs_on_hardware(root: RecipesRoot, hw: HardwareView, variant: Variant) -> bool:
    if not precision_compatible(root, hw, variant):
        return False
    if not variant_hardware_supported(variant, hw.id):
        return False
    if hw.scalable:
        return True
    return fits_single_node(hw, variant)


def some_variant_runs(root: RecipesRoot, spec: RecipeFile, hw: HardwareView) -> bool:
    """``pickFittingVariant(...) != null``."""
    return any(variant_runs_on_hardware(root, hw, v) for v in (spec.variants or {}).values())


def list_compatible_hardware(root: RecipesRoot, spec: RecipeFile, variant: Variant) -> list[str]:
    out = []
    for hardware_id in root.taxonomy.hardware_profiles:
        hw = hardware_view(root.taxonomy, hardware_id)
        if (
            precision_compatible(root, hw, variant)
            and hardware_supported(spec, hardware_id)
            and variant_hardware_supported(variant, hardware_id)
        ):
            out.append(hardware_id)
    return out


# ---------------------------------------------------------------- features and modes


def feature_allowed_for_strategy(feature: Feature, strategy: str) -> bool:
    allow = feature.strategies
    return not allow or strategy in allow


def mode_allowed_for_variant(mode: FeatureMode, variant_key: str) -> bool:
    allow = mode.variants
    return not allow or variant_key in allow


def mode_supported(mode: FeatureMode, hw: HardwareView) -> bool:
    gates = mode.hardware
    if gates is None:
        return True
    if hw.generation and gates.get(hw.generation) == "unsupported":
        return False
    return not (hw.id and gates.get(hw.id) == "unsupported")


def mode_candidates(feature: Feature, variant_key: str, hw: HardwareView) -> list[str]:
    modes = feature.modes or {}
    return [
        key
        for key, mode in modes.items()
        if mode_allowed_for_variant(mode, variant_key) and mode_supported(mode, hw)
    ]


def resolve_mode_key(
    feature: Feature,
    feature_key: str,
    variant: Variant,
    variant_key: str,
    hw: HardwareView,
    selected: str | None,
) -> str | None:
    """The effective mode: the user's pick, the variant's default, the feature's, else the first."""
    if feature.modes is None:
        return None
    allowed = mode_candidates(feature, variant_key, hw)
    if not allowed:
        return None
    variant_default = (variant.default_modes or {}).get(feature_key)
    for candidate in (selected, variant_default, feature.default_mode):
        if candidate and candidate in allowed:
            return candidate
    return allowed[0]


# ---------------------------------------------------------------- KV offload


def kv_offload_allowed_for_strategy(
    option: KvOffloadOption, strategy: str, deploy_type: str | None
) -> bool:
    if deploy_type in ("pd_cluster", "kv_store_lb"):
        return False
    allow = option.strategies
    return not allow or strategy in allow


def kv_offload_supported_for_recipe(option: KvOffloadOption, key: str, spec: RecipeFile) -> bool:
    support = (spec.kv_offload_support or {}).get(key)
    if support == "unsupported":
        return False
    return support == "verified" if option.requires_opt_in else True


def kv_offload_brand_supported(option: KvOffloadOption, hw: HardwareView) -> bool:
    allow = option.brands
    return not allow or hw.brand in allow


def kv_store_brand_supported(hw: HardwareView) -> bool:
    return hw.brand in ("NVIDIA", "AMD")


def active_kv_option(
    root: RecipesRoot,
    spec: RecipeFile,
    key: str | None,
    strategy: str,
    deploy_type: str | None,
    hw: HardwareView,
) -> KvOffloadOption | None:
    """The composing ``taxonomy.kv_offload`` option behind all three gates, or None."""
    if not key:
        return None
    option = (root.taxonomy.kv_offload or {}).get(key)
    if option is None:
        return None
    if (
        kv_offload_allowed_for_strategy(option, strategy, deploy_type)
        and kv_offload_supported_for_recipe(option, key, spec)
        and kv_offload_brand_supported(option, hw)
    ):
        return option
    return None


# ---------------------------------------------------------------- single-node TP


def _positive_tp(raw: int | Mapping[str, int | None] | None, hw: HardwareView) -> int | None:
    value = raw if isinstance(raw, int) else keyed_value(raw, hw)
    if isinstance(value, int) and value > 0:
        return value
    return None


def resolve_single_node_tp(
    spec: RecipeFile, variant: Variant, hw: HardwareView, strategy: str
) -> int:
    """``single_node_tp`` TP: variant ``tp`` > override ``tp`` > binary VRAM auto-fit."""
    gpu_count = hw.gpu_count
    if strategy != "single_node_tp":
        return gpu_count
    is_cpu = hw.raw_generation == "cpu"
    declared = _positive_tp(variant.tp, hw)
    if declared is None:
        override = (spec.strategy_overrides or {}).get(strategy)
        declared = _positive_tp(override.tp if override is not None else None, hw)
    if declared is not None:
        return declared if is_cpu else min(declared, gpu_count)
    per_gpu = hw.per_gpu_vram
    vram_min = variant.vram_minimum_gb or 0
    if not vram_min or not per_gpu or per_gpu <= 0:
        return gpu_count
    return 1 if vram_min <= per_gpu else gpu_count


def recipe_is_omni(recipe: Recipe) -> bool:
    meta = recipe.spec.meta
    return meta is not None and "omni" in (meta.tasks or [])


#: Task ids of the builder's built-in vllm-omni catalogue.
OMNI_TASK_IDS = frozenset({"t2i", "i2i", "t2v", "i2v", "ti2v", "t2a"})


class OmniTaskView(NamedTuple):
    key: str
    model_id: str | None
    extra_args: tuple[str, ...]


def omni_tasks(recipe: Recipe, hardware_id: str | None) -> list[OmniTaskView]:
    """``omni.tasks`` resolved against the catalogue, with the exact-hardware override applied."""
    omni = recipe.spec.omni
    declared = omni.tasks if omni is not None else None
    out: list[OmniTaskView] = []
    for item in declared or []:
        if isinstance(item, str):
            task_id: str | None = item
            key, model_id, extra = item, None, tuple[str, ...]()
            overrides = None
        else:
            task_id = item.id
            key = item.key or item.id or ""
            model_id = item.model_id
            extra = tuple(item.extra_args or [])
            overrides = item.hardware_overrides
        if not task_id or task_id not in OMNI_TASK_IDS:
            continue
        override = (overrides or {}).get(hardware_id) if hardware_id else None
        if override is not None:
            model_id = override.model_id or model_id
            extra = (*extra, *(override.extra_args or []))
        out.append(OmniTaskView(key=key, model_id=model_id, extra_args=extra))
    return out
