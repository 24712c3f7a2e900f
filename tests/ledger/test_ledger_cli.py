"""``provenance ledger add-sweep`` and ``provenance schema``."""

from __future__ import annotations

import datetime as dt
import json

import jsonschema
import pytest
from click.testing import CliRunner, Result
from ledger_factories import PR, make_entry, make_record
from ledger_workspace import Workspace

from provenance.cli.main import cli
from provenance.errors import EXIT_INPUT, EXIT_INTEGRITY, EXIT_OK, EXIT_USAGE
from provenance.model.ledger import Declaration, Declarations, SelectionPattern
from provenance.safe_yaml import load_yaml
from provenance.schemas import KINDS, generate
from provenance.store.lock import writer_lock

HEAD = "0123456789abcdef0123456789abcdef01234567"


def add_sweep(workspace: Workspace, *extra: str, run: str = "19345678") -> Result:
    return CliRunner().invoke(
        cli,
        [
            "ledger",
            "add-sweep",
            "--pr",
            "SemiAnalysisAI/InferenceX#2314",
            "--run",
            run,
            "--attempt",
            "2",
            "--head",
            HEAD,
            "--conclusion",
            "success",
            "--ledger",
            str(workspace.ledger_root),
            *extra,
        ],
    )


def test_add_sweep_creates_entry(workspace: Workspace) -> None:
    result = add_sweep(
        workspace,
        "--source",
        "review-thread:https://github.com/SemiAnalysisAI/InferenceX/pull/2314#c1",
        "--eval",
        "gsm8k=0.91..0.93",
        "--eval",
        "gpqa=0.6",
    )
    assert result.exit_code == EXIT_OK, result.output
    assert "new entry" in result.stdout
    (entry,) = workspace.ledger.entries()
    assert str(entry.pr) == "SemiAnalysisAI/InferenceX#2314"
    (sweep,) = entry.sweeps
    assert (sweep.run_id, sweep.attempt, sweep.head_sha) == (19345678, 2, HEAD)
    assert sweep.green and entry.validated
    assert [(e.name, e.low, e.high) for e in sweep.evals] == [
        ("gsm8k", 0.91, 0.93),
        ("gpqa", 0.6, 0.6),
    ]
    assert sweep.source.startswith("review-thread:")
    assert all(e.source == sweep.source for e in sweep.evals)
    assert sweep.recorded is not None
    assert sweep.source in entry.sources


def test_add_sweep_is_idempotent_and_keeps_existing_facts(workspace: Workspace) -> None:
    workspace.ledger.write_entry(make_entry(("sha256:" + "1" * 64,)))
    for _ in range(2):
        result = CliRunner().invoke(
            cli,
            [
                "ledger",
                "add-sweep",
                "--pr",
                str(PR),
                "--run",
                "7",
                "--attempt",
                "1",
                "--head",
                HEAD.upper(),
                "--conclusion",
                "failure",
                "--ledger",
                str(workspace.ledger_root),
            ],
        )
        assert result.exit_code == EXIT_OK, result.output
    assert "already recorded" in result.stdout
    entry = workspace.ledger.entry(PR)
    assert entry is not None
    assert entry.records == ("sha256:" + "1" * 64,)
    assert len(entry.sweeps) == 1 and not entry.validated


def test_conflicting_sweep_is_refused(workspace: Workspace) -> None:
    assert add_sweep(workspace).exit_code == EXIT_OK
    result = add_sweep(workspace, "--url", "https://example.invalid/run")
    assert result.exit_code == EXIT_USAGE
    assert "different facts" in result.stderr
    assert len(workspace.ledger.entries()[0].sweeps) == 1


@pytest.mark.parametrize(
    "extra",
    [
        ("--eval", "gsm8k"),
        ("--eval", "gsm8k=0.9..0.1"),
        ("--eval", "gsm8k=a..b"),
        ("--eval", "gsm8k=nan"),
        ("--pr", "not a pr"),
        ("--head", "xyz"),
    ],
)
def test_bad_arguments_are_usage_errors(workspace: Workspace, extra: tuple[str, str]) -> None:
    result = add_sweep(workspace, *extra)
    assert result.exit_code == EXIT_USAGE, result.output
    assert workspace.ledger.entries() == []


def test_bad_conclusion_is_usage_error(workspace: Workspace) -> None:
    result = add_sweep(workspace, "--conclusion", "green")
    assert result.exit_code == EXIT_USAGE


def test_add_sweep_while_locked_fails_with_4(workspace: Workspace) -> None:
    with writer_lock(workspace.ledger_root):
        result = add_sweep(workspace, "--wait", "0.1")
    assert result.exit_code == EXIT_INTEGRITY
    assert "ledger locked" in result.stderr and "pid=" in result.stderr
    assert workspace.ledger.entries() == []


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_schema_command_prints_the_schema(kind: str) -> None:
    result = CliRunner().invoke(cli, ["schema", kind])
    assert result.exit_code == EXIT_OK
    schema = json.loads(result.stdout)
    assert schema == generate(kind)
    jsonschema.Draft202012Validator.check_schema(schema)


def test_unknown_schema_kind_is_usage_error() -> None:
    assert CliRunner().invoke(cli, ["schema", "nope"]).exit_code == EXIT_USAGE


def test_ledger_files_validate_against_their_schemas(workspace: Workspace) -> None:
    assert add_sweep(workspace, "--eval", "gsm8k=0.9..0.95").exit_code == EXIT_OK
    (path,) = workspace.ledger.entry_paths()
    jsonschema.validate(
        json.loads(json.dumps(load_yaml(path).data, default=str)), generate("ledger-pr")
    )


def test_add_sweep_on_a_malformed_entry_exits_3_and_writes_nothing(workspace: Workspace) -> None:
    path = workspace.ledger_root / "prs" / "SemiAnalysisAI__InferenceX__2314.yaml"
    path.parent.mkdir()
    path.write_text(
        "schema: provenance.ledger.pr/v1\n"
        "pr: {repo: SemiAnalysisAI/InferenceX, number: 2314}\n"
        "pr: x\n"
    )
    before = path.read_bytes()
    result = add_sweep(workspace)
    assert result.exit_code == EXIT_INPUT
    assert f"{path}:3" in result.stderr and "duplicate key" in result.stderr
    assert path.read_bytes() == before
    assert sorted(p.name for p in path.parent.iterdir()) == [path.name]


def test_stored_records_and_declarations_validate_against_their_schemas(
    workspace: Workspace,
) -> None:
    record_id, _ = workspace.store.put(make_record(3))
    data = json.loads(workspace.store.path_of(record_id).read_bytes())
    jsonschema.validate(data, generate("evidence-record"))
    workspace.ledger.write_declarations(
        Declarations(
            declarations=(
                Declaration(
                    id="d1", match=SelectionPattern(), reason="why", date=dt.date(2026, 11, 30)
                ),
            )
        )
    )
    loaded = load_yaml(workspace.ledger.declarations_path).data
    jsonschema.validate(json.loads(json.dumps(loaded, default=str)), generate("declarations"))
