"""Fixtures of the recipe engine tests (recipes roots)."""

from __future__ import annotations

import pytest
from recipes_support import CORPUS_ROOT, FIXTURE_ROOT

from provenance.recipes.load.loader import RecipesRoot, load_recipes_root


@pytest.fixture(scope="session")
def toy_root() -> RecipesRoot:
    return load_recipes_root(FIXTURE_ROOT)


@pytest.fixture(scope="session")
def corpus_root() -> RecipesRoot:
    if not (CORPUS_ROOT / "taxonomy.yaml").is_file():
        pytest.skip("../shared/corpus is not present")
    return load_recipes_root(CORPUS_ROOT)
