"""The replay benchmark (benchmarks/replay.py) selects, runs, resumes and counts right.

A small recipes-like git repository is built here with real git, and a fake
``provenance`` script stands in for the gate: it decides by the head commit's subject
what to answer (pass, block, an invalid recipe, an invalid shared file, a large memory
peak, a hang) and logs the revisions it was given. Nothing asserts a time.
"""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

REPO = Path(__file__).resolve().parents[2]
BENCHMARKS = REPO / "benchmarks"
REPLAY = BENCHMARKS / "replay.py"


@pytest.fixture(scope="module")
def replay() -> Iterator[ModuleType]:
    """``benchmarks/replay.py`` (a script beside the runner, not a package)."""
    sys.path.insert(0, str(BENCHMARKS))
    try:
        import replay

        yield replay
    finally:
        sys.path.remove(str(BENCHMARKS))


#: (subject, files written, committer date); "side kv" is committed on a branch merged
#: by "merge invalid kv"
HISTORY = (
    ("root", ("models/a.yaml",), "2026-01-05"),
    ("docs only", ("README.md",), "2026-01-06"),
    ("pass model", ("models/a.yaml",), "2026-01-07"),
    ("block taxonomy", ("taxonomy.yaml",), "2026-01-20"),
    ("shared strategies", ("strategies/s.yaml",), "2026-02-02"),
    ("merge invalid kv", (), "2026-02-03"),
    ("elsewhere", ("other/models/x.yaml",), "2026-02-04"),
    ("big model", ("models/b.yaml",), "2026-02-05"),
    ("sleep model", ("models/c.yaml",), "2026-02-06"),
)
#: the commits the replay selects up to "big model", in order
SELECTED = ("pass model", "block taxonomy", "shared strategies", "merge invalid kv", "big model")


def _git(repo: Path, *args: str, date: str = "2026-01-01") -> str:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.invalid",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.invalid",
        "GIT_AUTHOR_DATE": f"{date}T12:00:00+00:00",
        "GIT_COMMITTER_DATE": f"{date}T12:00:00+00:00",
    }
    return subprocess.run(
        ["git", "-C", str(repo), *args], check=True, capture_output=True, text=True, env=env
    ).stdout.strip()


@pytest.fixture(scope="module")
def recipes(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """The repository and the hash of each commit by subject."""
    repo = tmp_path_factory.mktemp("recipes")
    _git(repo, "init", "-q", "-b", "main")
    shas: dict[str, str] = {}
    for subject, files, date in HISTORY:
        if subject == "merge invalid kv":
            _git(repo, "checkout", "-q", "-b", "side", shas["pass model"])
            (repo / "kv_store").mkdir(exist_ok=True)
            (repo / "kv_store" / "x.yaml").write_text("x: 1\n", encoding="utf-8")
            _git(repo, "add", "kv_store/x.yaml")
            _git(repo, "commit", "-q", "-m", "side kv", date=date)
            shas["side kv"] = _git(repo, "rev-parse", "HEAD")
            _git(repo, "checkout", "-q", "main")
            _git(repo, "merge", "-q", "--no-ff", "-m", subject, "side", date=date)
        else:
            for name in files:
                path = repo / name
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(f"{subject}\n", encoding="utf-8")
                _git(repo, "add", name)
            _git(repo, "commit", "-q", "-m", subject, date=date)
        shas[subject] = _git(repo, "rev-parse", "HEAD")
    return repo, shas


FAKE = """\
#!{python}
import json, os, subprocess, sys, time
args = sys.argv[1:]
value = {{args[i]: args[i + 1] for i in range(1, len(args) - 1) if args[i].startswith("--")}}
repo, base, head, output = value["--repo"], value["--base"], value["--head"], value["--output"]
with open(os.environ["FAKE_LOG"], "a") as log:
    log.write(f"{{base}} {{head}} {{os.getcwd()}}\\n")
subject = subprocess.run(["git", "-C", repo, "log", "-1", "--format=%s", head],
                         capture_output=True, text=True, check=True).stdout.strip()
report = {{"schema": "provenance.diff/v3", "changes": [], "lens": [], "claims": [],
          "gate": {{"passed": True, "blocking": 0, "declared": 0, "claims": 0}}}}
code = 0
if subject.startswith("block"):
    report["changes"] = [
        {{"combinations": 7, "blocking": True, "block_reason": "new-unevidenced-flag"}},
        {{"combinations": 3, "blocking": False, "block_reason": None}},
    ]
    report["claims"] = [{{"recipe": "o/m", "hardware": "h200", "claim": "verified"}}]
    report["gate"] = {{"passed": False, "blocking": 7, "declared": 0, "claims": 1}}
    code = 1
elif subject.startswith("merge invalid"):
    report["errors"] = [{{"path": "x:models/o/m.yaml", "message": "bad"}}]
    report["gate"] = {{"passed": False, "blocking": 0, "declared": 0, "invalid": 1}}
    code = 3
elif subject.startswith("shared"):
    print("invalid input: " + head + ":strategies/s.yaml:1: bad\\x1b[31m", file=sys.stderr)
    sys.exit(3)
elif subject.startswith("big"):
    ballast = b"x" * 150_000_000
elif subject.startswith("sleep"):
    time.sleep(60)
with open(output, "w") as out:
    json.dump(report, out)
sys.exit(code)
"""


@pytest.fixture
def fake(tmp_path: Path) -> tuple[Path, Path]:
    """The fake ``provenance`` and the log of its invocations (base, head, cwd)."""
    script = tmp_path / "provenance"
    script.write_text(FAKE.format(python=sys.executable), encoding="utf-8")
    script.chmod(0o755)
    return script, tmp_path / "fake.log"


def _run(log: Path, *args: str | Path) -> str:
    done = subprocess.run(
        [sys.executable, str(REPLAY), *map(str, args)],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "FAKE_LOG": str(log)},
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def _rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def _calls(log: Path) -> list[list[str]]:
    if not log.exists():
        return []
    return [line.split() for line in log.read_text(encoding="utf-8").splitlines()]


def test_selects_first_parent_commits_that_touch_the_recipe_paths(
    replay: ModuleType, recipes: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    repo, shas = recipes
    head = replay.resolve_until(repo, None)  # no 8959cf6 here: HEAD
    assert head == shas["sleep model"]
    until = replay.resolve_until(repo, shas["big model"][:10])
    assert until == shas["big model"]
    selected = replay.select_commits(repo, until)
    assert [c.subject for c in selected] == list(SELECTED)
    by_subject = {c.subject: c for c in selected}
    assert by_subject["merge invalid kv"].parent == shas["shared strategies"]  # first parent
    assert by_subject["pass model"].parent == shas["docs only"]
    assert by_subject["block taxonomy"].date == "2026-01-20"
    bare = tmp_path / "bare.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(repo), str(bare)], check=True)
    assert replay.select_commits(bare, until) == selected


def test_replay_writes_one_row_per_commit_and_resumes(
    recipes: tuple[Path, dict[str, str]], fake: tuple[Path, Path], tmp_path: Path
) -> None:
    repo, shas = recipes
    script, log = fake
    output = tmp_path / "replay.csv"
    common = ("--repo", repo, "--until", shas["big model"], "--provenance", script)
    _run(log, *common, "--csv", output, "--jobs", "2", "--limit", "3")
    assert [r["subject"] for r in _rows(output)] == list(SELECTED[:3])
    printed = _run(log, *common, "--csv", output, "--blocks", tmp_path / "blocks.txt")
    rows = {r["subject"]: r for r in _rows(output)}
    assert list(rows) == list(SELECTED)
    calls = _calls(log)
    assert sorted(head for _, head, _ in calls) == sorted(shas[s] for s in SELECTED)
    parents = {
        shas[child]: shas[parent]
        for child, parent in (
            ("pass model", "docs only"),
            ("block taxonomy", "pass model"),
            ("shared strategies", "block taxonomy"),
            ("merge invalid kv", "shared strategies"),
            ("big model", "elsewhere"),
        )
    }
    assert all(base == parents[head] for base, head, _ in calls)
    assert all(cwd != str(REPO) for _, _, cwd in calls)  # run outside any source tree

    assert rows["pass model"]["exit"] == "0" and rows["pass model"]["categories"] == ""
    block = rows["block taxonomy"]
    assert block["exit"] == "1"
    assert block["categories"] == "new-claim=1;new-unevidenced-flag=7"
    assert (block["blocking_combinations"], block["claims"]) == ("7", "1")
    assert int(block["json_bytes"]) == len(json.dumps(_block_report()))
    invalid = rows["merge invalid kv"]
    assert (invalid["exit"], invalid["categories"]) == ("3", "invalid=1")
    shared = rows["shared strategies"]
    assert (shared["exit"], shared["json_bytes"], shared["categories"]) == ("3", "0", "")
    assert shared["note"].startswith("invalid input: ") and "\x1b" not in shared["note"]
    assert float(rows["big model"]["peak_mb"]) >= 150 > float(rows["pass model"]["peak_mb"])
    assert all(float(r["cpu_s"]) > 0 and float(r["wall_s"]) > 0 for r in rows.values())

    assert "commits 5: pass 2, block 2, error 1" in printed
    (runner,) = [line.split()[-2] for line in printed.splitlines() if "runner peak RSS" in line]
    assert int(runner) < float(rows["big model"]["peak_mb"])
    table = [line.split() for line in printed.splitlines()]
    assert ["new-unevidenced-flag", "1", "commits", "7"] in table
    assert ["new-claim", "1", "commits", "1"] in table
    assert "  2026-01    1 /   2   50.0%" in printed
    assert "  2026-02    1 /   3   33.3%" in printed
    blocks = (tmp_path / "blocks.txt").read_text(encoding="utf-8").splitlines()
    assert [line.split()[0] for line in blocks] == [
        shas["block taxonomy"][:9],
        shas["merge invalid kv"][:9],
    ]

    # nothing left to run; then a row lost and the next one cut short are run again
    _run(log, *common, "--csv", output)
    assert len(_calls(log)) == len(calls)
    lines = output.read_text(encoding="utf-8").splitlines(keepends=True)
    output.write_text("".join(lines[:-2]) + lines[-1][:20], encoding="utf-8")
    _run(log, *common, "--csv", output)
    again = _calls(log)[len(calls) :]
    assert sorted(head for _, head, _ in again) == sorted(shas[s] for s in SELECTED[-2:])
    assert [r["subject"] for r in _rows(output)] == list(SELECTED)


def _block_report() -> dict[str, object]:
    """The report the fake writes for a "block" commit (as its json.dump writes it)."""
    return {
        "schema": "provenance.diff/v3",
        "changes": [
            {"combinations": 7, "blocking": True, "block_reason": "new-unevidenced-flag"},
            {"combinations": 3, "blocking": False, "block_reason": None},
        ],
        "lens": [],
        "claims": [{"recipe": "o/m", "hardware": "h200", "claim": "verified"}],
        "gate": {"passed": False, "blocking": 7, "declared": 0, "claims": 1},
    }


def test_a_hung_gate_is_killed_and_recorded_as_an_error(
    recipes: tuple[Path, dict[str, str]], fake: tuple[Path, Path], tmp_path: Path
) -> None:
    repo, shas = recipes
    script, log = fake
    output = tmp_path / "replay.csv"
    printed = _run(
        log,
        *("--repo", repo, "--provenance", script, "--csv", output),
        *("--commits", shas["sleep model"][:12], shas["docs only"], "--timeout", "1"),
    )
    (row,) = _rows(output)
    assert row["commit"] == shas["sleep model"]
    assert int(row["exit"]) < 0 and row["note"] == "timed out after 1 s"
    assert float(row["wall_s"]) < 30
    assert "not among the selected commits, skipped: " + shas["docs only"] in printed
    assert "commits 1: pass 0, block 0, error 1" in printed


def test_categories_are_read_from_every_list_of_the_report(replay: ModuleType) -> None:
    report = {
        "changes": [
            {"combinations": 4, "blocking": True, "block_reason": "regressed-verdict"},
            {"combinations": 5, "blocking": True, "block_reason": "regressed-verdict"},
            {"combinations": 9, "blocking": False, "block_reason": None, "unbenchmarked": True},
            {"combinations": 2, "blocking": True, "block_reason": "a-category-added-later"},
        ],
        "lens": [{"key": "k", "value": "v", "evidenced": 0, "unevidenced": 3}],
        "claims": [
            {"recipe": "o/m", "hardware": "h200", "claim": "verified"},
            {"recipe": "o/m", "hardware": "", "kv_offload": "x", "category": "new-kv-claim"},
        ],
        "errors": [{"path": "h:models/o/m.yaml", "message": "bad"}],
        "base_errors": [{"path": "b:models/o/n.yaml", "message": "bad"}],
        "later": [{"blocking": True, "block_reason": "new-thing"}, {"blocking": False}],
        "gate": {"passed": False, "blocking": 11, "claims": 2, "invalid": 1},
    }
    found = replay.extract_categories(report)
    assert found.categories == {
        "regressed-verdict": 9,
        "a-category-added-later": 2,
        "new-claim": 1,
        "new-kv-claim": 1,
        "invalid": 1,
        "new-thing": 1,
    }
    assert (found.blocking_combinations, found.claims, found.passed) == (12, 2, False)
    text = replay.format_categories(found.categories)
    assert replay.parse_categories(text) == found.categories
    # a failed gate whose lists explain nothing is described by its counters
    bare = replay.extract_categories({"gate": {"passed": False, "blocking": 0, "new_x": 2}})
    assert bare.categories == {"gate.new_x": 2}
    assert replay.extract_categories({"gate": {"passed": False}}).categories == {"unexplained": 1}
    assert replay.extract_categories({"gate": {"passed": True, "declared": 4}}).categories == {}


def _row(commit: str, date: str, code: int, categories: str = "", **extra: str) -> dict[str, str]:
    base = {
        "commit": commit,
        "date": date,
        "subject": commit,
        "exit": str(code),
        "cpu_s": "1",
        "peak_mb": "50",
        "wall_s": "1",
        "json_bytes": "10",
        "categories": categories,
        "blocking_combinations": "0",
        "claims": "0",
        "note": "",
    }
    return {**base, **extra}


def test_summary_counts_outcomes_categories_and_spreads(replay: ModuleType) -> None:
    rows = [
        _row("a", "2026-03-01", 0, cpu_s="1", peak_mb="40", json_bytes="20000000"),
        _row("b", "2026-03-09", 1, "new-claim=2;regressed-verdict=4", cpu_s="2", peak_mb="90"),
        _row("c", "2026-04-01", 1, "new-claim=1", cpu_s="3", peak_mb="70"),
        _row("d", "2026-04-02", 3, "invalid=1", cpu_s="4", json_bytes="10000001"),
        _row("e", "2026-04-03", 3, "", cpu_s="5", note="invalid input: taxonomy.yaml"),
        _row("f", "2026-04-04", -9, "", cpu_s="10", peak_mb="300"),
    ]
    summary = replay.summarize(rows)
    assert dict(summary.outcomes) == {"pass": 1, "block": 3, "error": 2}
    assert dict(summary.category_commits) == {"new-claim": 2, "regressed-verdict": 1, "invalid": 1}
    assert dict(summary.category_counts) == {"new-claim": 3, "regressed-verdict": 4, "invalid": 1}
    assert dict(summary.combinations) == {
        "new-claim+regressed-verdict": 1,
        "new-claim": 1,
        "invalid": 1,
    }
    assert summary.months == {"2026-03": [2, 1], "2026-04": [4, 2]}
    assert (summary.json_max, summary.json_large) == (20_000_000, 2)
    assert [r["commit"] for r in summary.blocked] == ["b", "c", "d"]
    assert replay.percentile(summary.cpu, 0.9) == 10
    assert replay.percentile([3.0, 1.0, 2.0], 0.5) == 2
    text = replay.format_summary(summary)
    assert "commits 6: pass 1, block 3, error 2; block 50.0% of all, 75.0% of gate" in text
    assert "cpu (user+sys): median 3.50, p90 10.00, max 10.00 s" in text
    assert "peak RSS: median 60.00, p90 300.00, max 300.00 MB" in text
    assert "JSON report: max 20.0 MB, 2 over 10 MB" in text
    assert "error: e exit 3: invalid input: taxonomy.yaml" in text


def test_summary_only_reads_a_csv(replay: ModuleType, tmp_path: Path) -> None:
    output = tmp_path / "replay.csv"
    assert replay.prepare_csv(output) == set()
    for row in (_row("a", "2026-03-01", 0), _row("b", "2026-03-02", 1, "new-claim=1")):
        replay.append_row(output, row)
    assert replay.prepare_csv(output) == {"a", "b"}
    blocks = tmp_path / "blocks.txt"
    printed = _run(tmp_path / "unused.log", "--summary-only", output, "--blocks", blocks)
    assert "commits 2: pass 1, block 1, error 0" in printed
    assert blocks.read_text(encoding="utf-8") == "b  2026-03-02  new-claim=1  b\n"


def test_a_csv_with_other_columns_is_refused(replay: ModuleType, tmp_path: Path) -> None:
    output = tmp_path / "other.csv"
    output.write_text(textwrap.dedent("commit,exit\nabc,0\n"), encoding="utf-8")
    with pytest.raises(SystemExit, match="has columns"):
        replay.prepare_csv(output)
