"""``provenance combos`` core: every selectable combination of one recipe, rendered.

:func:`list_combinations` loads the recipes root and the recipe, checks the
filters name things that exist, and yields one
:class:`~provenance.model.combination.Combination` per reachable selection.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from provenance.errors import UsageError
from provenance.model.combination import Combination
from provenance.recipes.enumerate.selections import (
    EnumerationOptions,
    PdNodesSpec,
    enumerate_selections,
)
from provenance.recipes.load.loader import Recipe, RecipesRoot, load_recipe, load_recipes_root
from provenance.recipes.render.synthesis import Renderer


def default_recipes_root(cwd: Path | None = None, recipe: str | None = None) -> Path:
    """The recipes root used when ``--recipes-root`` is not given, as for ``audit``.

    The recipes checkout at or around the current directory, else the embedded recipes
    root (:func:`provenance.recipes.source.default_recipes`); a ``recipe`` the embedded
    root lacks is a usage error (:func:`provenance.recipes.source.missing_recipe`).
    """
    from provenance.recipes.source import default_recipes, missing_recipe

    found, how = default_recipes(cwd)
    missing = missing_recipe(found, recipe) if how == "embedded" and recipe else None
    if missing is not None:
        raise missing
    if (found / "taxonomy.yaml").is_file():
        return found
    raise UsageError(
        "no recipes root: the current directory has no taxonomy.yaml",
        hint="pass --recipes-root pointing at a vllm-project/recipes checkout",
    )


class CombosRequest(BaseModel):
    """What ``provenance combos`` was asked for."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    recipe: str
    recipes_root: Path | None = None
    options: EnumerationOptions = EnumerationOptions()


@dataclass(frozen=True)
class CombosListing:
    recipe: Recipe
    root: RecipesRoot
    combinations: Iterator[Combination]


def _check_filters(recipe: Recipe, root: RecipesRoot, options: EnumerationOptions) -> None:
    known = {
        "--variant": (options.variants, set(recipe.spec.variants or {})),
        "--hardware": (options.hardware, set(root.taxonomy.hardware_profiles)),
        "--strategy": (options.strategies, set(root.strategies) - set(root.kv_store)),
    }
    for option, (wanted, names) in known.items():
        unknown = sorted(set(wanted or ()) - names)
        if unknown:
            raise UsageError(
                f"{option}: unknown {', '.join(unknown)}",
                hint=f"choose from {', '.join(sorted(names))}",
            )
    kv_filter = options.kv_filter()
    if kv_filter is not None:
        kv_names = set(root.taxonomy.kv_offload or {}) | set(root.kv_store)
        unknown = sorted(set(kv_filter) - kv_names - {""})
        if unknown:
            raise UsageError(
                f"--kv: unknown {', '.join(unknown)}",
                hint=f"use off, all or some of {', '.join(sorted(kv_names))}",
            )
    PdNodesSpec.parse(options.pd_nodes)


def _combinations(
    recipe: Recipe, root: RecipesRoot, options: EnumerationOptions
) -> Iterator[Combination]:
    renderer = Renderer(recipe, root)
    for selection in enumerate_selections(recipe, root, options):
        yield Combination(
            recipe=recipe.hf_id, selection=selection, result=renderer.render(selection)
        )


def list_combinations(request: CombosRequest) -> CombosListing:
    """Load the recipe and return its reachable combinations (rendered lazily)."""
    root_path = request.recipes_root or default_recipes_root(recipe=request.recipe)
    root = load_recipes_root(root_path)
    recipe = load_recipe(root, request.recipe)
    _check_filters(recipe, root, request.options)
    return CombosListing(
        recipe=recipe, root=root, combinations=_combinations(recipe, root, request.options)
    )
