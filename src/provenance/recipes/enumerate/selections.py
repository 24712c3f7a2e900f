"""The selectable cross-product of a recipe, as the site's command builder offers it.

One :class:`~provenance.model.combination.Selection` is one deployment a user
can make the builder render (spec §2, the reference oracle's enumeration
rules): variant × hardware × (strategy, node count) or PD pool pair × KV
offload choice × feature subset × mode of each enabled modes-feature.
Free-form numbers are sampled the way the oracle samples them (PD pool sizes
from ``pd_nodes``, Mooncake instance counts from ``kv_instances``).

Why one module (about 720 lines): one concept, the builder's selection rules.
``_Builder`` restates the site's component (which choices the UI offers for a
recipe); the selection-by-selection enumeration and the cells the factored audit
walks (:func:`enumerate_cells`) are two orders over those same rules, and
``tests/audit/test_factored.py`` proves them equal, which is easiest to review
with both in one file.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, ConfigDict, field_validator

from provenance.errors import InputError, UsageError
from provenance.model.combination import PdPool, PdSelection, Selection
from provenance.recipes.enumerate.hardware import HardwareView, hardware_view
from provenance.recipes.enumerate.rules import (
    MAX_NODES,
    effective_compatible_strategies,
    feature_allowed_for_strategy,
    fits_single_node,
    hardware_supported,
    kv_offload_allowed_for_strategy,
    kv_offload_brand_supported,
    kv_offload_supported_for_recipe,
    kv_store_brand_supported,
    list_compatible_hardware,
    mode_candidates,
    nodes_for_strategy,
    omni_tasks,
    pd_pool_modes,
    recipe_is_omni,
    recommend_strategy,
    resolve_mode_key,
    some_variant_runs,
    strategy_exists,
    strategy_reachable,
    strategy_supported_on_hardware,
    variant_of,
    variant_runs_on_hardware,
)
from provenance.recipes.load.loader import Recipe, RecipesRoot

FeaturesMode = Literal["all", "default", "none"]
PdPairing = Literal["joint", "star"]
#: Mutually exclusive feature pills (hard-coded in the builder's toggle handler).
MUTEX_FEATURES = (("text_only", "encoder_parallel"),)


class PdNodesSpec(BaseModel):
    """Pool sizes to try per role: explicit numbers and/or the builder's default."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    numbers: tuple[int, ...]
    with_default: bool

    @classmethod
    def parse(cls, text: str | None) -> PdNodesSpec:
        tokens = [t.strip() for t in (text or "").split(",") if t.strip()] or [
            "1",
            "2",
            "default",
        ]
        if tokens == ["all"]:
            return cls(numbers=tuple(range(1, MAX_NODES + 1)), with_default=True)
        numbers: list[int] = []
        with_default = False
        for token in tokens:
            if token == "default":  # noqa: S105 - a keyword, not a secret
                with_default = True
                continue
            try:
                value = int(token)
            except ValueError:
                value = 0
            if not 1 <= value <= MAX_NODES:
                raise UsageError(
                    f"--pd-nodes: {token!r} is not an integer in 1..16, 'default' or 'all'"
                )
            numbers.append(value)
        return cls(numbers=tuple(numbers), with_default=with_default)


class EnumerationOptions(BaseModel):
    """Filters and sampling knobs of the enumeration (the oracle's options)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    variants: tuple[str, ...] | None = None
    hardware: tuple[str, ...] | None = None
    strategies: tuple[str, ...] | None = None
    features: FeaturesMode = "all"
    #: render exactly this ordered feature list (every mode combination of it)
    features_exact: tuple[str, ...] | None = None
    pd_nodes: str = "1,2,default"
    pd_pairing: PdPairing = "joint"
    #: ``off``, ``all`` or a list of kv_offload option / kv_store ids (with the
    #: combinations without KV offload); ``only:`` and a list: those ids, without them
    kv: str = "off"
    #: Mooncake instance counts; None = each topology's default
    kv_instances: tuple[int, ...] | None = None

    @field_validator("kv_instances")
    @classmethod
    def _instances_in_range(cls, value: tuple[int, ...] | None) -> tuple[int, ...] | None:
        if value is not None:
            for count in value:
                if not 1 <= count <= MAX_NODES:
                    raise ValueError(f"kv instance count {count} is not in 1..16")
        return value

    def kv_filter(self) -> tuple[str, ...] | None:
        if self.kv == "off":
            return ("",)
        if self.kv == "all":
            return None
        if self.kv.startswith("only:"):
            return tuple(t.strip() for t in self.kv[5:].split(",") if t.strip())
        return ("", *(t.strip() for t in self.kv.split(",") if t.strip()))


@dataclass(frozen=True)
class UiFacts:
    """The oracle's ``ui`` object for one selection (builder state, not output)."""

    strategy_pill: str | None
    recommended_strategy: bool | None
    default_features: bool | None
    fits_single_node: bool | None
    single_node_shortfall: bool | None
    pd_default_pools: bool | None


@dataclass(frozen=True)
class EnumeratedSelection:
    selection: Selection
    #: modes handed to ``resolveCommand`` (the user's picks); effective ones are in selection.
    picked_modes: tuple[tuple[str, str], ...]
    ui: UiFacts


class _Builder:
    """The builder's selection rules for one recipe (restated from the site's component)."""

    def __init__(self, recipe: Recipe, root: RecipesRoot) -> None:
        self.recipe = recipe
        self.root = root
        self.spec = recipe.spec
        self.profiles = root.taxonomy.hardware_profiles
        self.compatible = effective_compatible_strategies(self.spec)
        self.supports_multi_node = any(
            s.startswith("multi_node_") or s == "pd_cluster" for s in self.compatible
        )
        self._hw: dict[str, HardwareView] = {}
        self.feature_memo: dict[tuple[object, ...], tuple[FeaturePick, ...]] = {}

    def hw(self, hardware_id: str) -> HardwareView:
        found = self._hw.get(hardware_id)
        if found is None:
            found = hardware_view(self.root.taxonomy, hardware_id)
            self._hw[hardware_id] = found
        return found

    def deploy_type(self, name: str) -> str | None:
        return self.root.deploy_type(name)

    # ---- hardware and variants
    def visible_hardware(self) -> list[str]:
        declared = (self.spec.meta.hardware if self.spec.meta is not None else None) or {}
        return [
            hid
            for hid, profile in self.profiles.items()
            if not profile.restricted or hid in declared
        ]

    def hardware_for_variant(self, variant_key: str, *, omni: bool = False) -> list[str]:
        variant = variant_of(self.spec, variant_key)
        visible = set(self.visible_hardware())
        ids = [h for h in list_compatible_hardware(self.root, self.spec, variant) if h in visible]
        if omni:
            return [h for h in ids if variant_runs_on_hardware(self.root, self.hw(h), variant)]
        return [h for h in ids if some_variant_runs(self.root, self.spec, self.hw(h))]

    def variant_selectable(self, variant_key: str) -> bool:
        variant = variant_of(self.spec, variant_key)
        return any(
            hardware_supported(self.spec, hid)
            and variant_runs_on_hardware(self.root, self.hw(hid), variant)
            for hid in self.profiles
        )

    # ---- nodes and strategies
    def node_options(self, hardware_id: str) -> list[int]:
        per_node = self.hw(hardware_id).gpus_per_node_ui
        needed = max(
            [0] + [nodes_for_strategy(self.spec, s, per_node, hardware_id) for s in self.compatible]
        )
        return [1, 2, needed] if 2 < needed <= MAX_NODES else [1, 2]

    def selectable_node_counts(self, hardware_id: str) -> list[int]:
        hw = self.hw(hardware_id)
        multi_ok = self.supports_multi_node and hw.scalable and hw.raw_generation != "xpu"
        return [n for n in self.node_options(hardware_id) if n == 1 or multi_ok]

    def compatible_at(self, hardware_id: str, node_count: int) -> list[str]:
        per_node = self.hw(hardware_id).gpus_per_node_ui
        out = []
        for name in self.compatible:
            if not strategy_exists(self.root, name):
                continue
            deploy = self.deploy_type(name)
            if deploy == "kv_store_lb":
                continue
            if node_count == 1 and deploy == "multi_node":
                continue
            if node_count > 1 and deploy == "single_node":
                continue
            if strategy_reachable(self.spec, name, deploy, per_node, hardware_id):
                out.append(name)
        return out

    def supported(self, strategy: str, hardware_id: str) -> bool:
        return strategy_supported_on_hardware(self.spec, strategy, self.hw(hardware_id))

    def recommended(self, hardware_id: str, node_count: int) -> str:
        compatible = self.compatible_at(hardware_id, node_count)
        rec = recommend_strategy(self.spec, node_count)
        if rec in compatible and self.supported(rec, hardware_id):
            return rec
        for name in compatible:
            if self.supported(name, hardware_id):
                return name
        return compatible[0] if compatible else rec

    def strategy_choices(self, hardware_id: str, node_count: int) -> list[tuple[str, str]]:
        compatible = self.compatible_at(hardware_id, node_count)
        enabled = [s for s in compatible if self.supported(s, hardware_id)]
        if enabled:
            return [(s, "enabled") for s in enabled]
        return [(self.recommended(hardware_id, node_count), "fallback")]

    def effective_node_count(self, hardware_id: str, strategy: str, node_count: int) -> int:
        hw = self.hw(hardware_id)
        if not hw.scalable or strategy == "pd_cluster":
            return node_count
        needed = nodes_for_strategy(self.spec, strategy, hw.gpus_per_node_ui, hardware_id)
        if node_count < needed <= MAX_NODES:
            return needed
        return node_count

    # ---- PD pools
    def pd_available_modes(self, hardware_id: str) -> list[str]:
        per_node = self.hw(hardware_id).gpus_per_node_ui
        return [
            m
            for m in pd_pool_modes(self.spec)
            if strategy_reachable(self.spec, m, "multi_node", per_node, hardware_id)
        ]

    def pd_default_parallelism(self, role: str) -> str:
        override = (self.spec.strategy_overrides or {}).get("pd_cluster")
        role_override = getattr(override, role, None) if override is not None else None
        strategy = self.root.strategies.get("pd_cluster")
        strategy_role = getattr(strategy, role, None) if strategy is not None else None
        modes = pd_pool_modes(self.spec)
        wanted = (
            (role_override.parallelism if role_override is not None else None)
            or (strategy_role.parallelism if strategy_role is not None else None)
            or "tp"
        )
        return wanted if wanted in modes else modes[0]

    def pd_effective_parallelism(self, hardware_id: str, parallelism: str) -> str:
        available = self.pd_available_modes(hardware_id)
        if parallelism in available:
            return parallelism
        return available[0] if available else "tp"

    def pd_default_nodes(self, variant_key: str, hardware_id: str, role: str) -> int:
        override = (self.spec.strategy_overrides or {}).get("pd_cluster")
        role_override = getattr(override, role, None) if override is not None else None
        variant = variant_of(self.spec, variant_key)
        node_vram = self.hw(hardware_id).vram_gb
        model_vram = variant.vram_minimum_gb or 0
        minimum = 1
        if model_vram > 0 and node_vram > 0:
            minimum = max(1, math.ceil(model_vram / node_vram))
        nodes = role_override.nodes if role_override is not None else None
        if isinstance(nodes, int):
            return nodes
        if isinstance(nodes, dict):
            exact = nodes.get(hardware_id)
            if isinstance(exact, int):
                return exact
            fallback = nodes.get("default")
            if isinstance(fallback, int):
                return fallback
        return int(minimum)

    def pd_effective_nodes(self, hardware_id: str, mode: str, typed: int) -> int:
        clamped = max(1, min(MAX_NODES, typed))
        per_node = self.hw(hardware_id).gpus_per_node_ui
        return max(clamped, nodes_for_strategy(self.spec, mode, per_node, hardware_id))

    # ---- features
    def feature_keys(self) -> list[str]:
        return list(self.spec.features or {})

    def default_features(self, hardware_id: str, variant_key: str) -> list[str]:
        opt_in = set(self.spec.opt_in_features or [])
        opt_in.update((self.spec.hardware_opt_in_features or {}).get(hardware_id) or [])
        variant = (self.spec.variants or {}).get(variant_key)
        forced = set((variant.default_modes or {}) if variant is not None else {})
        return [f for f in self.feature_keys() if f in forced or f not in opt_in]

    def allowed_features(self, strategy: str, kv_instances_active: bool) -> list[str]:
        features = self.spec.features or {}
        out = []
        for key, feature in features.items():
            blocked = (
                kv_instances_active
                and feature.companion is not None
                and bool(feature.companion.command)
            )
            if feature_allowed_for_strategy(feature, strategy) and not blocked:
                out.append(key)
        return out

    @staticmethod
    def subset_reachable(subset: Sequence[str], defaults: Sequence[str]) -> bool:
        for first, second in MUTEX_FEATURES:
            if (
                first in subset
                and second in subset
                and not (first in defaults and second in defaults)
            ):
                return False
        return True

    def mode_choices(
        self, feature_key: str, variant_key: str, hardware_id: str
    ) -> list[str] | None:
        feature = (self.spec.features or {}).get(feature_key)
        if feature is None or feature.modes is None:
            return None
        return mode_candidates(feature, variant_key, self.hw(hardware_id))

    def effective_mode(
        self, feature_key: str, variant_key: str, hardware_id: str, selected: str | None
    ) -> str | None:
        feature = (self.spec.features or {}).get(feature_key)
        if feature is None or feature.modes is None:
            return None
        return resolve_mode_key(
            feature,
            feature_key,
            variant_of(self.spec, variant_key),
            variant_key,
            self.hw(hardware_id),
            selected,
        )

    # ---- KV offload
    def kv_store_ids(self) -> list[str]:
        stores = self.root.kv_store
        return sorted(
            stores,
            key=lambda name: (
                stores[name].order if stores[name].order is not None else 99,
                name,
            ),
        )

    def kv_choices(self, hardware_id: str, strategy: str) -> list[str]:
        hw = self.hw(hardware_id)
        out = [""]
        if hw.raw_generation == "xpu":
            return out
        deploy = self.deploy_type(strategy)
        for key, option in (self.root.taxonomy.kv_offload or {}).items():
            if (
                kv_offload_allowed_for_strategy(option, strategy, deploy)
                and kv_offload_supported_for_recipe(option, key, self.spec)
                and kv_offload_brand_supported(option, hw)
            ):
                out.append(key)
        if hw.scalable and kv_store_brand_supported(hw):
            gates = self.spec.kv_cache_strategy_hardware or {}
            for name in self.kv_store_ids():
                if (gates.get(name) or {}).get(hardware_id) != "unsupported":
                    out.append(name)
        return out


#: Most feature subsets × modes one variant × hardware × strategy may offer. Real
#: recipes offer tens; a hostile recipe with 26 opt-in features would offer 2^26 and
#: exhaust memory before the first combination is audited.
MAX_FEATURE_CHOICES = 65_536


def _too_many_feature_choices(b: _Builder, count: str) -> InputError:
    return InputError(
        f"the features give {count} feature combinations for one variant, hardware and "
        f"strategy (limit {MAX_FEATURE_CHOICES})",
        path=str(b.recipe.path),
        key_path="features",
    )


def _power_set(items: Sequence[str]) -> list[tuple[str, ...]]:
    subsets: list[tuple[str, ...]] = []
    for size in range(len(items) + 1):
        subsets.extend(itertools.combinations(items, size))
    return subsets


@dataclass(frozen=True, slots=True)
class FeaturePick:
    """One way to set the feature pills: the enabled features, the modes the user picked
    and the effective mode of each modes-feature."""

    features: tuple[str, ...]
    picked: tuple[tuple[str, str], ...]
    effective: dict[str, str | None]
    is_default: bool

    def __hash__(self) -> int:
        # ``effective`` and ``is_default`` follow from the features and picked modes
        return hash((self.features, self.picked))


def _feature_choices(
    b: _Builder,
    options: EnumerationOptions,
    variant_key: str,
    hardware_id: str,
    strategy: str,
    kv_instances_active: bool,
) -> tuple[FeaturePick, ...]:
    """Every feature pick offered; the strategy and KV choice matter only through the
    features they allow, so picks are shared by the shapes that allow the same ones."""
    allowed = b.allowed_features(strategy, kv_instances_active)
    memo_key = (variant_key, hardware_id, tuple(allowed), options)
    found = b.feature_memo.get(memo_key)
    if found is None:
        found = b.feature_memo[memo_key] = tuple(
            _feature_picks(b, options, variant_key, hardware_id, allowed)
        )
    return found


def _feature_picks(
    b: _Builder,
    options: EnumerationOptions,
    variant_key: str,
    hardware_id: str,
    allowed: list[str],
) -> list[FeaturePick]:
    defaults = b.default_features(hardware_id, variant_key)
    features = b.spec.features or {}
    subsets: list[tuple[str, ...]]
    if options.features_exact is not None:
        subsets = [tuple(f for f in options.features_exact if f in features)]
    elif options.features == "default":
        subsets = [tuple(f for f in defaults if f in allowed)]
    elif options.features == "none":
        subsets = [()]
    else:
        if 2 ** len(allowed) > MAX_FEATURE_CHOICES:
            raise _too_many_feature_choices(b, f"2^{len(allowed)}")
        subsets = [s for s in _power_set(allowed) if b.subset_reachable(s, defaults)]
    default_set = [f for f in defaults if f in allowed]
    only_default_modes = options.features == "default" and options.features_exact is None
    out: list[FeaturePick] = []
    for subset in subsets:
        mode_features = [
            f for f in subset if b.mode_choices(f, variant_key, hardware_id) is not None
        ]
        choice_lists: list[list[str | None]] = []
        for name in mode_features:
            if only_default_modes:
                choice_lists.append([b.effective_mode(name, variant_key, hardware_id, None)])
                continue
            candidates: list[str | None] = list(
                b.mode_choices(name, variant_key, hardware_id) or []
            )
            choice_lists.append(candidates or [None])
        for combo in itertools.product(*choice_lists):
            picked = tuple(
                (name, mode) for name, mode in zip(mode_features, combo, strict=True) if mode
            )
            picked_map = dict(picked)
            effective = {
                name: b.effective_mode(name, variant_key, hardware_id, picked_map.get(name))
                for name in mode_features
            }
            is_default = (
                options.features_exact is None
                and len(subset) == len(default_set)
                and all(f in defaults for f in subset)
                and all(
                    effective[f] == b.effective_mode(f, variant_key, hardware_id, None)
                    for f in mode_features
                )
            )
            out.append(FeaturePick(subset, picked, effective, is_default))
            if len(out) > MAX_FEATURE_CHOICES:
                raise _too_many_feature_choices(b, "more")
    return out


def _pd_pool_pairs(
    b: _Builder, options: EnumerationOptions, variant_key: str, hardware_id: str
) -> list[tuple[PdPool, PdPool, bool]]:
    spec = PdNodesSpec.parse(options.pd_nodes)
    modes = b.pd_available_modes(hardware_id) or ["tp"]
    per_role: dict[str, list[PdPool]] = {}
    defaults: dict[str, PdPool] = {}
    for role in ("prefill", "decode"):
        default_mode = b.pd_effective_parallelism(hardware_id, b.pd_default_parallelism(role))
        typed_default = b.pd_default_nodes(variant_key, hardware_id, role)
        defaults[role] = PdPool(
            nodes=b.pd_effective_nodes(hardware_id, default_mode, typed_default),
            parallelism=default_mode,
        )
        typed = sorted(set(spec.numbers) | ({typed_default} if spec.with_default else set()))
        seen: set[tuple[str, int]] = set()
        pools: list[PdPool] = []
        for mode in modes:
            for count in typed:
                nodes = b.pd_effective_nodes(hardware_id, mode, count)
                if (mode, nodes) in seen:
                    continue
                seen.add((mode, nodes))
                pools.append(PdPool(nodes=nodes, parallelism=mode))
        per_role[role] = pools
    dp, dd = defaults["prefill"], defaults["decode"]
    out: list[tuple[PdPool, PdPool, bool]] = []
    if options.pd_pairing == "star":
        seen_pairs: set[tuple[PdPool, PdPool]] = set()
        candidates = [(dp, dd)]
        candidates += [(dp, d) for d in per_role["decode"]]
        candidates += [(p, dd) for p in per_role["prefill"]]
        for p, d in candidates:
            if (p, d) in seen_pairs:
                continue
            seen_pairs.add((p, d))
            out.append((p, d, p == dp and d == dd))
        return out
    for p in per_role["prefill"]:
        for d in per_role["decode"]:
            out.append((p, d, p == dp and d == dd))
    return out


def _enumerate_omni(b: _Builder, options: EnumerationOptions) -> Iterator[EnumeratedSelection]:
    empty_ui = UiFacts(None, None, None, None, None, None)
    for variant_key in b.spec.variants or {}:
        if options.variants is not None and variant_key not in options.variants:
            continue
        for hardware_id in b.hardware_for_variant(variant_key, omni=True):
            if options.hardware is not None and hardware_id not in options.hardware:
                continue
            tasks = omni_tasks(b.recipe, hardware_id)
            keys: list[str | None] = [t.key for t in tasks] if tasks else [None]
            for task_key in keys:
                selection = Selection(
                    variant=variant_key,
                    hardware=hardware_id,
                    strategy=None,
                    node_count=1,
                    omni_task=task_key,
                )
                yield EnumeratedSelection(selection, (), empty_ui)


@dataclass(frozen=True)
class ShapeCell:
    """One deployment shape and every feature choice and PD pool pair offered with it.

    The selections of a cell are ``choices × pools`` (``choices`` alone without
    PD), enumerated feature choice first. Auditing by cell lets the audit
    render and judge each pool and each feature choice once instead of once per
    selection (a MiniMax-M3 cell has up to 72 feature choices × 81 pool pairs).
    """

    variant: str
    hardware: str
    strategy: str
    node_count: int | None
    kv_offload: str | None
    kv_instances: int | None
    choices: tuple[FeaturePick, ...]
    #: (prefill pool, decode pool, is the builder's default pair), or None without PD
    pools: tuple[tuple[PdPool, PdPool, bool], ...] | None
    strategy_pill: str
    recommended_strategy: bool
    fits_single_node: bool
    single_shape: bool

    def selection(self, choice: FeaturePick, pd: PdSelection | None) -> Selection:
        return Selection(
            variant=self.variant,
            hardware=self.hardware,
            strategy=self.strategy,
            node_count=self.node_count,
            pd=pd,
            kv_offload=self.kv_offload,
            kv_instances=self.kv_instances,
            features=choice.features,
            feature_modes=choice.effective,
        )


#: Most combinations one audit (or ``combos``) may walk: the cells' feature choices ×
#: PD pool pairs, counted before the first is rendered. The largest real recipe,
#: MiniMax-M3, offers 71,208 (230,184 with ``--kv all``); a recipes PR that multiplies
#: its choices past this is an input error naming its ``variants`` line — audit a part
#: of it (``--variant``, ``--hardware``, ``--strategy``, ``--features``), or raise this
#: constant (docs/security.md, "Faults and limits").
MAX_COMBINATIONS = 2_000_000


def enumerate_cells(
    recipe: Recipe, root: RecipesRoot, options: EnumerationOptions
) -> Iterator[ShapeCell]:
    """Every deployment shape of a (non-omni) recipe, in the order of :func:`enumerate_with_ui`.

    The cells are listed (cheap: feature choices are shared) and their combinations
    counted before the first is yielded; over :data:`MAX_COMBINATIONS` is an InputError.
    """
    cells = list(_cells(recipe, root, options))
    total = sum(len(c.choices) * (1 if c.pools is None else len(c.pools)) for c in cells)
    if total > MAX_COMBINATIONS:
        raise InputError(
            f"the recipe offers {total} combinations, over the limit of {MAX_COMBINATIONS} "
            "(selections.MAX_COMBINATIONS); audit a part of it with --variant, --hardware, "
            "--strategy or --features",
            location=recipe.location(("variants",)),
        )
    yield from cells


def _cells(recipe: Recipe, root: RecipesRoot, options: EnumerationOptions) -> Iterator[ShapeCell]:
    b = _Builder(recipe, root)
    kv_filter = options.kv_filter()
    for variant_key in b.spec.variants or {}:
        if options.variants is not None and variant_key not in options.variants:
            continue
        if variant_key != "default" and not b.variant_selectable(variant_key):
            continue
        variant = variant_of(b.spec, variant_key)
        for hardware_id in b.hardware_for_variant(variant_key):
            if options.hardware is not None and hardware_id not in options.hardware:
                continue
            fits = fits_single_node(b.hw(hardware_id), variant)
            pairs: list[tuple[str, int | None, str, bool]] = []
            seen: set[tuple[str, int | None]] = set()
            for count in b.selectable_node_counts(hardware_id):
                recommended_here = b.recommended(hardware_id, count)
                for strategy, pill in b.strategy_choices(hardware_id, count):
                    if options.strategies is not None and strategy not in options.strategies:
                        continue
                    is_pd = b.deploy_type(strategy) == "pd_cluster"
                    effective = (
                        None if is_pd else b.effective_node_count(hardware_id, strategy, count)
                    )
                    if (strategy, effective) in seen:
                        continue
                    seen.add((strategy, effective))
                    pairs.append((strategy, effective, pill, strategy == recommended_here))
            for strategy, node_count, pill, recommended in pairs:
                deploy = b.deploy_type(strategy) or "single_node"
                single_shape = deploy != "pd_cluster" and not (
                    deploy == "multi_node" and (node_count or 1) > 1
                )
                kvs = b.kv_choices(hardware_id, strategy)
                if kv_filter is not None:
                    kvs = [k for k in kvs if k in kv_filter]
                pools = (
                    tuple(_pd_pool_pairs(b, options, variant_key, hardware_id))
                    if deploy == "pd_cluster"
                    else None
                )
                for kv in kvs:
                    is_store = bool(kv) and kv in root.kv_store
                    instances_active = is_store and strategy != "pd_cluster"
                    instance_counts: Sequence[int | None] = [None]
                    if instances_active:
                        store = root.kv_store[kv]
                        instance_counts = options.kv_instances or (store.default_instances or 2,)
                    choices = _feature_choices(
                        b, options, variant_key, hardware_id, strategy, instances_active
                    )
                    for instances in instance_counts:
                        yield ShapeCell(
                            variant=variant_key,
                            hardware=hardware_id,
                            strategy=strategy,
                            node_count=node_count,
                            kv_offload=kv or None,
                            kv_instances=instances if instances_active else None,
                            choices=choices,
                            pools=pools,
                            strategy_pill=pill,
                            recommended_strategy=recommended,
                            fits_single_node=fits,
                            single_shape=single_shape,
                        )


def enumerate_with_ui(
    recipe: Recipe, root: RecipesRoot, options: EnumerationOptions
) -> Iterator[EnumeratedSelection]:
    """Every reachable selection with the builder state facts the oracle reports."""
    if recipe_is_omni(recipe):
        yield from _enumerate_omni(_Builder(recipe, root), options)
        return
    for cell in enumerate_cells(recipe, root, options):
        pools: Sequence[tuple[PdSelection, bool] | None] = [None]
        if cell.pools is not None:
            pools = [
                (PdSelection(prefill=p, decode=d), is_default) for p, d, is_default in cell.pools
            ]
        for choice in cell.choices:
            for pool in pools:
                ui = UiFacts(
                    strategy_pill=cell.strategy_pill,
                    recommended_strategy=cell.recommended_strategy,
                    default_features=choice.is_default,
                    fits_single_node=cell.fits_single_node,
                    single_node_shortfall=cell.single_shape and not cell.fits_single_node,
                    pd_default_pools=pool[1] if pool is not None else None,
                )
                selection = cell.selection(choice, pool[0] if pool is not None else None)
                yield EnumeratedSelection(selection, choice.picked, ui)


def enumerate_selections(
    recipe: Recipe, root: RecipesRoot, options: EnumerationOptions
) -> Iterator[Selection]:
    """Every selection a user of the builder can reach (within the sampled free numbers)."""
    for item in enumerate_with_ui(recipe, root, options):
        yield item.selection
