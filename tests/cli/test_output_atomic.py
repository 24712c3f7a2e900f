"""``--output FILE`` appears whole or not at all: a failure while the report is being
written leaves the previous file (or none) and no temporary file behind. A FIFO or a
device named as the output is written in place, never replaced by a regular file."""

from __future__ import annotations

import json
import os
import stat
import threading
from pathlib import Path
from typing import TextIO

import pytest
from click.testing import CliRunner

from provenance.cli.main import cli
from provenance.store.atomic import (
    atomic_binary_stream,
    atomic_text_stream,
    output_binary_stream,
    output_text_stream,
)


class _WriteFailedError(RuntimeError):
    pass


def test_text_stream_replaces_the_target_only_on_success(tmp_path: Path) -> None:
    target = tmp_path / "report.json"
    target.write_text("old\n")
    with pytest.raises(_WriteFailedError), atomic_text_stream(target) as out:
        out.write("half of a new rep")
        raise _WriteFailedError
    assert target.read_text() == "old\n"
    assert [p.name for p in tmp_path.iterdir()] == ["report.json"]
    with atomic_text_stream(target) as out:
        out.write("new — ünïcode\n")
    assert target.read_text(encoding="utf-8") == "new — ünïcode\n"
    assert [p.name for p in tmp_path.iterdir()] == ["report.json"]


def test_binary_stream_leaves_no_file_when_it_fails(tmp_path: Path) -> None:
    target = tmp_path / "graph.graphml"
    with pytest.raises(_WriteFailedError), atomic_binary_stream(target) as handle:
        handle.write(b"<graphml")
        raise _WriteFailedError
    assert list(tmp_path.iterdir()) == []


def test_audit_output_is_untouched_when_writing_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import provenance.report.formats as formats

    def broken(report: object, fmt: str, out: TextIO, **_: object) -> None:
        out.write('{"schema": "provenance.audit/v3", "verdicts": [')
        raise _WriteFailedError("disk full")

    monkeypatch.setattr(formats, "write_report", broken)
    target = tmp_path / "audit.json"
    target.write_text("previous report\n")
    result = CliRunner().invoke(
        cli, ["audit", "--format", "json", "--hardware", "b200", "--output", str(target)]
    )
    assert result.exit_code != 0
    assert target.read_text() == "previous report\n"
    assert [p.name for p in tmp_path.iterdir()] == ["audit.json"]


class _FifoReader:
    """Reads a FIFO to its end in a thread (a writer's ``open`` blocks until one reads)."""

    def __init__(self, fifo: Path) -> None:
        self.data = b""
        self._thread = threading.Thread(target=self._read, args=(fifo,), daemon=True)
        self._thread.start()

    def _read(self, fifo: Path) -> None:
        with open(fifo, "rb") as handle:
            self.data = handle.read()

    def join(self) -> bytes:
        self._thread.join(timeout=30)
        assert not self._thread.is_alive()
        return self.data


def test_a_fifo_output_is_written_in_place_not_replaced(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    reader = _FifoReader(fifo)
    with output_text_stream(fifo) as out:
        out.write("through the pipe — ü\n")
    assert reader.join() == "through the pipe — ü\n".encode()
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert [p.name for p in tmp_path.iterdir()] == ["pipe"]


def test_an_output_through_a_symlink_replaces_its_target_and_keeps_the_link(
    tmp_path: Path,
) -> None:
    target = tmp_path / "reports" / "audit.json"
    target.parent.mkdir()
    target.write_text("old\n")
    link = tmp_path / "latest.json"
    link.symlink_to(target)
    with output_binary_stream(link) as handle:
        handle.write(b"new\n")
    assert link.is_symlink()
    assert target.read_text() == "new\n"
    assert sorted(p.name for p in target.parent.iterdir()) == ["audit.json"]


def test_a_new_output_path_is_written_atomically(tmp_path: Path) -> None:
    target = tmp_path / "report.txt"
    with pytest.raises(_WriteFailedError), output_text_stream(target) as out:
        out.write("half")
        raise _WriteFailedError
    assert list(tmp_path.iterdir()) == []
    with output_text_stream(target) as out:
        out.write("whole\n")
    assert target.read_text() == "whole\n"


def test_audit_json_into_a_fifo_arrives_whole_and_the_fifo_stays(tmp_path: Path) -> None:
    fifo = tmp_path / "audit.fifo"
    os.mkfifo(fifo)
    reader = _FifoReader(fifo)
    result = CliRunner().invoke(
        cli, ["audit", "--format", "json", "--hardware", "b200", "--output", str(fifo)]
    )
    data = reader.join()
    assert result.exit_code == 0, result.output
    assert json.loads(data)["schema"] == "provenance.audit/v3"
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
