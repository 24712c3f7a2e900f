"""What one selectable combination is and what it renders to.

The shapes mirror the reference oracle's JSON lines (``selection`` and
``result``) so records can be compared one for one after sorting.
"""

from __future__ import annotations

from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field

EnvValue = str | int | float | bool | None

_Model = TypeVar("_Model", bound=BaseModel)
_new = object.__new__
_ALL_FIELDS: dict[type[BaseModel], set[str]] = {}
_set = object.__setattr__


def construct(cls: type[_Model], values: dict[str, Any]) -> _Model:
    """``cls.model_construct(**values)`` for ``values`` naming every field of ``cls``.

    No validation, as with ``model_construct``, but about ten times cheaper: the
    enumeration and the renderer build one model per selection and per role
    (hundreds of thousands for one recipe). The result is equal to
    ``model_construct``'s, field set included (``tests/recipes/test_construct.py``).
    ``values`` becomes the instance's ``__dict__``: pass a fresh dict. Every
    instance of ``cls`` built here shares one fields-set object (all fields are
    set; a frozen model never adds to it, and ``model_copy`` copies it first):
    a set of ten names is 728 bytes, as much again as the selection's values.
    """
    fields_set = _ALL_FIELDS.get(cls)
    if fields_set is None or len(values) != len(fields_set):
        fields_set = set(values)
        if fields_set == set(cls.model_fields):
            _ALL_FIELDS[cls] = fields_set
    instance = _new(cls)
    _set(instance, "__dict__", values)
    _set(instance, "__pydantic_fields_set__", fields_set)
    _set(instance, "__pydantic_extra__", None)
    _set(instance, "__pydantic_private__", None)
    return instance


Role = Literal["serve", "head", "worker", "prefill", "decode", "instance", "instance_worker"]
DeployType = Literal["single_node", "multi_node", "pd_cluster", "kv_store_lb", "omni"]


class PdPool(BaseModel):
    """One pd_cluster pool: how many nodes and which parallelism mode (tp, tep, dep)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    nodes: int
    parallelism: str


class PdSelection(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    prefill: PdPool
    decode: PdPool


class Selection(BaseModel):
    """Everything a user picks in the recipes command builder (same fields as the oracle)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    variant: str
    hardware: str
    #: ``None`` only for omni recipes (no strategy axis).
    strategy: str | None
    node_count: int | None
    pd: PdSelection | None = None
    kv_offload: str | None = None
    kv_instances: int | None = None
    features: tuple[str, ...] = ()
    feature_modes: dict[str, str | None] = Field(default_factory=dict)
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


class RoleCommand(BaseModel):
    """One process of a deployment: its role, node rank, argv and env."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    role: Role
    node_rank: int | None = None
    argv: tuple[str, ...] | None
    env: dict[str, EnvValue] = Field(default_factory=dict)
    #: Mooncake instance index (``instance`` / ``instance_worker`` roles only).
    instance: int | None = None
    #: shell text, set only where the builder has no argv form (omni recipes).
    command: str | None = None


class RenderResult(BaseModel):
    """The oracle's ``result``: deploy type, model id and every role's command."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    deploy_type: DeployType
    model_id: str
    roles: tuple[RoleCommand, ...]


class Combination(BaseModel):
    """A selection and what the builder renders for it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    recipe: str
    selection: Selection
    result: RenderResult
