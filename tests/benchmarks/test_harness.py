"""The benchmark harness measures what it says (never how fast: no test asserts a time).

* ``measure.run_child`` reports the child's own peak RSS and exit status;
* the synthetic inputs behind the scaling target scale exactly: k clones of the nvfp4
  variant give k times the combinations, k copies of a record stay in its scope with
  a distinct major ``seed`` each;
* ``benchmarks/run.py`` runs a target end to end and prints its rows.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from provenance.audit.pipeline import AuditFilters, AuditInputs, run_audit
from provenance.model.flags import FlagSet
from provenance.model.record import EvidenceRecord
from provenance.model.scope import record_scope
from provenance.store.evidence import EvidenceStore

REPO = Path(__file__).resolve().parents[2]
BENCHMARKS = REPO / "benchmarks"


@pytest.fixture(scope="module")
def synthetic() -> Iterator[ModuleType]:
    """``benchmarks/synthetic.py`` (a script beside the runner, not a package)."""
    sys.path.insert(0, str(BENCHMARKS))
    try:
        import synthetic

        yield synthetic
    finally:
        sys.path.remove(str(BENCHMARKS))


_MEASURE = """
import json, sys
sys.path.insert(0, sys.argv[1])
import measure
py = sys.executable
big = measure.run_child([py, "-c", "x = bytearray(80_000_000); x[-1] = 1"])
small = measure.run_child([py, "-c", "pass"])
failed = measure.run_child([py, "-c", "raise SystemExit(1)"])
try:
    measure.run_child([py, "-c", "raise SystemExit(3)"])
    error = ""
except RuntimeError as exc:
    error = str(exc)
middle = measure.median([big, small, failed])
print(json.dumps({
    "big": [big.rss_mb, big.returncode, big.cpu == big.user + big.sys],
    "small": [small.rss_mb, small.returncode],
    "failed": failed.returncode,
    "error": error,
    "median": [middle.rss_mb == big.rss_mb, middle.returncode],
}))
"""


def test_run_child_reports_the_childs_own_peak_rss_and_status() -> None:
    """Measured from a small process, as the runner does: a forked child's peak RSS
    starts at its parent's, so this test's own (large) process would blur it."""
    done = subprocess.run(
        [sys.executable, "-c", _MEASURE, str(BENCHMARKS)],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    got = json.loads(done.stdout)
    big_rss, big_status, cpu_is_the_sum = got["big"]
    small_rss, small_status = got["small"]
    assert big_status == small_status == 0 and cpu_is_the_sum
    assert big_rss >= 80 > small_rss
    assert got["failed"] == 1  # 1 is a gate result, not a failure of the run
    assert "exited 3" in got["error"]
    assert got["median"] == [True, 1]


@pytest.mark.parametrize("scale", [2, 3])
def test_scaled_recipe_has_exactly_k_times_the_combinations(
    synthetic: ModuleType, tmp_path: Path, scale: int
) -> None:

    def combinations(k: int) -> int:
        root = tmp_path / f"root-{k}"
        names = synthetic.scaled_recipes_root(REPO / "recipes", root, k)
        assert names == synthetic.clone_names(k) and len(names) == k
        report = run_audit(
            AuditInputs(
                recipes=("MiniMaxAI/MiniMax-M3",),
                recipes_root=root,
                ledger=REPO / "ledger",
                evidence=REPO / "evidence",
            ),
            AuditFilters(variants=tuple(names), hardware=(synthetic.HARDWARE,)),
        )
        return report.summary.combinations

    single = combinations(1)
    assert single > 1000
    assert combinations(scale) == scale * single


def test_scaled_evidence_copies_stay_in_scope_with_a_distinct_seed(
    synthetic: ModuleType, tmp_path: Path
) -> None:
    source = EvidenceStore(tmp_path / "source")
    originals = sorted(EvidenceStore(REPO / "evidence").iter_records(), key=lambda r: r.id)[:4]
    for record in originals:
        source.put(record)
    count = synthetic.scaled_evidence(tmp_path / "source", tmp_path / "scaled", 3)
    assert count == 3 * len(originals)
    scaled = list(EvidenceStore(tmp_path / "scaled").iter_records())
    assert len({r.id for r in scaled}) == count

    def without_seed(record: EvidenceRecord) -> tuple[str, dict[str, FlagSet]]:
        key = record.config_key.removesuffix("-s2").removesuffix("-s3")
        return key, {role: flags.without(["seed"]) for role, flags in record.roles.items()}

    for original in originals:
        copies = [r for r in scaled if without_seed(r) == without_seed(original)]
        assert len(copies) == 3
        assert {record_scope(r) for r in copies} == {record_scope(original)}
        seeds = {tuple(sorted(f.get("seed", "") for f in r.roles.values())) for r in copies}
        assert len(seeds) == 3  # the original has none, each copy its own


def test_runner_runs_a_target_and_prints_its_rows(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, str(BENCHMARKS / "run.py"), "--only", "startup", "--repeat", "1"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert "startup:" in done.stdout
    assert "provenance --help (median)" in done.stdout
    assert "peak RSS" in done.stdout
