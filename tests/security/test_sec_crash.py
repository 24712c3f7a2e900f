"""Crash safety end to end: the real CLI killed with SIGKILL, again and again.

Each iteration starts ``provenance ingest inferencex`` (one of several
revisions of a toy InferenceX repository, ~100 records each) or ``provenance
ledger add-sweep`` as a real process and SIGKILLs it — half of the time at a
random moment, half of the time while it holds the writer lock (that is, in
the middle of writing records and ledger entries). After every kill the store
verifies (every record's hash, no dangling reference, every ledger file
parses); at the end every write whose process finished is still there
(records lost: 0), and a final ``provenance verify --inferencex`` re-extracts
every record from git. ``PROVENANCE_CRASH_ITERATIONS`` raises the number of
kills (the suite runs 6; the figures in docs/security.md come from 60).
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from click.testing import CliRunner
from inferencex_fixtures import MASTER_SINGLE, RepoBuilder
from sec_fixtures import (
    LAUNCHER,
    MASTER,
    RUNNERS_PATH,
    SCRIPT,
    base_files,
    run_provenance,
    tree_state,
)

from provenance.cli.main import cli
from provenance.errors import EXIT_INTEGRITY, EXIT_OK
from provenance.evidence.inferencex.ingest import extract
from provenance.ingest import inferencex as write_module
from provenance.model.ledger import PrRef
from provenance.store.evidence import EvidenceStore
from provenance.store.ledger import Ledger
from provenance.store.lock import writer_lock
from provenance.store.verify import verify

ITERATIONS = int(os.environ.get("PROVENANCE_CRASH_ITERATIONS", "6"))
KEYS_PER_COMMIT = 8
PR_BASE = 10
REPO_NAME = "SemiAnalysisAI/InferenceX"


class _AnyHash(str):
    """Equal to any string (the lock file's bytes change while it is held)."""

    def __eq__(self, other: object) -> bool:
        return isinstance(other, str)

    __hash__ = str.__hash__


ANY_HASH = _AnyHash()


def _master(keys: int) -> str:
    return "\n".join(
        MASTER_SINGLE.replace("toy-fp4-b300-vllm-mtp", f"toy-fp4-b300-vllm-mtp-k{k}")
        for k in range(keys)
    )


def build_history(root: Path, commits: int = 3) -> tuple[RepoBuilder, list[str]]:
    builder = RepoBuilder(root)
    files = base_files()
    single_node = {path: files[path] for path in (RUNNERS_PATH, LAUNCHER, SCRIPT)}
    revs = []
    for i in range(commits):
        change = {MASTER: _master(KEYS_PER_COMMIT * (i + 1))}
        revs.append(builder.commit(f"More toy keys (#{PR_BASE + i})", {**single_node, **change}))
    return builder, revs


def _command(kind: str, repo: Path, rev: str, out: Path, run_id: int) -> list[str]:
    ledger, evidence = str(out / "ledger"), str(out / "evidence")
    if kind == "ingest":
        # no extraction cache: a cached re-extraction finishes before most kills land
        base = ["ingest", "inferencex", str(repo), "--rev", rev, "--no-cache"]
        return [*base, "--ledger", ledger, "--evidence", evidence]
    return [
        "ledger",
        "add-sweep",
        "--pr",
        f"{REPO_NAME}#{PR_BASE}",
        "--run",
        str(run_id),
        "--attempt",
        "1",
        "--head",
        rev,
        "--conclusion",
        "success",
        "--ledger",
        ledger,
    ]


def _start(args: list[str], cwd: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", "from provenance.cli.main import main; main()", *args],
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _duration(args: list[str], cwd: Path) -> float:
    """Seconds one run of ``args`` takes to the end, start-up included."""
    start = time.monotonic()
    done = run_provenance(args, cwd=cwd)
    assert done.returncode == EXIT_OK, done.stderr
    return time.monotonic() - start


def _wait_for_lock(lock: Path, child: subprocess.Popen[str], limit: float = 60.0) -> bool:
    """Poll until the child holds the writer lock (the lock file names its pid)."""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline and child.poll() is None:
        try:
            if f"pid={child.pid} " in lock.read_text():
                return True
        except OSError:
            pass
        time.sleep(0.002)
    return False


@dataclass
class Tally:
    kills: int = 0
    kills_in_write: int = 0
    finished: int = 0
    finished_ingests: set[str] = field(default_factory=set)
    finished_sweeps: set[int] = field(default_factory=set)


def _check_consistent(out: Path) -> None:
    report = verify(out / "ledger", out / "evidence")
    assert report.ok, [r for r in report.records if r.status != "ok"]
    Ledger(out / "ledger").entries()  # every ledger file parses and validates


@pytest.mark.slow
def test_sigkill_of_real_ingest_and_add_sweep_loses_nothing(tmp_path: Path) -> None:
    rng = random.Random(9_2026)
    builder, revs = build_history(tmp_path / "inferencex")
    out = tmp_path / "out"
    lock = out / "ledger" / ".lock"
    tally = Tally()
    # how long each kind of command runs here, undisturbed: the random kills land
    # within that time whatever the speed of the machine and of the tool
    duration = {
        kind: _duration(_command(kind, builder.root, revs[-1], tmp_path / "warm", 999), tmp_path)
        for kind in ("ingest", "add-sweep")
    }
    for iteration in range(ITERATIONS):
        kind = rng.choice(["ingest", "ingest", "add-sweep"])
        rev = rng.choice(revs)
        run_id = 1000 + iteration
        args = _command(kind, builder.root, rev, out, run_id)
        child = _start(args, tmp_path)
        if iteration % 2 == 0:
            in_write = _wait_for_lock(lock, child)
            time.sleep(rng.uniform(0.0, 0.05))
        else:
            in_write = False
            time.sleep(rng.uniform(0.0, 0.9 * duration[kind]))
        child.send_signal(signal.SIGKILL)
        _, stderr = child.communicate()
        if child.returncode == -signal.SIGKILL:
            tally.kills += 1
            tally.kills_in_write += in_write
        else:
            assert child.returncode == EXIT_OK, stderr
            tally.finished += 1
            if kind == "ingest":
                tally.finished_ingests.add(rev)
            else:
                tally.finished_sweeps.add(run_id)
        _check_consistent(out)
    # records lost: every finished write is present, intact and cited
    store = EvidenceStore(out / "evidence")
    ledger = Ledger(out / "ledger")
    cited = {r for e in ledger.entries() for r in e.records}
    lost = 0
    for rev in tally.finished_ingests:
        for record in extract(builder.root, rev, None, None, []).records:
            present = record.id in store.ids() and store.get(record.id) == record
            lost += not (present and record.id in cited)
    entry = ledger.entry(PrRef(repo=REPO_NAME, number=PR_BASE))
    recorded = {s.run_id for s in entry.sweeps} if entry else set()
    lost += len(tally.finished_sweeps - recorded)
    assert lost == 0
    assert tally.kills >= ITERATIONS // 2
    # a clean run afterwards completes, and the whole store re-extracts from git
    clean = run_provenance(_command("ingest", builder.root, revs[-1], out, 0), cwd=tmp_path)
    assert clean.returncode == EXIT_OK, clean.stderr
    final = run_provenance(
        [
            "verify",
            "--ledger",
            str(out / "ledger"),
            "--evidence",
            str(out / "evidence"),
            "--inferencex",
            str(builder.root),
            "--format",
            "json",
        ],
        cwd=tmp_path,
    )
    assert final.returncode == EXIT_OK, final.stdout + final.stderr
    json.loads(final.stdout)
    print(  # figures for docs/security.md (pytest -s)
        f"\ne2e crash safety: {tally.kills} SIGKILLs survived "
        f"({tally.kills_in_write} while holding the writer lock), {tally.finished} runs "
        f"finished, records lost: {lost}, records stored: {len(store.ids())}, "
        f"leftover temp files: {len(store.leftover_temp_files())}"
    )


def test_two_concurrent_ingests_one_waits_or_fails_clearly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    builder, revs = build_history(tmp_path / "inferencex", commits=2)
    out = tmp_path / "out"
    args = [_command("ingest", builder.root, rev, out, 0) for rev in revs]
    # two real ingests at once: the second waits for the lock, both finish
    children = [_start(a, tmp_path) for a in args]
    results = [(c.wait(timeout=300), c.communicate()) for c in children]
    assert [code for code, _ in results] == [EXIT_OK, EXIT_OK], results
    _check_consistent(out)
    store = EvidenceStore(out / "evidence")
    for rev in revs:
        assert {r.id for r in extract(builder.root, rev, None, None, []).records} <= set(
            store.ids()
        )
    before = tree_state(out)
    with writer_lock(out / "ledger", timeout=0):
        # a writer that may not wait fails clearly (exit 4, names the holder), writes nothing
        sweep = run_provenance(
            [*_command("add-sweep", builder.root, revs[0], out, 77), "--wait", "0"], cwd=tmp_path
        )
        assert sweep.returncode == EXIT_INTEGRITY, sweep.stderr
        assert sweep.stderr.startswith("ledger locked: another writer holds the ledger lock")
        assert f"pid={os.getpid()} " in sweep.stderr
        # so does an ingest whose wait runs out
        monkeypatch.setattr(
            write_module,
            "writer_lock",
            lambda root, timeout: writer_lock(root, timeout=0.2),
        )
        result = CliRunner().invoke(cli, args[0])
        assert result.exit_code == EXIT_INTEGRITY, result.output
        assert result.output.startswith("ledger locked: ")
        assert tree_state(out) == {**before, str(out / "ledger" / ".lock"): ANY_HASH}
        # and a real ingest started now waits, then finishes once the lock is free
        waiting = _start(args[1], tmp_path)
        time.sleep(1.0)
        assert waiting.poll() is None
    assert waiting.wait(timeout=300) == EXIT_OK, waiting.communicate()
    _check_consistent(out)
