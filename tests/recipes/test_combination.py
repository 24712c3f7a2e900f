"""The hot path's selections and commands are frozen, slotted, value-hashed dataclasses that
pydantic reads and writes exactly as it did the models they replaced."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest
from pydantic import BaseModel, ConfigDict, TypeAdapter, ValidationError

from provenance.model.combination import (
    Combination,
    PdPool,
    PdSelection,
    RenderResult,
    RoleCommand,
    Selection,
)

PD = PdSelection(prefill=PdPool(nodes=1, parallelism="tp"), decode=PdPool(2, "dep"))
SELECTION = Selection(
    variant="nvfp4",
    hardware="b300",
    strategy="pd_cluster",
    node_count=None,
    pd=PD,
    features=("spec_decoding",),
    feature_modes={"spec_decoding": "eagle3"},
)
ROLE = RoleCommand(
    role="prefill", node_rank=0, argv=("vllm", "serve", "m", "--block-size", "128"), env={"A": 1}
)
RESULT = RenderResult(deploy_type="pd_cluster", model_id="m", roles=(ROLE,))
VALUES: list[Any] = [PD.prefill, PD, SELECTION, ROLE, RESULT]


@pytest.mark.parametrize("value", VALUES, ids=lambda v: type(v).__name__)
def test_frozen_slotted_and_hashed_by_value(value: Any) -> None:
    assert not hasattr(value, "__dict__")
    copy = dataclasses.replace(value)
    assert copy == value and copy is not value
    assert hash(copy) == hash(value)
    first = dataclasses.fields(value)[0].name
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(value, first, getattr(value, first))


@pytest.mark.parametrize("value", VALUES, ids=lambda v: type(v).__name__)
def test_round_trip_through_pydantic(value: Any) -> None:
    adapter: TypeAdapter[Any] = TypeAdapter(type(value))
    text = adapter.dump_json(value)
    assert adapter.validate_json(text) == value
    assert adapter.validate_python(json.loads(text)) == value


def test_selection_hash_ignores_the_order_of_feature_modes() -> None:
    one = dataclasses.replace(SELECTION, feature_modes={"a": "1", "b": None})
    other = dataclasses.replace(SELECTION, feature_modes={"b": None, "a": "1"})
    assert one == other and hash(one) == hash(other)


def test_unknown_and_missing_fields_are_refused_at_the_boundary() -> None:
    data = json.loads(TypeAdapter(Selection).dump_json(SELECTION))
    with pytest.raises(ValidationError, match="bogus"):
        TypeAdapter(Selection).validate_python({**data, "bogus": 1})
    with pytest.raises(ValidationError, match="argv"):
        TypeAdapter(RoleCommand).validate_python({"role": "serve"})
    with pytest.raises(ValidationError, match="role"):
        TypeAdapter(RoleCommand).validate_python({"role": "nobody", "argv": None})


def test_a_model_holding_them_has_the_schema_and_json_of_the_old_models() -> None:
    """What ``Combination`` (a model with dataclass fields) publishes: the schema and JSON
    the pydantic models gave (written out here as they were)."""
    combination = Combination(recipe="Org/Name", selection=SELECTION, result=RESULT)
    assert json.loads(combination.model_dump_json()) == {
        "recipe": "Org/Name",
        "selection": {
            "variant": "nvfp4",
            "hardware": "b300",
            "strategy": "pd_cluster",
            "node_count": None,
            "pd": {
                "prefill": {"nodes": 1, "parallelism": "tp"},
                "decode": {"nodes": 2, "parallelism": "dep"},
            },
            "kv_offload": None,
            "kv_instances": None,
            "features": ["spec_decoding"],
            "feature_modes": {"spec_decoding": "eagle3"},
            "omni_task": None,
        },
        "result": {
            "deploy_type": "pd_cluster",
            "model_id": "m",
            "roles": [
                {
                    "role": "prefill",
                    "node_rank": 0,
                    "argv": ["vllm", "serve", "m", "--block-size", "128"],
                    "env": {"A": 1},
                    "instance": None,
                    "command": None,
                }
            ],
        },
    }
    schema = Combination.model_json_schema()["$defs"]
    assert schema["PdPool"] == {
        "additionalProperties": False,
        "description": "One pd_cluster pool: how many nodes and which parallelism mode "
        "(tp, tep, dep).",
        "properties": {
            "nodes": {"title": "Nodes", "type": "integer"},
            "parallelism": {"title": "Parallelism", "type": "string"},
        },
        "required": ["nodes", "parallelism"],
        "title": "PdPool",
        "type": "object",
    }
    assert schema["RoleCommand"]["required"] == ["role", "argv"]
    assert schema["Selection"]["required"] == ["variant", "hardware", "strategy", "node_count"]


def test_instances_inside_a_model_are_kept_as_they_are() -> None:
    class Holder(BaseModel):
        model_config = ConfigDict(frozen=True)
        selection: Selection

    assert Holder(selection=SELECTION).selection is SELECTION
