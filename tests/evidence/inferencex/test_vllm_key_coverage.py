"""``benchmarks/vllm_key_coverage.py`` on the toy InferenceX fixture."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

from inferencex_fixtures import RepoBuilder, toy_base_files

from provenance.evidence.inferencex.ingest import extract

BENCHMARKS = Path(__file__).resolve().parents[3] / "benchmarks"


def test_keys_without_records_are_listed_with_their_codes(
    make_repo: Callable[[], RepoBuilder],
) -> None:
    builder = make_repo()
    files = toy_base_files()
    recipe = next(p for p in files if p.startswith("benchmarks/multi_node/srt-slurm-recipes/"))
    del files[recipe]
    builder.commit("recipe gone (#1)", files)
    sys.path.insert(0, str(BENCHMARKS))
    try:
        import vllm_key_coverage
    finally:
        sys.path.remove(str(BENCHMARKS))
    found = vllm_key_coverage.coverage(extract(builder.root, "HEAD", None, None, []))
    assert found.without_records() == {"toy-fp4-b300-dynamo-vllm": ["recipe-not-in-tree"]}
    assert "toy-fp4-b300-vllm-mtp" in found.recorded
    report = found.to_json()
    assert report["keys_without_records_by_code"] == {"recipe-not-in-tree": 1}
