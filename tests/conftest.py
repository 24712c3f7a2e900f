"""Suite-wide fixtures."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path

import pytest

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
