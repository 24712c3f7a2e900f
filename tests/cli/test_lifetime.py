"""Keep-until-exit: only the console script turns it on; then a command's large
structures are handed to it instead of being freed, and the output is unchanged."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

import provenance.cli.main as cli_main
from provenance.audit.pipeline import LoadedEvidence
from provenance.audit.verdicts import AuditReport
from provenance.cli import lifetime
from provenance.cli.main import cli

AUDIT = ("audit", "MiniMaxAI/MiniMax-M3", "--variant", "nvfp4", "--hardware", "b300")


class _LeftError(Exception):
    pass


def test_off_unless_the_console_script_turns_it_on(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lifetime, "_kept", None)
    assert lifetime.kept() is None
    lifetime.keep_until_exit()
    first = lifetime.kept()
    assert first == []
    lifetime.keep_until_exit()  # a second call keeps the same list
    assert lifetime.kept() is first


def test_main_turns_it_on(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lifetime, "_kept", None)

    def leave(code: int) -> None:
        raise _LeftError(code)

    monkeypatch.setattr(cli_main, "_leave", leave)
    with pytest.raises(_LeftError):
        cli_main.main(["--version"])
    assert lifetime.kept() == []


def test_audit_without_it_keeps_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lifetime, "_kept", None)
    done = CliRunner().invoke(cli, [*AUDIT, "--format", "json"])
    assert done.exit_code == 0, done.output
    assert lifetime.kept() is None


def test_audit_hands_its_structures_over_and_writes_the_same(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(lifetime, "_kept", None)
    plain = CliRunner().invoke(cli, [*AUDIT, "--format", "json"])
    assert plain.exit_code == 0, plain.output
    lifetime.keep_until_exit()
    out = tmp_path / "audit.json"
    done = CliRunner().invoke(cli, [*AUDIT, "--format", "json", "--output", str(out)])
    assert done.exit_code == 0, done.output
    written = json.loads(out.read_text(encoding="utf-8"))
    assert written == json.loads(plain.output)
    kept = lifetime.kept()
    assert kept is not None
    kinds = [type(item).__name__ for item in kept]
    assert kinds == ["LoadedEvidence", "tuple", "AuditReport"]
    loaded, pair, report = kept
    assert isinstance(loaded, LoadedEvidence) and isinstance(report, AuditReport)
    assert isinstance(pair, tuple)
    auditor, _cells = pair
    assert auditor.judge is loaded.judges["MiniMaxAI/MiniMax-M3"]
    assert report.summary.combinations == written["summary"]["combinations"]
