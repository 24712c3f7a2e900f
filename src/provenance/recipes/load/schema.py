"""Typed shapes of a vllm-project/recipes checkout: taxonomy, strategies, kv_store, models.

Every model forbids unknown keys and validates strictly (no silent ``"8"`` →
``8`` coercion), so a misspelt or mistyped key is an :class:`InputError` that
names ``file:line (key.path)`` through :func:`provenance.safe_yaml.parse_model`.

Absent and ``null`` both become ``None``; an *empty* mapping stays an object.
The synthesis code relies on that distinction: the site's builder treats an
empty ``hopper: {}`` block as present (JavaScript truthiness), so a block that
exists must never be collapsed to ``None``.

Prose fields (``guide``, ``description``, notes …) are typed as text and never
interpreted. Keys are the ones every recipe, strategy and kv_store file uses at any
revision of vllm-project/recipes up to 8959cf6 (``tests/recipes/test_schema_history.py``
walks them all), plus the few the builder reads that no file uses yet
(``advanced_options``, ``kv_cache_strategy_hardware``, feature ``companion``, role
``parallel_flag`` …). A key the site's builder never reads for a command is accepted
where a revision the site accepted carries it, and ignored as the builder ignores it
(each says so below).
"""

from __future__ import annotations

import datetime as dt
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

#: An environment value as the YAML typed it (``PYTHONHASHSEED: 0`` stays an int).
EnvScalar = str | int | float | bool | None
EnvMap = dict[str, EnvScalar]
#: argv tokens must be strings: a number or boolean token crashes the builder.
ArgList = list[str]
#: A value keyed by exact hardware id, generation, brand or ``default``.
HardwareKeyedInt = int | dict[str, int | None]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


# --------------------------------------------------------------------------- taxonomy


class HardwareProfile(_Strict):
    brand: str | None = None
    generation: str | list[str] | None = None
    gpu_generation: str | list[str] | None = None
    display_name: str | None = None
    description: str | None = None
    gpu_count: int | None = None
    vram_gb: int | float | None = None
    multi_node: bool | None = None
    scalable: bool | None = None
    restricted: bool | None = None


class Companion(_Strict):
    label: str | None = None
    description: str | None = None
    command: str | None = None


class KvOffloadOption(_Strict):
    display_name: str | None = None
    label: str | None = None
    description: str | None = None
    group: str | None = None
    order: int | None = None
    requires_opt_in: bool | None = None
    brands: list[str] | None = None
    strategies: list[str] | None = None
    args: ArgList | None = None
    env: EnvMap | None = None
    install: str | None = None
    docs_url: str | None = None
    companion: Companion | None = None


class KvOffloadGroup(_Strict):
    display_name: str | None = None
    label: str | None = None
    description: str | None = None
    docs_url: str | None = None
    order: int | None = None
    sub_row_label: str | None = None
    tooltip: str | None = None


class TaxonomyTask(_Strict):
    id: str
    display_name: str | None = None
    description: str | None = None


class Taxonomy(_Strict):
    hardware_profiles: dict[str, HardwareProfile] = Field(default_factory=dict)
    tasks: list[TaxonomyTask] | None = None
    strategies: list[str] | None = None
    kv_offload_groups: dict[str, KvOffloadGroup] | None = None
    kv_offload: dict[str, KvOffloadOption] | None = None


# --------------------------------------------------------------------------- strategies


class HardwareMatch(_Strict):
    architecture: str | None = None
    min_gpus: int | None = None
    max_gpus: int | None = None
    multi_node: bool | None = None


class StrategyRole(_Strict):
    """``prefill`` / ``decode`` block of the pd_cluster strategy."""

    vllm_args: ArgList | None = None
    env: EnvMap | None = None
    parallelism: str | None = None
    tp: int | None = None
    parallel_flag: str | None = None


class StrategyRouter(_Strict):
    policy: str | None = None


class Strategy(_Strict):
    """One ``strategies/*.yaml`` file."""

    name: str
    display_name: str | None = None
    description: str | None = None
    orientation: str | None = None
    deploy_type: Literal["single_node", "multi_node", "pd_cluster"] | None = None
    vllm_args: ArgList | None = None
    parallel_flag: str | None = None
    parallelism: str | None = None
    env: EnvMap | None = None
    hardware_match: HardwareMatch | None = None
    prefill: StrategyRole | None = None
    decode: StrategyRole | None = None
    router: StrategyRouter | None = None


class MooncakeCommand(_Strict):
    command: str | None = None
    description: str | None = None


class MooncakeStoreConfig(_Strict):
    command: str | None = None
    description: str | None = None
    note: str | None = None
    config: dict[str, str | int | float | bool | None] | None = None


class MooncakeVllmConfig(_Strict):
    mode: str | None = None
    note: str | None = None
    template: dict[str, str | int | float | bool | None] | None = None


class KvStorePdRole(_Strict):
    args: ArgList | None = None


class KvStorePd(_Strict):
    prefill: KvStorePdRole | None = None
    decode: KvStorePdRole | None = None


class KvStoreRouter(_Strict):
    policy: str | None = None
    port: int | None = None
    install: str | None = None


class KvStoreVllm(_Strict):
    vllm_args: ArgList | None = None
    env: EnvMap | None = None
    port: int | None = None
    install: str | dict[str, str] | None = None


class KvStore(_Strict):
    """One ``kv_store/*.yaml`` file (a Mooncake topology, ``deploy_type: kv_store_lb``)."""

    name: str
    deploy_type: Literal["kv_store_lb"]
    display_name: str | None = None
    label: str | None = None
    description: str | None = None
    min_vllm_version: str | None = None
    default_instances: int | None = None
    order: int | None = None
    mooncake_master: MooncakeCommand | None = None
    mooncake_store_config: MooncakeStoreConfig | None = None
    mooncake_vllm_config: MooncakeVllmConfig | None = None
    pd: KvStorePd | None = None
    router: KvStoreRouter | None = None
    vllm: KvStoreVllm | None = None


# --------------------------------------------------------------------------- model recipe


class PlatformNote(_Strict):
    id: str
    blurb: str | None = None
    install: str | None = None
    script: str | None = None


#: The support levels a recipe may give a hardware (``meta.hardware.<id>``) or a KV
#: offload option (``kv_offload_support.<key>``): the values every revision of
#: vllm-project/recipes uses (``verified`` 90,830 times, ``unsupported`` 1,823,
#: ``supported`` 69 over the first-parent history to 8959cf6). Any other value is a typo
#: (``verifed``) that would silently drop a claim: an input error naming its line.
SupportLevel = Literal["verified", "supported", "unsupported"]


class Meta(_Strict):
    title: str | None = None
    slug: str | None = None
    provider: str | None = None
    description: str | None = None
    date_added: dt.date | str | None = None
    date_updated: dt.date | str | None = None
    difficulty: str | None = None
    tasks: list[str] | None = None
    hardware: dict[str, SupportLevel | None] | None = None
    default_hardware: str | None = None
    performance_headline: str | None = None
    platforms: list[PlatformNote] | None = None
    related_recipes: list[str] | None = None


class InstallMode(_Strict):
    command: str | None = None
    note: str | None = None


class ModelInstall(_Strict):
    pip: bool | InstallMode | None = None
    docker: bool | InstallMode | None = None


class DockerSource(_Strict):
    mount_path: str | None = None


DockerImage = str | dict[str, str | dict[str, str]]


class ModelSection(_Strict):
    model_id: str | None = None
    base_args: ArgList | None = None
    base_env: EnvMap | None = None
    docker_image: DockerImage | None = None
    docker_source: DockerSource | None = None
    install: ModelInstall | None = None
    min_vllm_version: str | None = None
    nightly_required: bool | None = None
    parameter_count: str | None = None
    active_parameters: str | None = None
    architecture: str | None = None
    context_length: int | None = None
    supports_dcp: bool | None = None
    flashinfer_autotune: bool | None = None


class PrecisionHardware(_Strict):
    brand: str | None = None
    generation: str | None = None


class VariantHardwareOverride(_Strict):
    extra_args: ArgList | None = None
    extra_env: EnvMap | None = None
    docker_image: DockerImage | None = None
    install_note: str | None = None


class Variant(_Strict):
    label: str | None = None
    description: str | None = None
    model_id: str | None = None
    precision: str | None = None
    precision_hardware: PrecisionHardware | None = None
    vram_minimum_gb: int | float | None = None
    supported_hardware: list[str] | None = None
    tp: HardwareKeyedInt | None = None
    extra_args: ArgList | None = None
    extra_env: EnvMap | None = None
    hardware_overrides: dict[str, VariantHardwareOverride | None] | None = None
    default_modes: dict[str, str] | None = None
    docker_image: DockerImage | None = None
    min_vllm_version: str | None = None
    #: 2026-07-02 to 2026-08-14 (DeepSeek-V4-Pro ``dspark``): the site's install block
    #: switches to the nightly wheel; command synthesis never reads it.
    nightly_required: bool | None = None


class FeatureArgsOverride(_Strict):
    args: ArgList | None = None


class FeatureMode(_Strict):
    label: str | None = None
    description: str | None = None
    args: ArgList | None = None
    hardware_overrides: dict[str, FeatureArgsOverride | None] | None = None
    hardware: dict[str, str | None] | None = None
    variants: list[str] | None = None


class Feature(_Strict):
    label: str | None = None
    description: str | None = None
    args: ArgList | None = None
    hardware_overrides: dict[str, FeatureArgsOverride | None] | None = None
    modes: dict[str, FeatureMode] | None = None
    default_mode: str | None = None
    strategies: list[str] | None = None
    #: Present in some recipes; the builder does not read feature-level gates.
    hardware: dict[str, str | None] | None = None
    companion: Companion | None = None


class GenerationOverride(_Strict):
    """``hardware_overrides.<gen|nvidia|id>`` at recipe or strategy-override level."""

    extra_args: ArgList | None = None
    extra_env: EnvMap | None = None
    install_note: str | None = None


class PdRoleOverride(_Strict):
    """``strategy_overrides.pd_cluster.<prefill|decode>``."""

    extra_args: ArgList | None = None
    vllm_args: ArgList | None = None
    env: EnvMap | None = None
    #: Written (empty) by the first revision, 7f7a1b5 (DeepSeek-V3.2, removed in #525); the
    #: builder reads a role's ``env``, never ``extra_env``: accepted and ignored.
    extra_env: EnvMap | None = None
    nodes: HardwareKeyedInt | None = None
    parallelism: str | None = None
    tp: int | None = None
    parallel_flag: str | None = None
    hardware_overrides: dict[str, GenerationOverride | None] | None = None


class PdRouterOverride(_Strict):
    intra_node_data_parallel_size: int | None = None


class StrategyOverride(_Strict):
    tp: HardwareKeyedInt | None = None
    extra_args: ArgList | None = None
    vllm_args: ArgList | None = None
    env: EnvMap | None = None
    extra_env: EnvMap | None = None
    hardware_overrides: dict[str, GenerationOverride | None] | None = None
    prefill: PdRoleOverride | None = None
    decode: PdRoleOverride | None = None
    pool_modes: list[str] | None = None
    router: PdRouterOverride | None = None


class Dependency(_Strict):
    command: str | None = None
    brand: str | None = None
    note: str | None = None
    optional: bool | None = None
    install_modes: list[str] | None = None


class HardwareNoteLink(_Strict):
    href: str | None = None
    label: str | None = None


class HardwareNote(_Strict):
    title: str | None = None
    body: str | None = None
    link: HardwareNoteLink | None = None


class AdvancedOption(_Strict):
    id: str
    label: str | None = None
    args: ArgList | None = None


class OmniTaskAxisOption(_Strict):
    id: str
    label: str | None = None


class OmniTaskAxis(_Strict):
    id: str
    label: str | None = None
    options: list[OmniTaskAxisOption] | None = None


class OmniTaskHardwareOverride(_Strict):
    label: str | None = None
    endpoint: str | None = None
    model_id: str | None = None
    vram_minimum_gb: int | float | None = None
    description: str | None = None
    extra_args: ArgList | None = None
    curl: str | None = None


class OmniTask(_Strict):
    id: str | None = None
    key: str | None = None
    label: str | None = None
    endpoint: str | None = None
    model_id: str | None = None
    vram_minimum_gb: int | float | None = None
    description: str | None = None
    axes: dict[str, str] | None = None
    extra_args: ArgList | None = None
    curl: str | None = None
    hardware_overrides: dict[str, OmniTaskHardwareOverride | None] | None = None


class OmniSection(_Strict):
    port: int | None = None
    serve_binary: str | None = None
    tasks: list[str | OmniTask] | None = None
    task_axes: list[OmniTaskAxis] | None = None
    task_hint: str | None = None
    task_label: str | None = None
    variant_hint: str | None = None
    variant_label: str | None = None


StrategyMinGpus = int | dict[str, int | dict[str, int]]


class RecipeFile(_Strict):
    """One ``models/<org>/<model>.yaml`` file, as written."""

    meta: Meta | None = None
    model: ModelSection | None = None
    variants: dict[str, Variant] | None = None
    features: dict[str, Feature] | None = None
    opt_in_features: list[str] | None = None
    hardware_opt_in_features: dict[str, list[str]] | None = None
    compatible_strategies: list[str] | None = None
    default_strategy: str | None = None
    strategy_overrides: dict[str, StrategyOverride | None] | None = None
    strategy_hardware: dict[str, dict[str, str | None] | None] | None = None
    strategy_min_gpus: StrategyMinGpus | None = None
    hardware_overrides: dict[str, GenerationOverride | None] | None = None
    kv_offload_support: dict[str, SupportLevel] | None = None
    kv_cache_strategy_hardware: dict[str, dict[str, str | None] | None] | None = None
    advanced_options: list[AdvancedOption] | None = None
    omni: OmniSection | None = None
    guide: str | None = None
    dependencies: list[Dependency] | None = None
    hardware_notes: dict[str, HardwareNote] | None = None
