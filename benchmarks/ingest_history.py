"""Whole-history ingest, incremental ingest and scoped audit, measured (issue #19).

python benchmarks/ingest_history.py full MIRROR [--rev REV] [--jobs N] [--out DIR]
python benchmarks/ingest_history.py incremental MIRROR [--rev REV] [--out DIR]
python benchmarks/ingest_history.py audit RECIPE --ledger L --evidence E [--repeat N]

* ``full``: ``provenance ingest inferencex MIRROR --rev REV --vllm-history`` with a
  fresh, empty extraction cache, ledger and store under DIR (cold cache).
* ``incremental``: builds a ledger at the second-newest planned merge of REV (the
  plan's merge N-1; not timed), then times ``--since-ledger`` up to REV's newest
  planned merge N: one new merge, extracted with no cache (``--warm-cache DIR``: copy
  the extraction cache of a ``full`` run first, so the setup itself is quick).
* ``audit``: times ``provenance audit RECIPE`` against a ledger and store (median of
  ``--repeat`` runs, each a fresh process, after one warm-up run).

Each ingest runs as a child process; wall time, CPU time (user + system of the
children) and peak RSS (the largest child's ``ru_maxrss``) are printed as JSON.
The machine's load average is printed with them: on a shared machine wall time is
only comparable with the same load.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from provenance.evidence.inferencex.plan import plan_vllm_merges
from provenance.sources.git import open_repo, resolve_commit


def _provenance() -> list[str]:
    return [sys.executable, "-m", "provenance"]


def timed(argv: list[str]) -> dict[str, Any]:
    """Run ``argv``; wall, CPU and peak RSS of the child, and its JSON summary."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(argv)} exited {done.returncode}:\n{done.stderr[-2000:]}")
    summary: Any = None
    try:
        summary = json.loads(done.stdout)
    except ValueError:
        summary = None
    return {
        "wall_s": round(wall, 2),
        "cpu_s": round((after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), 2),
        "peak_rss_mb": round(after.ru_maxrss / 1024, 1),
        "load_average": os.getloadavg(),
        "summary": summary,
    }


def ingest_argv(mirror: Path, rev: str, out: Path, *extra: str) -> list[str]:
    return [
        *_provenance(),
        "ingest",
        "inferencex",
        str(mirror),
        "--rev",
        rev,
        "--ledger",
        str(out / "ledger"),
        "--evidence",
        str(out / "evidence"),
        "--cache-dir",
        str(out / "cache"),
        "--format",
        "json",
        *extra,
    ]


def records_of(result: dict[str, Any]) -> int | None:
    summary = result.get("summary") or {}
    inner = summary.get("summary") or {}
    value = inner.get("records")
    return value if isinstance(value, int) else None


def full(args: argparse.Namespace) -> dict[str, Any]:
    out = Path(args.out or tempfile.mkdtemp(prefix="ingest-full-"))
    result = timed(
        ingest_argv(args.mirror, args.rev, out, "--vllm-history", "--jobs", str(args.jobs))
    )
    return {"mode": "full", "out": str(out), "records": records_of(result), **result}


def incremental(args: argparse.Namespace) -> dict[str, Any]:
    repo = open_repo(args.mirror)
    merges = plan_vllm_merges(repo, resolve_commit(repo, args.rev))
    if len(merges) < 2:
        raise SystemExit("fewer than two planned merges: nothing to ingest incrementally")
    previous, newest = merges[-2], merges[-1]
    out = Path(args.out or tempfile.mkdtemp(prefix="ingest-incremental-"))
    out.mkdir(parents=True, exist_ok=True)
    if args.warm_cache:  # a cache filled by ``full`` makes the (untimed) setup quick
        subprocess.run(["cp", "-r", str(args.warm_cache), str(out / "cache")], check=True)
    # the ledger at merge N-1 (not timed), then merge N with no cache: one real extraction
    setup = timed(ingest_argv(args.mirror, previous.sha, out, "--vllm-history"))
    result = timed(ingest_argv(args.mirror, newest.sha, out, "--since-ledger", "--no-cache"))
    return {
        "mode": "incremental",
        "out": str(out),
        "from": previous.sha,
        "to": newest.sha,
        "to_pr": newest.pr,
        "setup_wall_s": setup["wall_s"],
        "records": records_of(result),
        **result,
    }


def audit(args: argparse.Namespace) -> dict[str, Any]:
    argv = [
        *_provenance(),
        "audit",
        args.recipe,
        "--ledger",
        str(args.ledger),
        "--evidence",
        str(args.evidence),
        "--format",
        "json",
    ]
    timed(argv)  # warm-up: page cache, proven-file cache
    runs = sorted(timed(argv)["wall_s"] for _ in range(args.repeat))
    return {
        "mode": "audit",
        "recipe": args.recipe,
        "ledger": str(args.ledger),
        "runs_s": runs,
        "median_s": runs[len(runs) // 2],
        "load_average": os.getloadavg(),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="mode", required=True)
    for name in ("full", "incremental"):
        mode = sub.add_parser(name)
        mode.add_argument("mirror", type=Path)
        mode.add_argument("--rev", default="HEAD")
        mode.add_argument("--out", default=None)
        mode.add_argument("--jobs", type=int, default=2)
        mode.add_argument("--warm-cache", type=Path, default=None)
    mode = sub.add_parser("audit")
    mode.add_argument("recipe")
    mode.add_argument("--ledger", type=Path, required=True)
    mode.add_argument("--evidence", type=Path, required=True)
    mode.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    run = {"full": full, "incremental": incremental, "audit": audit}[args.mode]
    report = run(args)
    report.pop("summary", None)
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
