"""Fixtures for the InferenceX extractor tests (helpers live in ``inferencex_fixtures``)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from inferencex_fixtures import RepoBuilder


@pytest.fixture
def make_repo(tmp_path: Path) -> Callable[[], RepoBuilder]:
    def build() -> RepoBuilder:
        return RepoBuilder(tmp_path / "inferencex")

    return build
