"""Suite-wide settings and fixtures."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import settings

# No test depends on how long one example takes: the suite runs on shared, loaded
# machines (2 cores, load 5-10), where Hypothesis's 200 ms per-example deadline fails
# tests that are merely slow. Every @settings(...) inherits this profile.
settings.register_profile("provenance", deadline=None)
settings.load_profile("provenance")

_CACHE_DIRS = itertools.count()


@pytest.fixture(scope="session")
def _cache_base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("provenance-cache")


@pytest.fixture(autouse=True)
def _private_extraction_cache(_cache_base: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Each test gets its own (lazily created) extraction cache, never ``~/.cache``.

    ``ingest inferencex`` caches extractions by commit; tests build repositories
    whose commits can coincide, and some patch the extractor, so a cache shared
    between tests could hide what a test means to exercise. Subprocesses inherit it.
    """
    monkeypatch.setenv("PROVENANCE_CACHE_DIR", str(_cache_base / str(next(_CACHE_DIRS))))
    yield
