"""Atomic writes: interrupted at any step, the old file is intact and no temp file is visible."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from ledger_factories import make_entry, make_record

from provenance.errors import WriteError
from provenance.store.atomic import (
    atomic_write_bytes,
    ensure_directory,
    is_temp_name,
    remove_stale_temp_files,
)
from provenance.store.evidence import EvidenceStore
from provenance.store.ledger import Ledger
from provenance.store.lock import writer_lock

_OPS = ("open", "write", "fsync", "close", "replace", "mkdir")


class InjectedError(OSError):
    pass


@contextmanager
def fail_at_step(monkeypatch: pytest.MonkeyPatch, step: int) -> Iterator[list[str]]:
    """Make the ``step``-th file-system call (1-based) of the operations in _OPS fail.

    Yields the list of calls seen, so the caller knows how many steps there were.
    ``close`` really closes before failing (an error reported by close); the
    others fail without doing anything (the process stopped before the call).
    """
    calls: list[str] = []
    originals: dict[str, Callable[..., Any]] = {name: getattr(os, name) for name in _OPS}

    def wrap(name: str) -> Callable[..., Any]:
        original = originals[name]

        def wrapper(*args: Any, **kwargs: Any) -> Any:
            calls.append(name)
            if len(calls) == step:
                if name == "close":
                    original(*args, **kwargs)
                raise InjectedError(f"interrupted at step {step} ({name})")
            return original(*args, **kwargs)

        return wrapper

    with monkeypatch.context() as patch:
        for name in _OPS:
            patch.setattr(os, name, wrap(name))
        yield calls


def visible_files(directory: Path) -> list[Path]:
    return sorted(p for p in directory.rglob("*") if p.is_file())


def temp_files(directory: Path) -> list[Path]:
    return [p for p in visible_files(directory) if is_temp_name(p.name)]


def test_atomic_write_creates_and_replaces(tmp_path: Path) -> None:
    target = tmp_path / "a" / "b" / "file.txt"
    atomic_write_bytes(target, b"one")
    assert target.read_bytes() == b"one"
    atomic_write_bytes(target, b"two" * 100_000)
    assert target.read_bytes() == b"two" * 100_000
    assert temp_files(tmp_path) == []


def test_ensure_directory_is_idempotent(tmp_path: Path) -> None:
    ensure_directory(tmp_path / "x" / "y")
    ensure_directory(tmp_path / "x" / "y")
    assert (tmp_path / "x" / "y").is_dir()


def _interrupt_every_step(
    monkeypatch: pytest.MonkeyPatch, write: Callable[[], object], check: Callable[[bool], None]
) -> int:
    """Run ``write`` failing at step 1, 2, ... until it succeeds; ``check(replaced)`` after each.

    Returns the number of steps that were interrupted.
    """
    step = 0
    while True:
        step += 1
        with fail_at_step(monkeypatch, step) as calls:
            try:
                write()
            except (InjectedError, WriteError):  # the writers name the file (exit 6)
                check("replace" in calls[:-1])
                continue
        check(True)
        assert len(calls) < step, "the write finished although a step failed"
        return step - 1


def test_interrupted_write_leaves_previous_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "entry.yaml"
    old, new = b"old content\n" * 1000, b"new content\n" * 2000
    target.write_bytes(old)

    def check(replaced: bool) -> None:
        assert target.read_bytes() == (new if replaced else old)
        assert temp_files(tmp_path) == []
        assert visible_files(tmp_path) == [target]
        if replaced:
            target.write_bytes(old)  # reset for the next step

    steps = _interrupt_every_step(monkeypatch, lambda: atomic_write_bytes(target, new), check)
    # open, write, fsync, close, replace, open(dir), fsync(dir), close(dir) at least
    assert steps >= 8


def test_interrupted_write_into_new_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "ab" / "cd.json"

    def check(replaced: bool) -> None:
        if replaced:
            assert target.read_bytes() == b"{}\n"
            target.unlink()
        else:
            assert not target.exists()
        assert temp_files(tmp_path) == []
        if target.parent.exists():  # start every step from scratch
            target.parent.rmdir()

    steps = _interrupt_every_step(monkeypatch, lambda: atomic_write_bytes(target, b"{}\n"), check)
    assert steps >= 12  # mkdir and the parent's fsync come first


def test_interrupted_ledger_entry_write_keeps_previous_entry(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ledger = Ledger(tmp_path)
    first = make_entry(("sha256:" + "1" * 64,))
    second = make_entry(("sha256:" + "1" * 64, "sha256:" + "2" * 64), title="second title")
    ledger.write_entry(first)

    def check(replaced: bool) -> None:
        assert ledger.entries() == [second if replaced else first]
        assert temp_files(tmp_path) == []
        if replaced:
            ledger.write_entry(first)

    steps = _interrupt_every_step(monkeypatch, lambda: ledger.write_entry(second), check)
    assert steps >= 8


def test_interrupted_record_put_leaves_store_consistent(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = EvidenceStore(tmp_path)
    kept_id, _ = store.put(make_record(0))
    record = make_record(1)

    def check(replaced: bool) -> None:
        assert all(check.ok for check in store.check_all())
        expected = {kept_id, record.compute_id()} if replaced else {kept_id}
        assert set(store.ids()) == expected
        assert temp_files(tmp_path) == []
        if replaced:
            store.path_of(record.compute_id()).unlink()

    steps = _interrupt_every_step(monkeypatch, lambda: store.put(record), check)
    assert steps >= 8


def test_stale_temp_files_of_dead_writers_are_removed(tmp_path: Path) -> None:
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    stale = tmp_path / "ab" / f".cd.json.{dead.pid}.0123abcd.tmp"
    live = tmp_path / "ab" / f".ef.json.{os.getpid()}.0123abcd.tmp"
    foreign = tmp_path / ".notes.tmp"
    stale.parent.mkdir()
    for path in (stale, live, foreign):
        path.write_text("{half")
    assert remove_stale_temp_files(tmp_path) == [stale]
    assert live.exists() and foreign.exists() and not stale.exists()


def test_taking_the_lock_cleans_the_ledger(tmp_path: Path) -> None:
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    stale = tmp_path / "prs" / f".a__b__1.yaml.{dead.pid}.00000000.tmp"
    stale.parent.mkdir()
    stale.write_text("schema: provenance.ledger.pr/v1\npr: {repo: a/b, numb")
    with writer_lock(tmp_path):
        assert not stale.exists()
