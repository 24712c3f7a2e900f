#!/usr/bin/env python3
"""Performance benchmarks of ``provenance`` against the targets of docs/performance.md.

python benchmarks/run.py [--recipes-clone DIR] [--oracle DIR] [--only NAME[,NAME]]
    [--ledger DIR --evidence DIR] [--repeat N] [--pin-core N] [--fresh-install]

Targets (``--only``):
  m3       full audit of MiniMax-M3 (71,208 combinations) with --format json, side by
           side with the reference builder under node (--oracle, --recipes-clone), and the
           in-process phases
  pr       diff-aware audit of a PR that changes one recipe (full MiniMax-M3 cross-product)
  all      every recipe of the recipes clone, --pd-pairing star (needs --recipes-clone)
  ingest   ingest of the full InferenceX history for minimaxm3, then a re-run with nothing new
  scaling  synthetic recipes and evidence scaled 1x to 16x
  startup  ``provenance --help``

``--fresh-install`` measures the tool as a user runs it: this checkout is installed
with ``pip install`` (not editable) into a new virtual environment, and the benchmark
runs again under that environment's interpreter, timing its console script. Without
it, the console script of this interpreter is timed, whatever install that is (an
editable one adds its import hooks, and this interpreter's site-packages its own
``.pth`` start-up, to every figure).

``--pin-core N`` runs both sides of the ``m3`` comparison under ``taskset -c N``: the
reference builder's runtime then collects garbage on the same core it renders on
instead of a second one, so the CPU figures of both compare one core's work.

Every figure is of one child process (os.wait4): wall seconds, CPU seconds
(user + sys) and peak RSS; the 1-minute load average is printed with each, since
a loaded machine stretches wall time but hardly CPU time. Nothing here asserts.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path

from measure import Measurement, machine, median, run_child

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
INFERENCEX = REPO.parent / ".mirror" / "SemiAnalysisAI+InferenceX" / "repo"
HISTORY = SHARED / "corpus" / "inferencex" / "minimax-history.tsv"
PROVENANCE = [sys.executable, "-m", "provenance"]
M3 = "MiniMaxAI/MiniMax-M3"
HARDWARE = "b300"  # synthetic.HARDWARE (not imported: this process stays small)
SEED_PRS = (2120, 2310, 2314)


def provenance_command() -> list[str]:
    """The installed ``provenance`` command of this interpreter.

    The console script pip wrote beside ``sys.executable``, not the first one on
    ``PATH``: a version manager's shim found there (pyenv's is a bash script that
    runs ``pyenv exec``) would add its own start-up, about 0.06 s on the project
    machine, to every figure. Falls back to ``python -m provenance``.
    """
    script = Path(sys.executable).parent / "provenance"
    if script.is_file() and os.access(script, os.X_OK):
        return [str(script)]
    return list(PROVENANCE)


def provenance_argv(*args: str) -> list[str]:
    return [*provenance_command(), *args]


def pinned(core: int | None) -> list[str]:
    """The ``taskset`` prefix that keeps a child on one core (empty when not asked)."""
    if core is None:
        return []
    taskset = shutil.which("taskset")
    if taskset is None:
        raise SystemExit("--pin-core needs taskset (util-linux) on PATH")
    return [taskset, "-c", str(core)]


def row(name: str, m: Measurement, extra: str = "") -> str:
    return (
        f"  {name:<34} wall {m.wall:7.2f} s  cpu {m.cpu:7.2f} s "
        f"(user {m.user:6.2f}, sys {m.sys:5.2f})  peak RSS {m.rss_mb:6.0f} MB  "
        f"load {m.load:4.1f}{('  ' + extra) if extra else ''}"
    )


class Context:
    def __init__(self, args: argparse.Namespace, work: Path) -> None:
        self.args = args
        self.work = work
        self._ledger: tuple[Path, Path] | None = None

    def ledger(self) -> tuple[Path, Path]:
        """The ledger and evidence store to audit against (embedded, given, or ingested)."""
        if self._ledger is not None:
            return self._ledger
        if self.args.ledger and self.args.evidence:
            self._ledger = (self.args.ledger, self.args.evidence)
        elif any((REPO / "evidence").glob("*/*.json")):
            self._ledger = (REPO / "ledger", REPO / "evidence")
        else:
            ledger, evidence = self.work / "seed-ledger", self.work / "seed-evidence"
            argv = ["ingest", "inferencex", str(INFERENCEX), "--model-prefix", "minimaxm3"]
            for pr in SEED_PRS:
                argv += ["--pr", str(pr)]
            argv += ["--ledger", str(ledger), "--evidence", str(evidence)]
            print(f"  (embedded ledger is empty: ingesting #{', #'.join(map(str, SEED_PRS))})")
            run_child(provenance_argv(*argv), cwd=REPO)
            self._ledger = (ledger, evidence)
        records = sum(1 for _ in self._ledger[1].glob("*/*.json"))
        print(f"  ledger {self._ledger[0]}, evidence {self._ledger[1]} ({records} records)")
        return self._ledger

    def ledger_args(self) -> list[str]:
        ledger, evidence = self.ledger()
        return ["--ledger", str(ledger), "--evidence", str(evidence)]


def helper(*args: str) -> str:
    """Run ``helpers.py`` in a child (keeps this process small: see helpers.py)."""
    done = subprocess.run(
        [sys.executable, str(Path(__file__).with_name("helpers.py")), *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.strip()


def _combinations(report: Path) -> int:
    return int(helper("combinations", str(report)))


def _phases(
    ctx: Context, root: Path, *extra: str, evidence: Path | None = None
) -> dict[str, float]:
    ledger, default_evidence = ctx.ledger()
    evidence = evidence or default_evidence
    out = ctx.work / "phases.json"
    run_child(
        [
            sys.executable,
            str(Path(__file__).with_name("phases.py")),
            "--recipes-root",
            str(root),
            "--ledger",
            str(ledger),
            "--evidence",
            str(evidence),
            *extra,
        ],
        cwd=REPO,
        stdout=out,
    )
    result: dict[str, float] = json.loads(out.read_text(encoding="utf-8"))
    return result


def target_m3(ctx: Context) -> None:
    print("m3: full audit of MiniMax-M3, --format json (default enumeration)")
    report = ctx.work / "m3.json"
    audit = provenance_argv(
        "audit", M3, "--recipes-root", "recipes", *ctx.ledger_args(), "--format", "json"
    )
    oracle = ctx.args.oracle
    clone = ctx.args.recipes_clone
    node = shutil.which("node")
    pin = pinned(ctx.args.pin_core)
    audit = [*pin, *audit]
    if pin:
        print(f"  both sides pinned: {' '.join(pin)}")
    reference: list[Measurement] = []
    ours: list[Measurement] = []
    records = None
    # the first run writes the report and fills the local cache of checked evidence
    # files (a reviewer's second audit finds it warm); a cold run is measured below
    run_child([*audit, "--output", str(report)], cwd=REPO)
    for _ in range(ctx.args.repeat):
        if oracle and clone and node:
            summary = ctx.work / "oracle-summary.json"
            reference.append(
                run_child(
                    [
                        *pin,
                        node,
                        str(oracle / "enumerate.mjs"),
                        str(clone),
                        M3,
                        "--out",
                        "/dev/null",
                        "--summary",
                        str(summary),
                    ]
                )
            )
            if reference[-1].returncode != 0:
                raise SystemExit(
                    f"the reference builder exited {reference[-1].returncode} "
                    f"(is {oracle} npm-installed? see its README)"
                )
            records = json.loads(summary.read_text(encoding="utf-8")).get("records")
        ours.append(run_child([*audit, "--output", "/dev/null"], cwd=REPO))
    cold_env = {**os.environ, "PROVENANCE_CACHE_DIR": str(ctx.work / "cold-cache")}
    cold = run_child([*audit, "--output", "/dev/null"], cwd=REPO, env=cold_env)
    combinations = _combinations(report)
    size = report.stat().st_size / 1e6
    mine = median(ours)
    for index, m in enumerate(ours, 1):
        print(row(f"provenance audit (run {index})", m))
    print(row("provenance audit (empty local cache)", cold, "every evidence file proven"))
    print(
        row(
            "provenance audit (median)",
            mine,
            f"{combinations} combinations, {combinations / mine.wall:,.0f}/s wall, "
            f"{combinations / mine.cpu:,.0f}/s cpu; JSON {size:.1f} MB",
        )
    )
    if reference:
        ref = median(reference)
        for index, m in enumerate(reference, 1):
            print(row(f"reference builder (run {index})", m))
        print(row("reference builder (median)", ref, f"{records} records"))
        print(
            f"  ratio reference/provenance: wall {ref.wall / mine.wall:.2f}x, "
            f"cpu {ref.cpu / mine.cpu:.2f}x (target >= 5x; same selections: "
            f"{'yes' if records == combinations else f'NO ({records} vs {combinations})'})"
        )
    else:
        print("  (no --oracle/--recipes-clone/node: reference builder not run)")
    phases = _phases(ctx, REPO / "recipes", M3)
    print("  in-process CPU s: " + ", ".join(f"{k} {v}" for k, v in phases.items()))


def target_pr(ctx: Context) -> None:
    print("pr: diff-aware audit of a PR changing MiniMax-M3 (full cross-product, both sides)")
    path, base, head = helper("pr-repo", str(ctx.work)).split()
    argv = provenance_argv(
        "audit",
        "--repo",
        str(path),
        "--base",
        base,
        "--head",
        head,
        *ctx.ledger_args(),
        "--format",
        "json",
        "--output",
        "/dev/null",
    )
    runs = [run_child(argv, cwd=REPO) for _ in range(ctx.args.repeat)]
    for index, m in enumerate(runs, 1):
        print(row(f"audit --repo/--base/--head (run {index})", m))
    print(row("audit --repo/--base/--head (median)", median(runs), "target < 2 s wall"))


def target_all(ctx: Context) -> None:
    clone = ctx.args.recipes_clone
    if clone is None:
        print("all: skipped (needs --recipes-clone)")
        return
    print(f"all: every recipe of {clone}, --pd-pairing star")
    report = ctx.work / "all.json"
    m = run_child(
        provenance_argv(
            "audit",
            "--recipes-root",
            str(clone),
            *ctx.ledger_args(),
            "--pd-pairing",
            "star",
            "--format",
            "json",
            "--output",
            str(report),
        ),
        cwd=REPO,
    )
    combinations = _combinations(report)
    recipes = len(list((clone / "models").glob("*/*.yaml")))
    print(
        row(
            "provenance audit (all recipes)",
            m,
            f"{recipes} recipes, {combinations} combinations, "
            f"{combinations / m.cpu:,.0f}/s cpu; target < 60 s",
        )
    )
    oracle, node = ctx.args.oracle, shutil.which("node")
    if oracle and node:
        total = Measurement(0.0, 0.0, 0.0, 0.0, m.load, 0)
        records = 0
        summary = ctx.work / "oracle-summary.json"
        for model in sorted((clone / "models").glob("*/*.yaml")):
            one = run_child(
                [
                    node,
                    str(oracle / "enumerate.mjs"),
                    str(clone),
                    str(model.relative_to(clone)),
                    "--pd-pairing",
                    "star",
                    "--out",
                    "/dev/null",
                    "--summary",
                    str(summary),
                ],
                check=False,
            )
            if one.returncode == 0:
                records += int(json.loads(summary.read_text(encoding="utf-8")).get("records", 0))
            total = Measurement(
                total.wall + one.wall,
                total.user + one.user,
                total.sys + one.sys,
                max(total.rss_mb, one.rss_mb),
                total.load,
                max(total.returncode, one.returncode),
            )
        print(row("reference builder (sum per recipe)", total, f"{records} records"))
        print(
            f"  ratio reference/provenance: wall {total.wall / m.wall:.2f}x, "
            f"cpu {total.cpu / m.cpu:.2f}x"
        )


def _history_prs() -> list[int]:
    prs = []
    for line in HISTORY.read_text(encoding="utf-8").splitlines()[1:]:
        fields = line.split("\t")
        if len(fields) > 2 and fields[2].strip().isdigit():
            prs.append(int(fields[2]))
    return sorted(set(prs))


def target_ingest(ctx: Context) -> None:
    if not INFERENCEX.is_dir() or not HISTORY.is_file():
        print("ingest: skipped (no InferenceX mirror or history list)")
        return
    prs = _history_prs()
    print(f"ingest: full minimaxm3 history ({len(prs)} PRs from {HISTORY.name})")
    ledger, evidence = ctx.work / "history-ledger", ctx.work / "history-evidence"
    cache = ctx.work / "history-cache"  # the extraction cache, empty for the first run
    for stale in (ledger, evidence, cache):
        if stale.exists():
            shutil.rmtree(stale)
    argv = ["ingest", "inferencex", str(INFERENCEX), "--model-prefix", "minimaxm3"]
    for pr in prs:
        argv += ["--pr", str(pr)]
    argv += ["--ledger", str(ledger), "--evidence", str(evidence), "--cache-dir", str(cache)]
    log = ctx.work / "ingest.log"
    first = run_child(provenance_argv(*argv), cwd=REPO, stdout=log)
    records = sum(1 for _ in evidence.glob("*/*.json"))
    entries = sum(1 for _ in (ledger / "prs").glob("*.yaml"))
    print(row("first ingest", first, f"{records} records, {entries} ledger entries"))
    again = run_child(provenance_argv(*argv), cwd=REPO, stdout=log)
    print(row("re-run, nothing new", again, "target < 5 s (extraction cache)"))


def target_scaling(ctx: Context) -> None:
    ledger, evidence = ctx.ledger()
    print("scaling: synthetic nvfp4 clones on b300 (combinations) and record copies (evidence)")
    print(
        f"  {'axis':<12}{'scale':>6}{'combinations':>14}{'records':>9}"
        f"{'cpu s':>8}{'audit cpu s':>12}{'us/comb':>9}{'peak MB':>9}"
    )
    for axis in ("combinations", "evidence"):
        for scale in (1, 2, 4, 8, 16):
            root = ctx.work / f"scaled-{axis}-{scale}"
            if root.exists():
                shutil.rmtree(root)
            made = json.loads(
                helper("scaled", str(REPO / "recipes"), str(evidence), str(root), axis, str(scale))
            )
            names: list[str] = made["variants"]
            records: int = made["records"]
            store = root / "evidence"
            argv = [
                "audit",
                M3,
                "--recipes-root",
                str(root / "recipes"),
                "--ledger",
                str(ledger),
                "--evidence",
                str(store),
                "--variant",
                ",".join(names),
                "--hardware",
                HARDWARE,
                "--format",
                "json",
            ]
            report = root / "report.json"
            m = run_child(provenance_argv(*argv, "--output", str(report)), cwd=REPO)
            combinations = _combinations(report)
            phases = _phases(
                ctx,
                root / "recipes",
                M3,
                *[a for n in names for a in ("--variant", n)],
                "--hardware",
                HARDWARE,
                evidence=store,
            )
            print(
                f"  {axis:<12}{scale:>5}x{combinations:>14,}{records:>9}{m.cpu:>8.2f}"
                f"{phases['audit']:>12.2f}"
                f"{1e6 * m.cpu / combinations:>9.1f}{m.rss_mb:>9.0f}"
            )
            shutil.rmtree(root)


def target_startup(ctx: Context) -> None:
    """The fixed cost every command pays: the interpreter with and without ``site``
    (which runs the ``.pth`` hooks of site-packages; this sandbox's imports ``certifi``)
    and ``provenance --help``."""
    print("startup: the interpreter, then provenance --help")
    repeat = max(3, ctx.args.repeat)
    for name, argv in (
        ("python -c pass", [sys.executable, "-c", "pass"]),
        ("python -S -c pass (no site hooks)", [sys.executable, "-S", "-c", "pass"]),
        ("provenance --help", provenance_argv("--help")),
    ):
        runs = [run_child(argv) for _ in range(repeat)]
        print(row(f"{name} (median)", median(runs)))


TARGETS: dict[str, Callable[[Context], None]] = {
    "startup": target_startup,
    "m3": target_m3,
    "pr": target_pr,
    "all": target_all,
    "ingest": target_ingest,
    "scaling": target_scaling,
}


def compile_bytecode() -> str:
    """Compile the installed package's bytecode, as ``pip install`` does, and say so.

    A process that imports a module whose ``.pyc`` is missing or stale compiles its
    source first; with ``PYTHONDONTWRITEBYTECODE`` set (this sandbox sets it) that
    happens on every run, about 0.06 s for the audit's modules, and would be measured
    as the tool's own time. Done in a child, so this process stays small.
    """
    script = (
        "import compileall, pathlib, provenance; "
        "compileall.compile_dir(pathlib.Path(provenance.__file__).parent, quiet=1)"
    )
    subprocess.run([sys.executable, "-c", script], check=True)
    flag = os.environ.get("PYTHONDONTWRITEBYTECODE")
    return "bytecode compiled" + (f" (PYTHONDONTWRITEBYTECODE={flag} here)" if flag else "")


def install_fresh(venv: Path, source: Path = REPO) -> Path:
    """Create the virtual environment ``venv``, install ``source`` (this checkout, or a
    snapshot of it) into it with ``pip install`` (not editable, as a user installs it)
    and return its interpreter."""
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python = venv / "bin" / "python"
    subprocess.run(
        [str(python), "-m", "pip", "install", "--quiet", str(source)],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    print(f"installed: pip install {source} (not editable) into a new venv", flush=True)
    return python


def rerun_in_fresh_install(argv: Sequence[str]) -> int:
    """Install this checkout into a new virtual environment and run this script again
    under its interpreter."""
    with tempfile.TemporaryDirectory(prefix="provenance-bench-venv-") as tmp:
        python = install_fresh(Path(tmp) / "venv")
        return subprocess.run([str(python), str(Path(__file__).resolve()), *argv]).returncode


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--fresh-install", action="store_true")
    parser.add_argument("--recipes-clone", type=Path, default=None)
    parser.add_argument("--oracle", type=Path, default=None)
    parser.add_argument("--only", default=",".join(TARGETS))
    parser.add_argument("--ledger", type=Path, default=None)
    parser.add_argument("--evidence", type=Path, default=None)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--pin-core", type=int, default=None)
    args = parser.parse_args(argv)
    if args.fresh_install:
        given = list(sys.argv[1:] if argv is None else argv)
        sys.exit(rerun_in_fresh_install([a for a in given if a != "--fresh-install"]))
    wanted = [t.strip() for t in args.only.split(",") if t.strip()]
    unknown = [t for t in wanted if t not in TARGETS]
    if unknown:
        parser.error(f"unknown target(s) {', '.join(unknown)}; known: {', '.join(TARGETS)}")
    print(f"machine: {machine()}; python {sys.version.split()[0]}; {compile_bytecode()}")
    # A child's peak RSS starts at this process's RSS (fork): keep it small and say how small.
    print(f"runner RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB")
    with tempfile.TemporaryDirectory(prefix="provenance-bench-") as tmp:
        # the local caches of checked evidence files: private to this run, so neither the
        # user's cache nor the synthetic stores of one target change another's figures
        os.environ["PROVENANCE_CACHE_DIR"] = str(Path(tmp) / "local-cache")
        ctx = Context(args, Path(tmp))
        for name in wanted:
            TARGETS[name](ctx)


if __name__ == "__main__":
    main()
