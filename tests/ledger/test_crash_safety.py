"""Crash safety and concurrent writers, with real processes.

A child process writes evidence records and ledger entries in a loop (the
ingest write order: record first, then the entry, under the writer lock) and
logs every write that returned. The parent SIGKILLs it at random moments.
After every kill: ``verify`` passes (nothing corrupt, nothing dangling), every
logged record is intact and cited by its entry (nothing lost), and no file is
half-written. ``PROVENANCE_CRASH_ITERATIONS`` raises the number of kills.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from click.testing import CliRunner
from ledger_workspace import Workspace

from provenance.cli.main import cli
from provenance.errors import EXIT_OK
from provenance.model.ledger import PrRef
from provenance.store.lock import writer_lock
from provenance.store.verify import verify

SUPPORT = Path(__file__).resolve().parents[1] / "support"
ITERATIONS = int(os.environ.get("PROVENANCE_CRASH_ITERATIONS", "8"))

WRITER = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    sys.path.insert(0, {here!r})
    from ledger_factories import make_entry, make_record, make_sweep
    from provenance.store.ledger import Ledger
    from provenance.store.lock import writer_lock
    from provenance.model.ledger import PrRef
    from provenance.store.evidence import EvidenceStore

    ledger_root, evidence_root, log_path = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]
    start, count = int(sys.argv[4]), int(sys.argv[5])
    store, ledger = EvidenceStore(evidence_root), Ledger(ledger_root)
    log = open(log_path, "a", buffering=1)
    print("ready", flush=True)
    for i in range(start, start + count):
        pr = PrRef(repo="SemiAnalysisAI/InferenceX", number=1 + i % 3)
        with writer_lock(ledger_root, timeout=60):
            record_id, _ = store.put(make_record(i))
            ledger.merge_entry(make_entry((record_id,), pr=pr, sweeps=(make_sweep(i + 1),)))
        log.write(f"{{pr.number}} {{record_id}} {{i + 1}}\\n")
    print("done", flush=True)
    """
).format(here=str(SUPPORT))


def start_writer(workspace: Workspace, log: Path, start: int, count: int) -> subprocess.Popen[str]:
    child = subprocess.Popen(
        [
            sys.executable,
            "-c",
            WRITER,
            str(workspace.ledger_root),
            str(workspace.evidence_root),
            str(log),
            str(start),
            str(count),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None
    assert child.stdout.readline().strip() == "ready"
    return child


def logged_writes(log: Path) -> list[tuple[int, str, int]]:
    if not log.exists():
        return []
    text = log.read_text()
    complete = text[: text.rfind("\n") + 1]  # a killed writer may leave a partial last line
    rows = []
    for line in complete.splitlines():
        number, record_id, run_id = line.split()
        rows.append((int(number), record_id, int(run_id)))
    return rows


def assert_nothing_lost(workspace: Workspace, log: Path) -> int:
    """Every logged write is in place; returns how many writes were logged."""
    writes = logged_writes(log)
    entries = {e.pr.number: e for e in workspace.ledger.entries()}
    for number, record_id, run_id in writes:
        assert workspace.store.get(record_id).id == record_id
        assert record_id in entries[number].records
        assert run_id in {s.run_id for s in entries[number].sweeps}
    return len(writes)


def test_sigkill_at_random_points_loses_nothing(workspace: Workspace, tmp_path: Path) -> None:
    rng = random.Random(20261130)
    log = tmp_path / "writes.log"
    kills = 0
    for iteration in range(ITERATIONS):
        child = start_writer(workspace, log, iteration * 100_000, 100_000)
        time.sleep(rng.uniform(0.0, 0.3))
        child.send_signal(signal.SIGKILL)
        child.wait()
        kills += child.returncode == -signal.SIGKILL
        report = verify(workspace.ledger_root, workspace.evidence_root)
        assert report.ok, [r for r in report.records if r.status != "ok"]
        assert_nothing_lost(workspace, log)
    written = assert_nothing_lost(workspace, log)
    assert kills == ITERATIONS
    assert written > 0
    leftovers = len(workspace.store.leftover_temp_files())
    workspace.store.remove_stale_temp_files()  # every writer is dead: all are stale
    assert workspace.store.leftover_temp_files() == []
    with writer_lock(workspace.ledger_root):  # the next writer cleans the ledger
        assert not any(p.name.endswith(".tmp") for p in workspace.ledger_root.rglob("*"))
    ledger, evidence = str(workspace.ledger_root), str(workspace.evidence_root)
    result = CliRunner().invoke(cli, ["verify", "--ledger", ledger, "--evidence", evidence])
    assert result.exit_code == EXIT_OK, result.output
    print(  # figures for the report (pytest -s)
        f"\ncrash-safety: {kills} SIGKILLs survived, {written} logged writes, 0 records lost, "
        f"{len(workspace.store.ids())} records stored, "
        f"{leftovers} leftover temp files (removed)"
    )


def test_concurrent_writers_do_not_lose_updates(workspace: Workspace, tmp_path: Path) -> None:
    per_writer = 15
    logs = [tmp_path / "a.log", tmp_path / "b.log"]
    children = [
        start_writer(workspace, logs[0], 0, per_writer),
        start_writer(workspace, logs[1], 1000, per_writer),
    ]
    for child in children:
        assert child.stdout is not None
        assert child.stdout.read().strip() == "done"
        assert child.wait(timeout=120) == 0
    report = verify(workspace.ledger_root, workspace.evidence_root)
    assert report.ok
    assert report.summary.orphans == 0
    assert sum(assert_nothing_lost(workspace, log) for log in logs) == 2 * per_writer
    records = [r for e in workspace.ledger.entries() for r in e.records]
    assert len(records) == len(set(records)) == 2 * per_writer
    sweeps = [s.run_id for e in workspace.ledger.entries() for s in e.sweeps]
    assert sorted(sweeps) == sorted([*range(1, 16), *range(1001, 1016)])
    assert {e.pr for e in workspace.ledger.entries()} == {
        PrRef(repo="SemiAnalysisAI/InferenceX", number=n) for n in (1, 2, 3)
    }
