"""``combination.construct`` builds the same model as pydantic's ``model_construct``."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel

from provenance.model.combination import (
    PdPool,
    PdSelection,
    RenderResult,
    RoleCommand,
    Selection,
    construct,
)

PD = PdSelection(
    prefill=PdPool(nodes=1, parallelism="tp"), decode=PdPool(nodes=2, parallelism="dep")
)
ROLE: dict[str, Any] = {
    "role": "prefill",
    "node_rank": 0,
    "argv": ("vllm", "serve", "m", "--block-size", "128"),
    "env": {"A": "1"},
    "instance": None,
    "command": None,
}
CASES: list[tuple[type[BaseModel], dict[str, Any]]] = [
    (
        Selection,
        {
            "variant": "nvfp4",
            "hardware": "b300",
            "strategy": "pd_cluster",
            "node_count": None,
            "pd": PD,
            "kv_offload": None,
            "kv_instances": None,
            "features": ("spec_decoding",),
            "feature_modes": {"spec_decoding": "eagle3"},
            "omni_task": None,
        },
    ),
    (RoleCommand, ROLE),
    (
        RenderResult,
        {
            "deploy_type": "pd_cluster",
            "model_id": "m",
            "roles": (RoleCommand.model_construct(**ROLE),),
        },
    ),
]


@pytest.mark.parametrize(("cls", "values"), CASES, ids=lambda c: getattr(c, "__name__", ""))
def test_construct_equals_model_construct(cls: type[BaseModel], values: dict[str, Any]) -> None:
    assert set(values) == set(cls.model_fields)
    fast = construct(cls, dict(values))
    slow = cls.model_construct(**values)
    assert fast == slow
    assert fast.model_fields_set == slow.model_fields_set
    assert fast.model_dump_json() == slow.model_dump_json()
    assert fast.model_dump() == slow.model_dump()
    assert hash(fast) == hash(slow) if cls is Selection else True
    with pytest.raises(Exception, match="frozen"):
        fast.__setattr__(next(iter(values)), values[next(iter(values))])


def test_constructed_selection_round_trips_through_validation() -> None:
    fast = construct(Selection, dict(CASES[0][1]))
    assert Selection.model_validate_json(fast.model_dump_json()) == fast


def test_shared_fields_set_is_never_changed_by_copies() -> None:
    first = construct(Selection, dict(CASES[0][1]))
    second = construct(Selection, dict(CASES[0][1]))
    shared = set(first.model_fields_set)
    copied = first.model_copy(update={"variant": "mxfp8"})
    deep = second.model_copy(deep=True)
    assert copied.variant == "mxfp8" and first.variant == "nvfp4"
    assert (
        first.model_fields_set == second.model_fields_set == shared == set(Selection.model_fields)
    )
    assert deep == second
    assert first.model_dump(exclude_unset=True) == first.model_dump()
