"""``--output FILE`` appears whole or not at all: a failure while the report is being
written leaves the previous file (or none) and no temporary file behind."""

from __future__ import annotations

from pathlib import Path
from typing import TextIO

import pytest
from click.testing import CliRunner

from provenance.cli.main import cli
from provenance.store.atomic import atomic_binary_stream, atomic_text_stream


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
