"""What one selectable combination is and what it renders to.

The shapes mirror the reference oracle's JSON lines (``selection`` and
``result``) so records can be compared one for one after sorting.

These are the currency of the hot path — the enumeration yields hundreds of
thousands of selections, the renderer one command per role — so they are frozen,
slotted dataclasses, hashed and compared by value, built without validation. Where
they cross a boundary (a report, a JSON line, ``provenance explain``) pydantic
validates and serialises them like models: ``__pydantic_config__`` gives them the
same schema (extra fields forbidden) and the same JSON as the models they replace.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar, Literal

from pydantic import BaseModel, ConfigDict

EnvValue = str | int | float | bool | None

Role = Literal["serve", "head", "worker", "prefill", "decode", "instance", "instance_worker"]
DeployType = Literal["single_node", "multi_node", "pd_cluster", "kv_store_lb", "omni"]

#: How pydantic reads and writes these dataclasses at a boundary: unknown fields refused.
_STRICT_FIELDS = ConfigDict(extra="forbid")


@dataclass(frozen=True, slots=True)
class PdPool:
    """One pd_cluster pool: how many nodes and which parallelism mode (tp, tep, dep)."""

    __pydantic_config__: ClassVar[ConfigDict] = _STRICT_FIELDS

    nodes: int
    parallelism: str


@dataclass(frozen=True, slots=True)
class PdSelection:
    __pydantic_config__: ClassVar[ConfigDict] = _STRICT_FIELDS

    prefill: PdPool
    decode: PdPool


@dataclass(frozen=True, slots=True)
class Selection:
    """Everything a user picks in the recipes command builder (same fields as the oracle)."""

    __pydantic_config__: ClassVar[ConfigDict] = _STRICT_FIELDS

    variant: str
    hardware: str
    #: ``None`` only for omni recipes (no strategy axis).
    strategy: str | None
    node_count: int | None
    pd: PdSelection | None = None
    kv_offload: str | None = None
    kv_instances: int | None = None
    features: tuple[str, ...] = ()
    feature_modes: dict[str, str | None] = field(default_factory=dict)
    #: omni recipes only: the task key rendered (``None`` when the recipe declares none).
    omni_task: str | None = None

    def __hash__(self) -> int:
        return hash(
            (
                self.variant,
                self.hardware,
                self.strategy,
                self.node_count,
                self.pd,
                self.kv_offload,
                self.kv_instances,
                self.features,
                tuple(sorted(self.feature_modes.items(), key=lambda kv: kv[0])),
                self.omni_task,
            )
        )

    def label(self) -> str:
        """Short human label: ``nvfp4 · b200 · single_node_tp · 1n · +spec_decoding=eagle3``."""
        parts = [self.variant, self.hardware, self.strategy or "omni"]
        if self.pd is not None:
            parts.append(
                f"P{self.pd.prefill.nodes}n-{self.pd.prefill.parallelism}"
                f"/D{self.pd.decode.nodes}n-{self.pd.decode.parallelism}"
            )
        elif self.node_count is not None:
            parts.append(f"{self.node_count}n")
        if self.kv_offload:
            parts.append(f"kv={self.kv_offload}")
        for feature in self.features:
            mode = self.feature_modes.get(feature)
            parts.append(f"+{feature}={mode}" if mode else f"+{feature}")
        return " · ".join(parts)


@dataclass(frozen=True, slots=True, kw_only=True)
class RoleCommand:
    """One process of a deployment: its role, node rank, argv and env."""

    __pydantic_config__: ClassVar[ConfigDict] = _STRICT_FIELDS

    role: Role
    node_rank: int | None = None
    argv: tuple[str, ...] | None
    env: dict[str, EnvValue] = field(default_factory=dict)
    #: Mooncake instance index (``instance`` / ``instance_worker`` roles only).
    instance: int | None = None
    #: shell text, set only where the builder has no argv form (omni recipes).
    command: str | None = None

    def __hash__(self) -> int:
        return hash(
            (
                self.role,
                self.node_rank,
                self.argv,
                tuple(self.env.items()),
                self.instance,
                self.command,
            )
        )


@dataclass(frozen=True, slots=True)
class RenderResult:
    """The oracle's ``result``: deploy type, model id and every role's command."""

    __pydantic_config__: ClassVar[ConfigDict] = _STRICT_FIELDS

    deploy_type: DeployType
    model_id: str
    roles: tuple[RoleCommand, ...]


class Combination(BaseModel):
    """A selection and what the builder renders for it (one line of ``provenance combos``).

    Its validator is built on first use (``defer_build``), not when this module is
    imported: the audit imports this module for the selection types and never builds a
    ``Combination`` (3 ms of its start-up, measured; ``tests/cli/test_imports.py``).
    """

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    recipe: str
    selection: Selection
    result: RenderResult
