"""A write the system refuses — disk full, read-only file system — is one WriteError
(exit 6) naming the file, with nothing half-written: the target is as it was and no
temporary file is left. The system's refusal is simulated here (``os.write`` or
``os.open`` raising); ``tests/security/test_sec_write_faults.py`` fills and freezes
real file systems through the command line."""

from __future__ import annotations

import errno
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from ledger_factories import make_entry, make_record
from ledger_workspace import new_workspace

from provenance.errors import EXIT_WRITE, WriteError
from provenance.store.atomic import atomic_write_bytes, output_text_stream
from provenance.store.lock import writer_lock


def _refuse(code: int, original: Callable[..., Any]) -> Callable[..., Any]:
    """``original`` that succeeds once, then fails with ``code`` (a partial write happened)."""
    calls = []

    def refused(*args: Any, **kwargs: Any) -> Any:
        calls.append(args)
        if len(calls) > 1:
            raise OSError(code, os.strerror(code))
        return original(*args, **kwargs)

    return refused


def _leftovers(directory: Path) -> list[Path]:
    return [p for p in directory.rglob(".*") if p.name.endswith(".tmp")]


def test_a_full_disk_mid_write_keeps_the_old_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "entry.yaml"
    target.write_bytes(b"old\n")

    def short_write(fd: int, data: memoryview) -> int:
        return real_write(fd, data[:3])

    real_write = os.write
    monkeypatch.setattr(os, "write", _refuse(errno.ENOSPC, short_write))
    with pytest.raises(WriteError) as caught:
        atomic_write_bytes(target, b"new content that does not fit\n")
    assert caught.value.exit_code == EXIT_WRITE == 6
    assert caught.value.diagnostic() == f"cannot write: {target}: No space left on device"
    assert target.read_bytes() == b"old\n"
    assert _leftovers(tmp_path) == []


@pytest.mark.parametrize("code", [errno.EROFS, errno.EACCES, errno.ENOSPC])
def test_a_refused_create_names_the_target(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, code: int
) -> None:
    target = tmp_path / "sub" / "record.json"

    def refused(*args: Any, **kwargs: Any) -> int:
        raise OSError(code, os.strerror(code), str(args[0]))

    monkeypatch.setattr(os, "open", refused)
    with pytest.raises(WriteError, match=f"{target}: {os.strerror(code)}$"):
        atomic_write_bytes(target, b"x")


def test_a_full_disk_while_streaming_an_output_removes_the_temp_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "report.json"
    refused = pytest.raises(WriteError, match="No space left on device")
    with refused, output_text_stream(target) as out:
        out.write("{")
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
    assert not target.exists() and _leftovers(tmp_path) == []


def test_another_error_in_the_caller_block_is_not_called_a_write_error(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError), output_text_stream(tmp_path / "report.json") as out:
        out.write("{")
        (tmp_path / "absent").read_bytes()
    assert _leftovers(tmp_path) == []


def test_ledger_and_store_writes_on_a_full_disk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    workspace = new_workspace(tmp_path)
    record_id, _ = workspace.store.put(make_record(0))
    workspace.ledger.write_entry(make_entry((record_id,)))
    before = sorted((p, p.read_bytes()) for p in tmp_path.rglob("*") if p.is_file())
    monkeypatch.setattr(os, "write", _refuse(errno.ENOSPC, os.write))
    with pytest.raises(WriteError, match="No space left on device"):
        workspace.store.put(make_record(1))
        workspace.store.put(make_record(2))
    with pytest.raises(WriteError, match="No space left on device"):
        workspace.ledger.write_entry(make_entry((record_id, record_id)))
        workspace.ledger.write_entry(make_entry((record_id, record_id, record_id)))
    after = sorted((p, p.read_bytes()) for p in tmp_path.rglob("*") if p.is_file())
    kept = [item for item in after if item in before]
    assert kept == before  # nothing that was there changed
    assert len(after) - len(before) <= 1  # at most one whole new record, no part file
    assert _leftovers(tmp_path) == []


def test_a_read_only_ledger_cannot_be_locked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_open = os.open

    def read_only(path: Any, flags: int, *args: Any) -> int:
        if flags & os.O_CREAT:
            raise OSError(errno.EROFS, os.strerror(errno.EROFS), str(path))
        return real_open(path, flags, *args)

    monkeypatch.setattr(os, "open", read_only)
    refused = pytest.raises(WriteError, match=r"\.lock: Read-only file system$")
    with refused, writer_lock(tmp_path):
        pass
