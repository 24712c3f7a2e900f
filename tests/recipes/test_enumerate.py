"""Which selections the builder lets a user reach (toy root; MiniMax-M3 counts on the corpus)."""

from __future__ import annotations

from collections import Counter

import pytest

from provenance.errors import UsageError
from provenance.recipes.enumerate.selections import (
    EnumerationOptions,
    PdNodesSpec,
    enumerate_selections,
    enumerate_with_ui,
)
from provenance.recipes.load.loader import RecipesRoot, load_recipe


def _selections(root: RecipesRoot, **options: object) -> list:  # type: ignore[type-arg]
    recipe = load_recipe(root, "Toy/Toy-1")
    return list(enumerate_selections(recipe, root, EnumerationOptions(**options)))


def test_variant_hardware_pairs(toy_root: RecipesRoot) -> None:
    pairs = {(s.variant, s.hardware) for s in _selections(toy_root, features="none")}
    # xpu4 is restricted and not named by the recipe; desk1 is restricted but declared.
    # nvfp4 needs NVIDIA Blackwell; VRAM never removes a pair (big on desk1 stays).
    assert pairs == {
        *(("default", h) for h in ("hopper8", "bw8", "gb200", "amd8", "desk1")),
        *(("big", h) for h in ("hopper8", "bw8", "gb200", "amd8", "desk1")),
        *(("fp4", h) for h in ("bw8", "gb200", "desk1")),
    }


def test_strategies_nodes_and_floors(toy_root: RecipesRoot) -> None:
    found = {
        (s.hardware, s.strategy, s.node_count)
        for s in _selections(toy_root, features="none", variants=("default",))
    }
    # multi_node_tp_pp needs 24 GPUs: 3 nodes of 8, 6 of 4; it is opted out on AMD.
    assert ("bw8", "multi_node_tp_pp", 3) in found
    assert ("gb200", "multi_node_tp_pp", 6) in found
    assert not any(h == "amd8" and s == "multi_node_tp_pp" for h, s, _ in found)
    # the node pills are [1, 2, needed]: other multi-node strategies get 2 and 3 nodes
    assert {n for h, s, n in found if h == "bw8" and s == "multi_node_tp"} == {2, 3}
    # a non-scalable desk has no multi-node pills
    assert {s for h, s, _ in found if h == "desk1"} == {
        "single_node_tp",
        "single_node_dep",
        "pd_cluster",
    }


def test_feature_subsets_respect_the_mutex_and_strategy_gates(toy_root: RecipesRoot) -> None:
    selections = _selections(toy_root, variants=("default",), hardware=("bw8",))
    assert not any(
        "text_only" in s.features and "encoder_parallel" in s.features for s in selections
    )
    gated = {s.strategy for s in selections if "dep_only" in s.features}
    assert gated == {"single_node_dep", "multi_node_dep"}
    # 6 pills on DEP strategies: 64 subsets minus 16 with both mutex members
    dep = [s for s in selections if s.strategy == "single_node_dep"]
    assert len({s.features for s in dep}) == 48


def test_modes_are_crossed_with_their_selectable_values(toy_root: RecipesRoot) -> None:
    def modes(variant: str, hardware: str) -> set[str | None]:
        return {
            s.feature_modes["spec"]
            for s in _selections(
                toy_root, variants=(variant,), hardware=(hardware,), strategies=("single_node_tp",)
            )
            if "spec" in s.features
        }

    assert modes("default", "hopper8") == {"a"}  # b is unsupported on hopper, c is fp4-only
    assert modes("default", "bw8") == {"a", "b"}
    assert modes("fp4", "bw8") == {"a", "b", "c"}


def test_default_features_follow_opt_ins(toy_root: RecipesRoot) -> None:
    landing = {
        (s.hardware, s.features)
        for s in _selections(toy_root, features="default", variants=("default",))
    }
    assert ("bw8", ("tools", "reasoning")) in landing
    assert ("amd8", ("tools",)) in landing  # reasoning is opt-in on amd8


def test_pd_pools_joint_and_star(toy_root: RecipesRoot) -> None:
    base = {"variants": ("fp4",), "hardware": ("bw8",), "strategies": ("pd_cluster",)}
    joint = _selections(toy_root, features="none", **base)
    star = _selections(toy_root, features="none", pd_pairing="star", **base)
    # the recipe offers *_tp, *_dep and *_tp_pp strategies -> pool modes tp and dep;
    # node counts 1, 2 and the default (1) -> 2 pools per mode per role
    assert len(joint) == 16
    assert len(star) == 1 + 4 + 4 - 2
    pools = {(s.pd.prefill.nodes, s.pd.prefill.parallelism) for s in joint if s.pd}
    assert pools == {(1, "tp"), (2, "tp"), (1, "dep"), (2, "dep")}


def test_kv_choices(toy_root: RecipesRoot) -> None:
    kinds = Counter(
        (s.strategy, s.kv_offload)
        for s in _selections(
            toy_root, features="none", kv="all", variants=("default",), hardware=("amd8",)
        )
    )
    # gated_fs is NVIDIA-only; single_only allows two strategies; Mooncake everywhere scalable
    assert {k for s, k in kinds if s == "single_node_tp"} == {
        None,
        "cpu_simple",
        "single_only",
        "kv_store_toy",
    }
    assert {k for s, k in kinds if s == "pd_cluster"} == {None, "kv_store_toy"}
    instances = {
        s.kv_instances
        for s in _selections(toy_root, features="none", kv="kv_store_toy", kv_instances=(1, 3))
        if s.kv_offload
    }
    assert instances == {1, 3, None}


def test_ui_facts(toy_root: RecipesRoot) -> None:
    recipe = load_recipe(toy_root, "Toy/Toy-1")
    options = EnumerationOptions(features="default", variants=("big",), hardware=("desk1",))
    items = list(enumerate_with_ui(recipe, toy_root, options))
    assert items and all(not item.ui.fits_single_node for item in items)
    assert all(item.ui.default_features for item in items)


def test_pd_nodes_spec() -> None:
    assert PdNodesSpec.parse(None) == PdNodesSpec(numbers=(1, 2), with_default=True)
    assert PdNodesSpec.parse("all").numbers == tuple(range(1, 17))
    with pytest.raises(UsageError, match="--pd-nodes: '17'"):
        PdNodesSpec.parse("1,17")


@pytest.mark.corpus
def test_minimax_m3_counts(corpus_root: RecipesRoot) -> None:
    recipe = load_recipe(corpus_root, "MiniMaxAI/MiniMax-M3")
    counts: Counter[str] = Counter()
    pairs = set()
    for selection in enumerate_selections(recipe, corpus_root, EnumerationOptions()):
        counts[selection.strategy or ""] += 1
        pairs.add((selection.variant, selection.hardware))
    assert len(pairs) == 23
    assert counts["pd_cluster"] == 59616
    assert sum(counts.values()) == 71208
