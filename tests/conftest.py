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

#: Variables the tool reads from the environment to decide how it presents output
#: (``CI`` turns on progress lines on stderr, the colour and width variables change the
#: layout) or whom it calls (``GITHUB_TOKEN``). CI machines and developers' shells set
#: them; a test that means one sets it itself, so the suite reads the same everywhere.
AMBIENT = ("CI", "GITHUB_ACTIONS", "NO_COLOR", "FORCE_COLOR", "COLUMNS", "GITHUB_TOKEN", "GH_TOKEN")


@pytest.fixture(scope="session", autouse=True)
def _neutral_environment() -> Iterator[None]:
    """Unset :data:`AMBIENT` for the whole session, module fixtures and subprocesses included."""
    with pytest.MonkeyPatch.context() as patch:
        for name in AMBIENT:
            patch.delenv(name, raising=False)
        yield


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
