#!/usr/bin/env python3
"""Replay of the recipes history: the PR gate over every first-parent recipes commit.

python benchmarks/replay.py [--repo DIR] [--until REV] [--csv FILE] [--provenance PATH]
    [--jobs N] [--limit N] [--commits SHA ...] [--timeout SECONDS] [--blocks FILE]
python benchmarks/replay.py --summary-only FILE [--blocks FILE]

Every first-parent commit C of the recipes repository up to ``--until`` (default:
8959cf6, the reference revision, when the repository has it, else HEAD) that touches
``models/``, ``strategies/``, ``taxonomy.yaml`` or ``kv_store/`` is audited as a pull
request, as the gate runs in CI:

    provenance audit --repo REPO --base C^ --head C --format json --output FILE

``--repo`` may be a bare mirror (the audit reads both revisions from git). The tool is
the one a new user gets: this checkout's HEAD (``git archive``, so edits in the work
tree stay out) installed with ``pip install`` into a new virtual environment, run from
a scratch directory with the ledger packaged in the wheel and a private local cache
(``PROVENANCE_CACHE_DIR``, warm after the first commit, as a user's). ``--provenance
PATH`` times an installed console script instead.

One CSV row per commit, appended and flushed as it finishes: exit code, user + sys CPU,
peak RSS and wall of the audit process (``os.wait4``), the JSON report's size, the
blocking categories found in it (``name=count``: combinations for the change groups'
``block_reason``, one per claim and per invalid recipe) and a note for a run that did
not end in a gate decision. A rerun skips the commits already in the CSV. The
distribution (pass / block / error, categories, CPU, memory, JSON size, block rate per
month) is printed at the end, or from an existing CSV with ``--summary-only``;
``--blocks FILE`` writes the blocked commits with their categories.

The runner stays small (the JSON reports are read in a child, ``--extract``) because a
child's peak RSS starts at its parent's. Nothing here asserts a time.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

REPO = Path(__file__).resolve().parents[1]
DEFAULT_RECIPES = REPO.parent / ".mirror" / "vllm-project+recipes" / "repo"
REFERENCE_REV = "8959cf6"
PATHS = ("models/", "strategies/", "taxonomy.yaml", "kv_store/")
FIELDS = (
    "commit",
    "date",
    "subject",
    "exit",
    "cpu_s",
    "peak_mb",
    "wall_s",
    "json_bytes",
    "categories",
    "blocking_combinations",
    "claims",
    "note",
)
#: exit codes of ``provenance audit --repo``: 0 the gate passes, 1 it blocks, 3 an
#: invalid recipe in the head (the report is written, and the gate blocks it) or an
#: invalid shared file (no report)
EXIT_PASS, EXIT_BLOCK, EXIT_INVALID = 0, 1, 3
#: top-level lists of the diff report whose every item blocks, and the category of an
#: item that names none
BLOCKING_LISTS = {"claims": "new-claim", "errors": "invalid"}
#: keys an item may name its category by (``block_reason`` is the change groups')
CATEGORY_KEYS = ("block_reason", "category", "gate")
#: gate counters that are not blocking categories
GATE_INFORMATIONAL = frozenset({"passed", "blocking", "declared", "unbenchmarked"})
#: gate counters already counted from the report's lists
GATE_COUNTED = {"claims": "new-claim", "invalid": "invalid"}
LARGE_JSON = 10_000_000


class Commit(NamedTuple):
    sha: str
    parent: str
    date: str  # committer date, YYYY-MM-DD
    subject: str


def git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), *args], check=True, capture_output=True, text=True
    ).stdout


def resolve_until(repo: Path, until: str | None) -> str:
    """The full hash of ``until``; by default the reference revision if the repository
    has it, else HEAD."""
    for rev in (until,) if until else (REFERENCE_REV, "HEAD"):
        done = subprocess.run(
            ["git", "-C", str(repo), "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}"],
            capture_output=True,
            text=True,
        )
        if done.returncode == 0:
            return done.stdout.strip()
    raise SystemExit(f"replay: no revision {until or 'HEAD'} in {repo}")


def select_commits(repo: Path, until: str, paths: Sequence[str] = PATHS) -> list[Commit]:
    """The first-parent commits up to ``until`` that touch ``paths``, oldest first.

    A merge counts by its diff against its first parent (what the PR brought in); a
    root commit has no base to compare with and is left out.
    """
    out = git(
        repo,
        "log",
        "--first-parent",
        "--reverse",
        "--format=%H%x1f%P%x1f%cs%x1f%s",
        until,
        "--",
        *paths,
    )
    commits = []
    for line in out.splitlines():
        sha, parents, date, subject = line.split("\x1f", 3)
        if parents:
            commits.append(Commit(sha, parents.split()[0], date, subject))
    return commits


# --- the CSV ---------------------------------------------------------------------------


def prepare_csv(path: Path) -> set[str]:
    """Make ``path`` ready for appending and return the commits it already holds.

    A missing or empty file gets the header; a last line cut short (the runner was killed
    while writing it) is dropped, so the commit is run again; a file with another header
    is refused rather than mixed.
    """
    if not path.exists() or path.stat().st_size == 0:
        with path.open("w", newline="", encoding="utf-8") as handle:
            csv.writer(handle).writerow(FIELDS)
        return set()
    data = path.read_bytes()
    if not data.endswith(b"\n"):
        with path.open("r+b") as handle:
            handle.truncate(data.rfind(b"\n") + 1)
    rows = read_rows(path)
    return {row["commit"] for row in rows}


def read_rows(path: Path) -> list[dict[str, str]]:
    """The complete rows of a replay CSV (a row with missing fields is not one)."""
    with path.open(newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle)
        if tuple(reader.fieldnames or ()) != FIELDS:
            raise SystemExit(f"replay: {path} has columns {reader.fieldnames}, not {FIELDS}")
        return [row for row in reader if all(row.get(name) is not None for name in FIELDS)]


def append_row(path: Path, row: Mapping[str, object]) -> None:
    with path.open("a", newline="", encoding="utf-8") as handle:
        csv.DictWriter(handle, fieldnames=FIELDS).writerow(row)
        handle.flush()
        os.fsync(handle.fileno())


# --- the categories of a report --------------------------------------------------------


@dataclass(frozen=True)
class Extracted:
    """What blocks in one diff report: category -> count, blocking combinations, claims."""

    categories: dict[str, int]
    blocking_combinations: int
    claims: int
    passed: bool | None


def _category(item: Mapping[str, Any], default: str) -> str:
    for key in CATEGORY_KEYS:
        value = item.get(key)
        if isinstance(value, str) and value:
            return value
    return default


def _blocks(item: Mapping[str, Any]) -> bool:
    """A change group (or an item of a list added later) blocks when it says so."""
    flag = item.get("blocking")
    return flag is True or (flag is None and isinstance(item.get("block_reason"), str))


def extract_categories(report: Mapping[str, Any]) -> Extracted:
    """The blocking categories of a ``provenance.diff`` report, read generically.

    Every top-level list is read: an item of ``claims`` (``new-claim``) or ``errors``
    (``invalid``) blocks, each counted once under the category it names, if any; an item
    of any other list blocks when it says so (``blocking``), counted as its
    ``combinations`` under its ``block_reason`` (or ``blocking`` when it names none). A
    gate that fails with nothing found that way is described by its non-zero counters
    (``gate.<name>``), so a category added to the tool later still shows up.
    """
    counts: Counter[str] = Counter()
    blocking = 0
    for key, value in report.items():
        if not isinstance(value, list):
            continue
        for item in value:
            if not isinstance(item, dict):
                continue
            if key in BLOCKING_LISTS:
                counts[_category(item, BLOCKING_LISTS[key])] += 1
            elif _blocks(item):
                size = item.get("combinations", 1)
                weight = size if isinstance(size, int) else 1
                counts[_category(item, "blocking")] += weight
                blocking += weight
    gate = report.get("gate")
    gate = gate if isinstance(gate, dict) else {}
    passed = gate.get("passed") if isinstance(gate.get("passed"), bool) else None
    if passed is False and not counts:
        for name, number in gate.items():
            if name not in GATE_INFORMATIONAL and isinstance(number, int) and number > 0:
                counts[GATE_COUNTED.get(name, f"gate.{name}")] += number
        if not counts:
            counts["unexplained"] += 1
    claims = report.get("claims")
    return Extracted(
        categories=dict(counts),
        blocking_combinations=blocking,
        claims=len(claims) if isinstance(claims, list) else 0,
        passed=passed,
    )


def format_categories(categories: Mapping[str, int]) -> str:
    return ";".join(f"{name}={categories[name]}" for name in sorted(categories))


def parse_categories(text: str) -> dict[str, int]:
    out: dict[str, int] = {}
    for part in filter(None, text.split(";")):
        name, _, number = part.rpartition("=")
        out[name] = int(number)
    return out


def _extract_in_child(report: Path) -> Extracted | str:
    """Read ``report`` in a child process (the runner stays small); a note on failure."""
    done = subprocess.run(
        [sys.executable, str(Path(__file__).resolve()), "--extract", str(report)],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        return f"unreadable report: {_last_line(done.stderr)}"
    data = json.loads(done.stdout)
    return Extracted(
        categories={str(k): int(v) for k, v in data["categories"].items()},
        blocking_combinations=int(data["blocking_combinations"]),
        claims=int(data["claims"]),
        passed=data["passed"],
    )


def _extract_main(report: Path) -> None:
    with report.open(encoding="utf-8") as handle:
        data = json.load(handle)
    found = extract_categories(data if isinstance(data, dict) else {})
    print(json.dumps(found.__dict__))


# --- one commit ------------------------------------------------------------------------


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return printable(lines[-1] if lines else "")[:300]


def printable(text: str) -> str:
    """``text`` with control characters (a subject or message from the repository)
    replaced, fit for one CSV cell and one terminal line."""
    return "".join(ch if ch.isprintable() else " " for ch in text)


def run_gate(
    provenance: Sequence[str],
    repo: Path,
    commit: Commit,
    work: Path,
    *,
    timeout: float,
    env: Mapping[str, str] | None = None,
) -> dict[str, object]:
    """Run the gate on ``commit`` against its first parent and measure it: one CSV row."""
    report = work / f"{commit.sha}.json"
    errors = work / f"{commit.sha}.stderr"
    argv = [
        *provenance,
        "audit",
        "--repo",
        str(repo),
        "--base",
        commit.parent,
        "--head",
        commit.sha,
        "--format",
        "json",
        "--output",
        str(report),
    ]
    timed_out = threading.Event()
    with errors.open("wb") as err:
        start = time.perf_counter()
        child = subprocess.Popen(
            argv, cwd=work, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err
        )

        def kill() -> None:
            timed_out.set()
            child.kill()

        timer = threading.Timer(timeout, kill)
        timer.start()
        try:
            _, status, usage = os.wait4(child.pid, 0)
        finally:
            timer.cancel()
        wall = time.perf_counter() - start
        child.returncode = code = os.waitstatus_to_exitcode(status)
    note = ""
    if timed_out.is_set() and code < 0:
        note = f"timed out after {timeout:g} s"
    elif code not in (EXIT_PASS, EXIT_BLOCK):
        note = _last_line(errors.read_text(encoding="utf-8", errors="replace"))
    size = report.stat().st_size if report.exists() else 0
    found: Extracted | None = None
    if size and not note.startswith("timed out"):
        extracted = _extract_in_child(report)
        if isinstance(extracted, str):
            note = f"{note}; {extracted}" if note else extracted
        else:
            found = extracted
    for leftover in (report, errors):
        leftover.unlink(missing_ok=True)
    return {
        "commit": commit.sha,
        "date": commit.date,
        "subject": printable(commit.subject),
        "exit": code,
        "cpu_s": f"{usage.ru_utime + usage.ru_stime:.3f}",
        "peak_mb": f"{usage.ru_maxrss / 1024:.1f}",  # Linux reports KiB
        "wall_s": f"{wall:.3f}",
        "json_bytes": size,
        "categories": format_categories(found.categories) if found else "",
        "blocking_combinations": found.blocking_combinations if found else 0,
        "claims": found.claims if found else 0,
        "note": note,
    }


# --- the distribution ------------------------------------------------------------------


def outcome(row: Mapping[str, str]) -> str:
    """``pass``, ``block`` or ``error``: exit 1, or exit 3 with a report naming what
    blocks (a recipe invalid in the head), is a gate decision; any other failure is not."""
    code = int(row["exit"])
    if code == EXIT_PASS:
        return "pass"
    if code == EXIT_BLOCK or (code == EXIT_INVALID and row["categories"]):
        return "block"
    return "error"


def percentile(values: Sequence[float], fraction: float) -> float:
    """The nearest-rank percentile (``fraction`` of 1) of ``values``."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(fraction * len(ordered)) - 1)]


@dataclass
class Summary:
    outcomes: Counter[str] = field(default_factory=Counter)
    #: category -> commits that have it
    category_commits: Counter[str] = field(default_factory=Counter)
    #: category -> summed count (combinations, claims, invalid recipes)
    category_counts: Counter[str] = field(default_factory=Counter)
    #: ``a+b`` sets of categories blocking together -> commits
    combinations: Counter[str] = field(default_factory=Counter)
    cpu: list[float] = field(default_factory=list)
    peak: list[float] = field(default_factory=list)
    wall: list[float] = field(default_factory=list)
    json_max: int = 0
    json_large: int = 0
    #: YYYY-MM -> [commits, blocked]
    months: dict[str, list[int]] = field(default_factory=dict)
    blocked: list[dict[str, str]] = field(default_factory=list)
    errors: list[dict[str, str]] = field(default_factory=list)

    @property
    def total(self) -> int:
        return sum(self.outcomes.values())


def summarize(rows: Iterable[Mapping[str, str]]) -> Summary:
    summary = Summary()
    for row in sorted(rows, key=lambda r: (r["date"], r["commit"])):
        result = outcome(row)
        summary.outcomes[result] += 1
        month = summary.months.setdefault(row["date"][:7], [0, 0])
        month[0] += 1
        categories = parse_categories(row["categories"])
        if result == "block":
            month[1] += 1
            summary.blocked.append(dict(row))
            summary.combinations["+".join(sorted(categories)) or "(none)"] += 1
            for name, number in categories.items():
                summary.category_commits[name] += 1
                summary.category_counts[name] += number
        elif result == "error":
            summary.errors.append(dict(row))
        summary.cpu.append(float(row["cpu_s"]))
        summary.peak.append(float(row["peak_mb"]))
        summary.wall.append(float(row["wall_s"]))
        size = int(row["json_bytes"])
        summary.json_max = max(summary.json_max, size)
        summary.json_large += size > LARGE_JSON
    return summary


def _spread(values: Sequence[float], unit: str) -> str:
    return (
        f"median {statistics.median(values):.2f}, p90 {percentile(values, 0.9):.2f}, "
        f"max {max(values):.2f} {unit}"
    )


def format_summary(summary: Summary) -> str:
    total = summary.total
    if not total:
        return "replay: no rows"
    passed, blocked, failed = (summary.outcomes[k] for k in ("pass", "block", "error"))
    decided = passed + blocked
    lines = [
        f"commits {total}: pass {passed}, block {blocked}, error {failed}; "
        f"block {100 * blocked / total:.1f}% of all"
        + (f", {100 * blocked / decided:.1f}% of gate decisions" if decided else ""),
        "blocking categories (commits; summed count: combinations, claims, invalid recipes):",
    ]
    for name, commits in sorted(summary.category_commits.items(), key=lambda kv: (-kv[1], kv[0])):
        lines.append(f"  {name:<24} {commits:>4} commits  {summary.category_counts[name]:>9,}")
    lines.append("blocking combinations of categories (commits):")
    for name, commits in sorted(summary.combinations.items(), key=lambda kv: (-kv[1], kv[0])):
        lines.append(f"  {name:<48} {commits:>4}")
    lines += [
        f"cpu (user+sys): {_spread(summary.cpu, 's')}; total {sum(summary.cpu):.0f} s",
        f"wall: {_spread(summary.wall, 's')}; total {sum(summary.wall):.0f} s",
        f"peak RSS: {_spread(summary.peak, 'MB')}",
        f"JSON report: max {summary.json_max / 1e6:.1f} MB, "
        f"{summary.json_large} over {LARGE_JSON / 1e6:.0f} MB",
        "block rate per month (blocked / commits):",
    ]
    for month, (commits, month_blocked) in sorted(summary.months.items()):
        lines.append(
            f"  {month}  {month_blocked:>3} / {commits:>3}  {100 * month_blocked / commits:5.1f}%"
        )
    for row in summary.errors:
        lines.append(f"error: {row['commit'][:9]} exit {row['exit']}: {row['note']}")
    return "\n".join(lines)


def format_blocks(summary: Summary) -> str:
    """The blocked commits, one a line: commit, date, categories, subject."""
    return "".join(
        f"{row['commit'][:9]}  {row['date']}  {row['categories']}  {row['subject']}\n"
        for row in summary.blocked
    )


# --- the run ---------------------------------------------------------------------------


def fresh_provenance(work: Path) -> list[str]:
    """``provenance`` as a new user installs it: HEAD of this checkout (``git archive``,
    so uncommitted edits stay out) installed non-editable into a new venv."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from run import install_fresh

    source, archive = work / "source", work / "source.tar"
    source.mkdir()
    # through a file, not this process's memory: its peak RSS is every child's floor
    subprocess.run(["git", "-C", str(REPO), "archive", "-o", str(archive), "HEAD"], check=True)
    subprocess.run(["tar", "-x", "-f", str(archive), "-C", str(source)], check=True)
    archive.unlink()
    python = install_fresh(work / "venv", source)
    script = (
        "import compileall, pathlib, provenance; "
        "compileall.compile_dir(pathlib.Path(provenance.__file__).parent, quiet=1)"
    )
    subprocess.run([str(python), "-c", script], check=True)
    commit = git(REPO, "rev-parse", "--short=9", "HEAD").strip()
    print(f"provenance: HEAD {commit} of {REPO}, bytecode compiled", flush=True)
    return [str(python.parent / "provenance")]


def _progress(index: int, total: int, row: Mapping[str, object]) -> str:
    return (
        f"[{index}/{total}] {str(row['commit'])[:9]} {row['date']} exit {row['exit']} "
        f"cpu {row['cpu_s']} s peak {row['peak_mb']} MB wall {row['wall_s']} s "
        f"json {int(str(row['json_bytes'])) / 1e6:.2f} MB {row['categories']} {row['note']}"
    ).rstrip()


def own_peak_mb() -> float:
    """This process's peak RSS since its ``exec``: ``VmHWM`` of ``/proc/self/status``.

    Not ``getrusage(RUSAGE_SELF).ru_maxrss``: Linux keeps that high-water mark across
    ``execve``, so a runner started by a large process (a pytest worker after a whole-
    recipes audit: 1.1 GB) would report its parent's peak, not its own."""
    try:
        for line in Path("/proc/self/status").read_text(encoding="ascii").splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024  # kB
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def replay(
    provenance: Sequence[str],
    repo: Path,
    commits: Sequence[Commit],
    output: Path,
    *,
    jobs: int = 1,
    timeout: float = 1800.0,
) -> int:
    """Run the gate on each commit not yet in ``output``, appending a row as each ends;
    the number of commits run."""
    done = prepare_csv(output)
    pending = [c for c in commits if c.sha not in done]
    print(f"commits: {len(commits)} selected, {len(commits) - len(pending)} already in {output}")
    # a child's peak RSS starts at this process's own peak (fork): say how small it is
    print(f"runner peak RSS {own_peak_mb():.0f} MB", flush=True)
    with tempfile.TemporaryDirectory(prefix="provenance-replay-") as tmp:
        work = Path(tmp)
        env = {**os.environ, "PROVENANCE_CACHE_DIR": str(work / "local-cache")}
        for name in ("GITHUB_TOKEN", "GH_TOKEN"):
            env.pop(name, None)

        def one(commit: Commit) -> dict[str, object]:
            return run_gate(provenance, repo, commit, work, timeout=timeout, env=env)

        with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
            # rows are written in commit order: one that ends early waits for the earlier
            # ones (if the runner is stopped then, it is run again on the next run)
            futures: list[Future[dict[str, object]]] = [pool.submit(one, c) for c in pending]
            for index, future in enumerate(futures, 1):
                row = future.result()
                append_row(output, row)
                print(_progress(index, len(pending), row), flush=True)
    return len(pending)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--repo", type=Path, default=DEFAULT_RECIPES)
    parser.add_argument("--until", default=None)
    parser.add_argument("--csv", type=Path, default=Path("replay.csv"))
    parser.add_argument("--provenance", type=Path, default=None)
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--commits", nargs="+", default=None, metavar="SHA")
    parser.add_argument("--timeout", type=float, default=1800.0)
    parser.add_argument("--summary-only", type=Path, default=None, metavar="CSV")
    parser.add_argument("--blocks", type=Path, default=None)
    parser.add_argument("--extract", type=Path, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.extract is not None:
        _extract_main(args.extract)
        return
    output: Path = args.summary_only or args.csv
    if args.summary_only is None:
        repo = args.repo.resolve()
        until = resolve_until(repo, args.until)
        commits = select_commits(repo, until)
        print(
            f"recipes: {repo} at {until[:9]}: {len(commits)} first-parent commits touch "
            + ", ".join(PATHS)
        )
        if args.commits:
            wanted = {
                git(repo, "rev-parse", "--verify", f"{c}^{{commit}}").strip() for c in args.commits
            }
            outside = wanted - {c.sha for c in commits}
            if outside:
                print(f"not among the selected commits, skipped: {', '.join(sorted(outside))}")
            commits = [c for c in commits if c.sha in wanted]
        if args.limit is not None:
            commits = commits[: args.limit]
        with tempfile.TemporaryDirectory(prefix="provenance-replay-venv-") as tmp:
            provenance = [str(args.provenance)] if args.provenance else fresh_provenance(Path(tmp))
            replay(provenance, repo, commits, output, jobs=args.jobs, timeout=args.timeout)
    summary = summarize(read_rows(output))
    print(format_summary(summary))
    if args.blocks is not None:
        args.blocks.write_text(format_blocks(summary), encoding="utf-8")


if __name__ == "__main__":
    main()
