"""Hardware-profile facts and the three hardware-keyed lookups of the recipes builder.

The builder reads hardware-keyed maps in three different ways (spec §3.4):

* :func:`keyed_value` — exact id, then generation, then lower-cased brand, then
  ``default``; the first key whose value is not null wins (variant ``tp``,
  ``strategy_hardware``, mode ``hardware_overrides``);
* :func:`generation_block` — the generation key, or ``nvidia`` on an NVIDIA
  profile when the generation key is absent (recipe, variant, strategy-override
  and feature ``hardware_overrides``); an empty block still counts as present;
* exact id only — plain ``mapping.get(hardware_id)`` at the call site.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TypeVar

from provenance.recipes.load.schema import HardwareProfile, Taxonomy

T = TypeVar("T")


@dataclass(frozen=True)
class HardwareView:
    """One taxonomy profile as the builder sees it (an unknown id is an empty profile)."""

    id: str
    known: bool
    brand: str | None
    #: ``generation`` as written (an array stays an array; only ``xpu``/``cpu`` tests use it).
    raw_generation: str | None
    #: generation reduced to one string (first element of an array), ``None`` if unset.
    generation: str | None
    #: ``gpu_count`` when it is a number, else 1 (the synthesis rule).
    gpu_count: int
    #: ``gpu_count`` when truthy, else 8 (the UI rule).
    gpus_per_node_ui: int
    vram_gb: float
    scalable: bool
    restricted: bool

    @property
    def is_nvidia(self) -> bool:
        return self.brand == "NVIDIA"

    @property
    def brand_key(self) -> str | None:
        return self.brand.lower() if self.brand else None

    @property
    def per_gpu_vram(self) -> float:
        if self.vram_gb and self.gpu_count:
            return self.vram_gb / self.gpu_count
        return 0.0


def _normalise_generation(value: str | list[str] | None) -> str | None:
    if isinstance(value, list):
        return value[0] if value else None
    return value or None


def hardware_view(taxonomy: Taxonomy, hardware_id: str) -> HardwareView:
    profile = taxonomy.hardware_profiles.get(hardware_id)
    if profile is None:
        profile = HardwareProfile()
        known = False
    else:
        known = True
    raw = profile.generation or profile.gpu_generation
    gpu_count = profile.gpu_count if profile.gpu_count is not None else 1
    return HardwareView(
        id=hardware_id,
        known=known,
        brand=profile.brand,
        raw_generation=profile.generation if isinstance(profile.generation, str) else None,
        generation=_normalise_generation(raw),
        gpu_count=gpu_count,
        gpus_per_node_ui=profile.gpu_count or 8,
        vram_gb=float(profile.vram_gb or 0),
        scalable=profile.scalable is not False,
        restricted=bool(profile.restricted),
    )


def keyed_value(mapping: Mapping[str, T | None] | None, hw: HardwareView) -> T | None:
    """Exact id > generation > lower-cased brand > ``default`` (first non-null value)."""
    if mapping is None:
        return None
    value = mapping.get(hw.id)
    if value is None and hw.generation:
        value = mapping.get(hw.generation)
    if value is None and hw.brand_key:
        value = mapping.get(hw.brand_key)
    if value is None:
        value = mapping.get("default")
    return value


def generation_block(mapping: Mapping[str, T | None] | None, hw: HardwareView) -> T | None:
    """The generation's block, else ``nvidia`` on NVIDIA; exact ids and ``default`` are not read."""
    if mapping is None:
        return None
    block = mapping.get(hw.generation) if hw.generation is not None else None
    if block is None and hw.is_nvidia:
        block = mapping.get("nvidia")
    return block
