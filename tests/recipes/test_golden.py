"""Token-for-token parity with the recipes site's builder, against recorded golden data.

The golden files (tests/data/recipes_golden, see its README) hold digests of
the reference oracle's output; these tests need neither node nor network.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from recipes_support import (
    GOLDEN,
    HISTORY,
    compare_with_golden,
    full_checkout,
    golden,
)

from provenance.model.combination import PdPool, PdSelection, Selection
from provenance.recipes.enumerate.selections import EnumerationOptions
from provenance.recipes.load.loader import Recipe, RecipesRoot, load_recipe, load_recipes_root
from provenance.recipes.render.records import combination_record, oracle_projection
from provenance.recipes.render.synthesis import render


def _options_from_oracle_args(args: list[str]) -> EnumerationOptions:
    values: dict[str, Any] = {}
    names = {
        "--kv": "kv",
        "--features": "features",
        "--pd-pairing": "pd_pairing",
        "--pd-nodes": "pd_nodes",
    }
    for flag, value in zip(args[::2], args[1::2], strict=True):
        if flag == "--kv-instances":
            values["kv_instances"] = tuple(int(v) for v in value.split(","))
        else:
            values[names[flag]] = value
    return EnumerationOptions(**values)


FIXTURE_RUNS = sorted(golden("f_fixture_root.json.gz")["runs"])


@pytest.mark.parametrize("run", FIXTURE_RUNS)
def test_fixture_root_matches_oracle(run: str, toy_root: RecipesRoot) -> None:
    entry = golden("f_fixture_root.json.gz")["runs"][run]
    recipe = load_recipe(toy_root, run.split(":")[0])
    count, problems = compare_with_golden(
        recipe, toy_root, _options_from_oracle_args(entry["options"]), entry
    )
    assert count > 0
    assert problems == []


@pytest.mark.corpus
@pytest.mark.slow
def test_minimax_m3_full_joint_cross_product(corpus_root: RecipesRoot) -> None:
    """(b) MiniMax-M3 at 8959cf6: all 71,208 records of the joint cross-product."""
    entry = golden("b_minimax_m3_joint.json.gz")
    recipe = load_recipe(corpus_root, "MiniMaxAI/MiniMax-M3")
    count, problems = compare_with_golden(recipe, corpus_root, EnumerationOptions(), entry)
    assert count == 71208
    assert problems == []


def _selection(data: dict[str, Any]) -> Selection:
    pd = data.get("pd")
    return Selection(
        variant=data["variant"],
        hardware=data["hardware"],
        strategy=data["strategy"],
        node_count=data["node_count"],
        pd=PdSelection(prefill=PdPool(**pd["prefill"]), decode=PdPool(**pd["decode"]))
        if pd
        else None,
        kv_offload=data["kv_offload"],
        kv_instances=data["kv_instances"],
        features=tuple(data["features"]),
        feature_modes=data["feature_modes"],
    )


SAMPLE = [
    json.loads(line)
    for line in (GOLDEN / "sample_minimax_m3.jsonl").read_text(encoding="utf-8").splitlines()
]


@pytest.fixture(scope="module")
def minimax_m3(corpus_root: RecipesRoot) -> Recipe:
    return load_recipe(corpus_root, "MiniMaxAI/MiniMax-M3")


@pytest.mark.corpus
@pytest.mark.parametrize("index", range(len(SAMPLE)))
def test_sample_records_render_exactly(
    index: int, corpus_root: RecipesRoot, minimax_m3: Recipe
) -> None:
    """Readable diffs: full oracle records of MiniMax-M3 rendered one by one."""
    record = SAMPLE[index]
    recipe = minimax_m3
    assert recipe.hf_id == record["recipe"]
    selection = _selection(record["selection"])
    mine = combination_record(recipe.hf_id, selection, render(recipe, corpus_root, selection))
    assert mine == oracle_projection(record)


HISTORY_VERSIONS = sorted(golden("c_minimax_m3_history.json.gz")["versions"])


@pytest.mark.corpus
@pytest.mark.slow
@pytest.mark.parametrize("version", HISTORY_VERSIONS)
def test_minimax_m3_history_with_8959cf6_builder(version: str, corpus_root: RecipesRoot) -> None:
    """(c) every MiniMax-M3 revision rendered with the 8959cf6 strategies and taxonomy."""
    file = HISTORY / version
    if not file.is_file():
        pytest.skip(f"{file} is not present")
    entry = golden("c_minimax_m3_history.json.gz")["versions"][version]
    recipe = load_recipe(corpus_root, file)
    count, problems = compare_with_golden(recipe, corpus_root, EnumerationOptions(), entry)
    assert count == entry["count"]
    assert problems == []


ALL_MODELS = sorted(golden("a_models_star.json.gz")["recipes"])


@pytest.fixture(scope="module")
def checkout_root() -> RecipesRoot:
    path = full_checkout()
    if path is None:
        pytest.skip("no vllm-project/recipes checkout (set PROVENANCE_RECIPES_ROOT)")
    return load_recipes_root(path)


@pytest.mark.slow
@pytest.mark.parametrize("model", ALL_MODELS)
def test_every_model_at_8959cf6_star(model: str, checkout_root: RecipesRoot) -> None:
    """(a) all 173 model recipes at 8959cf6 with --pd-pairing star (needs the checkout)."""
    entry = golden("a_models_star.json.gz")["recipes"][model]
    file = Path(checkout_root.path) / entry["file"]
    if not file.is_file():
        pytest.skip(f"{file} is not in the checkout")
    recipe = load_recipe(checkout_root, file)
    count, problems = compare_with_golden(
        recipe, checkout_root, EnumerationOptions(pd_pairing="star"), entry
    )
    assert count == entry["count"]
    assert problems == []
