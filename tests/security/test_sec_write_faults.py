"""Disk full and read-only directories, on real file systems, through the command line.

Each case used to end in a Python traceback with exit 1, which the GitHub Action reads
as "gate failed". Now: one line, ``cannot write: <file>: <reason>``, exit 6
(``EXIT_WRITE``), and nothing half-written — no temporary file left, the ledger and
evidence store as they were or holding only whole files that ``verify`` accepts.

The file systems are small tmpfs mounts (``size=…``, ``ro``), which needs root with
CAP_SYS_ADMIN (the project's machines and CI); elsewhere these tests skip and
``tests/store/test_write_faults.py`` still covers the same paths by simulation.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from ledger_factories import make_entry, make_record
from ledger_workspace import new_workspace
from sec_fixtures import reduced_recipes_root, run_provenance, toy_repo, tree_state

from provenance.cli.main import cli
from provenance.errors import EXIT_OK, EXIT_WRITE
from provenance.store.record_index import update_index

Mount = Callable[[str, str], Path]
NARROW = ["--variant", "nvfp4", "--hardware", "b300", "--strategy", "single_node_tp"]


def _mount(target: Path, options: str) -> bool:
    target.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(target)],
        capture_output=True,
        check=False,
    )
    return done.returncode == 0


def _remount(target: Path, options: str) -> None:
    subprocess.run(["mount", "-o", f"remount,{options}", str(target)], check=True)


@pytest.fixture
def tmpfs(tmp_path: Path) -> Iterator[Mount]:
    mounted: list[Path] = []

    def make(name: str, options: str) -> Path:
        target = tmp_path / name
        if os.geteuid() != 0 or shutil.which("mount") is None or not _mount(target, options):
            pytest.skip("cannot mount a tmpfs here (needs root with CAP_SYS_ADMIN)")
        mounted.append(target)
        return target

    yield make
    for target in reversed(mounted):
        subprocess.run(["umount", "-l", str(target)], check=False)


def _fill(directory: Path) -> None:
    fd = os.open(directory / "filler", os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        while True:
            os.write(fd, b"\0" * 4096)
    except OSError:
        pass
    finally:
        os.close(fd)


def _one_line(stderr: str, *parts: str) -> None:
    lines = stderr.splitlines()
    assert len(lines) == 1, stderr
    assert lines[0].startswith("cannot write: "), stderr
    for part in parts:
        assert part in lines[0], (part, stderr)
    assert "Traceback" not in stderr


def _temp_files(*roots: Path) -> list[Path]:
    return [p for root in roots for p in root.rglob(".*") if p.name.endswith(".tmp")]


def _audit(tmp_path: Path, *extra: str) -> Result:
    recipes = reduced_recipes_root(tmp_path / "recipes")
    for name in ("ledger", "evidence"):
        (tmp_path / name).mkdir(exist_ok=True)
    args = ["audit", "MiniMaxAI/MiniMax-M3", "--recipes-root", str(recipes), *NARROW]
    args += ["--ledger", str(tmp_path / "ledger"), "--evidence", str(tmp_path / "evidence")]
    return CliRunner().invoke(cli, [*args, *extra])


@pytest.mark.parametrize("fmt", ["json", "html", "markdown", "sarif", "text"])
def test_audit_output_on_a_full_disk(tmp_path: Path, tmpfs: Mount, fmt: str) -> None:
    full = tmpfs("full", "size=64k")
    _fill(full)
    target = full / f"report.{fmt}"
    result = _audit(tmp_path, "--format", fmt, "--output", str(target))
    assert result.exit_code == EXIT_WRITE, result.output
    _one_line(result.stderr, str(target), "No space left on device")
    assert sorted(p.name for p in full.iterdir()) == ["filler"]  # no part, no temp file


def test_audit_output_in_a_read_only_directory(tmp_path: Path, tmpfs: Mount) -> None:
    frozen = tmpfs("frozen", "ro,size=64k")
    target = frozen / "report.json"
    result = _audit(tmp_path, "--format", "json", "--output", str(target))
    assert result.exit_code == EXIT_WRITE, result.output
    _one_line(result.stderr, str(target), "Read-only file system")
    assert list(frozen.iterdir()) == []


def test_add_sweep_to_a_read_only_ledger(tmp_path: Path, tmpfs: Mount) -> None:
    mounted = tmpfs("ledger-fs", "size=1m")
    workspace = new_workspace(mounted)
    record_id, _ = workspace.store.put(make_record(0))
    workspace.ledger.write_entry(make_entry((record_id,)))
    before = tree_state(mounted)
    _remount(mounted, "ro")
    args = ["ledger", "add-sweep", "--pr", "SemiAnalysisAI/InferenceX#2120", "--run", "7"]
    args += ["--attempt", "1", "--head", "c" * 40, "--conclusion", "success"]
    result = CliRunner().invoke(cli, [*args, "--ledger", str(workspace.ledger_root)])
    assert result.exit_code == EXIT_WRITE, result.output
    _one_line(result.stderr, str(workspace.ledger_root), "Read-only file system")
    assert tree_state(mounted) == before


def test_ingest_into_a_full_disk_then_resumes(tmp_path: Path, tmpfs: Mount) -> None:
    """A real process (the console script, as the Action runs it) fills a 16 KiB
    ledger + evidence file system mid-ingest; once there is room, verify passes and the
    ingest completes."""
    repo = toy_repo(tmp_path / "inferencex").root
    small = tmpfs("small", "size=16k")
    dirs = ["--ledger", str(small / "ledger"), "--evidence", str(small / "evidence")]
    ingest = ["ingest", "inferencex", str(repo), "--no-cache", *dirs]
    done = run_provenance(ingest, cwd=tmp_path)
    assert done.returncode == EXIT_WRITE, done.stderr
    _one_line(done.stderr, str(small), "No space left on device")
    assert _temp_files(small) == []
    _remount(small, "size=4m")
    verified = run_provenance(["verify", *dirs], cwd=tmp_path)
    assert verified.returncode == EXIT_OK, verified.stdout + verified.stderr
    again = run_provenance(ingest, cwd=tmp_path)
    assert again.returncode == EXIT_OK, again.stderr
    assert run_provenance(["verify", *dirs], cwd=tmp_path).returncode == EXIT_OK


def test_standard_output_on_a_full_disk(tmp_path: Path, tmpfs: Mount) -> None:
    """``provenance audit > file`` on a full disk (the shell opened the file)."""
    full = tmpfs("full", "size=64k")
    _fill(full)
    recipes = reduced_recipes_root(tmp_path / "recipes")
    for name in ("ledger", "evidence"):
        (tmp_path / name).mkdir()
    args = ["audit", "MiniMaxAI/MiniMax-M3", "--recipes-root", str(recipes), *NARROW]
    args += ["--ledger", "ledger", "--evidence", "evidence", "--format", "json"]
    with (full / "out.json").open("wb") as stdout:
        done = subprocess.run(
            ["python3", "-c", "from provenance.cli.main import main; main()", *args],
            cwd=tmp_path,
            stdout=stdout,
            stderr=subprocess.PIPE,
            text=True,
            timeout=120,
            check=False,
        )
    assert done.returncode == EXIT_WRITE, done.stderr
    _one_line(done.stderr, "standard output", "No space left on device")


def test_verify_of_a_read_only_store_with_a_stale_index(tmp_path: Path, tmpfs: Mount) -> None:
    """An index left stale by a killed ingest, on a read-only file system: verify cannot
    rewrite it and says that audits rebuild it; both pass, nothing is written."""
    mounted = tmpfs("store-fs", "size=1m")
    workspace = new_workspace(mounted)
    old = [workspace.store.put(make_record(i))[0] for i in range(2)]
    workspace.ledger.write_entry(make_entry(tuple(old)))
    update_index(workspace.store, [])
    workspace.store.put(make_record(5))  # then the ingest was killed
    before = tree_state(mounted)
    _remount(mounted, "ro")
    dirs = ["--ledger", str(workspace.ledger_root), "--evidence", str(workspace.evidence_root)]
    result = CliRunner().invoke(cli, ["verify", *dirs])
    assert result.exit_code == EXIT_OK, result.output
    notes = [line for line in result.output.splitlines() if "index was stale" in line]
    assert len(notes) == 1 and "audits rebuild it in memory" in notes[0], result.output
    audit = _audit(tmp_path, "--format", "json", *dirs)
    assert audit.exit_code == EXIT_OK, audit.output
    assert "rebuilt in memory" in audit.stderr
    assert tree_state(mounted) == before
