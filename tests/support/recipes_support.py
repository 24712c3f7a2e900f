"""Paths and golden-data comparison shared by the recipe engine tests."""

from __future__ import annotations

import gzip
import json
import os
from collections import defaultdict
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import Any

from provenance.recipes.enumerate.selections import EnumerationOptions, enumerate_selections
from provenance.recipes.load.loader import Recipe, RecipesRoot
from provenance.recipes.render.records import (
    RecordDigester,
    group_digest,
    group_key,
    selection_record,
)
from provenance.recipes.render.synthesis import Renderer

REPO = Path(__file__).resolve().parents[2]
CORPUS = REPO.parent / "shared" / "corpus"
CORPUS_ROOT = CORPUS / "recipes"
HISTORY = CORPUS / "recipes-history" / "MiniMax-M3"
FIXTURE_ROOT = REPO / "tests" / "fixtures" / "recipes" / "toy-root"
#: A clone of vllm-project/recipes with its history (bare or not): ``$PROVENANCE_RECIPES_GIT``,
#: else the mirror beside the checkout
RECIPES_GIT = Path(
    os.environ.get(
        "PROVENANCE_RECIPES_GIT", REPO.parent / ".mirror" / "vllm-project+recipes" / "repo"
    )
)


def recipes_git() -> Path:
    """:data:`RECIPES_GIT`, or skip the test when it is not a git repository."""
    import pytest

    if not (RECIPES_GIT / "objects").is_dir() and not (RECIPES_GIT / ".git").is_dir():
        pytest.skip(f"needs a vllm-project/recipes clone with history at {RECIPES_GIT}")
    return RECIPES_GIT


BAD_FIXTURES = REPO / "tests" / "fixtures" / "recipes" / "bad"
GOLDEN = REPO / "tests" / "data" / "recipes_golden"


def full_checkout() -> Path | None:
    """A vllm-project/recipes checkout at 8959cf6 (``PROVENANCE_RECIPES_ROOT``), if present."""
    given = os.environ.get("PROVENANCE_RECIPES_ROOT")
    path = Path(given) if given else Path("/tmp/recipes-8959cf6")
    return path if (path / "taxonomy.yaml").is_file() and (path / "models").is_dir() else None


@cache
def golden(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(gzip.decompress((GOLDEN / name).read_bytes()))
    return data


def compare_with_golden(
    recipe: Recipe,
    root: RecipesRoot,
    options: EnumerationOptions,
    expected: Mapping[str, Any],
) -> tuple[int, list[str]]:
    """Enumerate + render + digest, compare with one golden entry; (records, problems)."""
    digester = RecordDigester(Renderer(recipe, root))
    mine: dict[str, list[str]] = defaultdict(list)
    count = 0
    for selection in enumerate_selections(recipe, root, options):
        mine[group_key(selection_record(selection))].append(digester.digest(selection))
        count += 1
    groups: Mapping[str, Any] = expected["groups"]
    problems: list[str] = []
    for key in sorted(set(groups) | set(mine)):
        want = groups.get(key)
        have = mine.get(key, [])
        if want is None:
            problems.append(f"{key}: {len(have)} records the oracle does not produce")
            continue
        if len(have) == want["n"] and group_digest(have) == want["digest"]:
            continue
        text = f"{key}: {len(have)} records, oracle {want['n']}"
        packed = want.get("records")
        if packed:
            width = len(packed) // want["n"]
            theirs = {packed[i : i + width] for i in range(0, len(packed), width)}
            ours = {d[:width] for d in have}
            text += f" ({len(theirs - ours)} missing or different, {len(ours - theirs)} extra)"
        problems.append(text)
    if count != expected["count"]:
        problems.insert(0, f"{count} records in all, oracle {expected['count']}")
    return count, problems
