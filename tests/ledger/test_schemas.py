"""The JSON Schemas shipped in ``provenance/schemas`` match the models that generate them."""

from __future__ import annotations

import pytest

from provenance.schemas import KINDS, published, render


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_published_schema_is_up_to_date(kind: str) -> None:
    assert published(kind) == render(kind), (
        f"src/provenance/schemas/{kind}.json is stale: run `python -m provenance.schemas`"
    )
