"""The evidence store's checkpoint index: written by ingest, used by the audit, verified."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from ledger_factories import make_entry, make_record
from ledger_workspace import Workspace

from provenance.audit.normaliser import PolicyNormaliser
from provenance.audit.pipeline import load_graph
from provenance.cli.main import cli
from provenance.errors import EXIT_INTEGRITY, EXIT_OK, IntegrityError
from provenance.model.record import EvidenceRecord
from provenance.store.record_index import (
    StaleIndexWarning,
    build_index,
    index_path,
    load_scoped,
    read_index,
    update_index,
    write_index,
)
from provenance.store.verify import VerifyReport

MODEL_A = "MiniMaxAI/MiniMax-M3-NVFP4"
MODEL_B = "example/Other-Model-B"


def record_b(index: int = 0) -> EvidenceRecord:
    return make_record(index).model_copy(update={"checkpoint": MODEL_B, "config_key": "b-fp4"})


def populate(workspace: Workspace) -> tuple[list[str], list[str]]:
    """Two records of model A and two of model B, one entry citing all, and the index."""
    a = [workspace.store.put(make_record(i))[0] for i in range(2)]
    b = [workspace.store.put(record_b(i))[0] for i in range(2)]
    workspace.ledger.write_entry(make_entry((*a, *b)))
    update_index(workspace.store, [])
    return a, b


def verify_json(workspace: Workspace) -> tuple[int, VerifyReport]:
    result = CliRunner().invoke(
        cli,
        [
            "verify",
            "--ledger",
            str(workspace.ledger_root),
            "--evidence",
            str(workspace.evidence_root),
            "--format",
            "json",
        ],
    )
    return result.exit_code, VerifyReport.model_validate_json(result.stdout)


def test_index_lists_records_by_checkpoint_and_verifies(workspace: Workspace) -> None:
    a, b = populate(workspace)
    index = read_index(workspace.store)
    assert index is not None
    assert index.checkpoints == {
        "minimax-m3-nvfp4": tuple(sorted(a)),
        "other-model-b": tuple(sorted(b)),
    }
    assert index.records == 4
    code, report = verify_json(workspace)
    assert code == EXIT_OK and report.summary.index == "ok" and not report.index_problems


def test_tampered_index_fails_verify_and_the_audit(workspace: Workspace) -> None:
    a, _ = populate(workspace)
    path = index_path(workspace.store)
    data = json.loads(path.read_text())
    data["checkpoints"]["minimax-m3-nvfp4"] = [a[0]]  # hide a record, digest left as is
    path.write_text(json.dumps(data))
    code, report = verify_json(workspace)
    assert code == EXIT_INTEGRITY and report.summary.index == "bad"
    assert str(path) in report.index_problems[0] and "digest" in report.index_problems[0]
    with pytest.raises(IntegrityError, match=r"index\.json"):
        load_scoped(workspace.store, [MODEL_A])


def test_stale_index_is_rebuilt_by_the_audit_and_rewritten_by_verify(
    workspace: Workspace,
) -> None:
    """An index missing a sound record (an interrupted ingest) stops nothing
    (tests/store/test_stale_index.py has the rest); one listing a record the store lacks
    still fails."""
    a, b = populate(workspace)
    # a well-formed index (its digest right) that misses a record of the store
    write_index(workspace.store, build_index([workspace.store.get(i) for i in (*a, b[0])]))
    with pytest.warns(StaleIndexWarning, match="1 record file"):
        assert set(load_scoped(workspace.store, [MODEL_B]).records) == set(b)
    code, report = verify_json(workspace)
    assert code == EXIT_OK and report.summary.index == "ok"
    assert any("1 record file(s) not listed" in w for w in report.warnings)
    assert read_index(workspace.store) == build_index(workspace.store.get(i) for i in (*a, *b))
    write_index(workspace.store, build_index([workspace.store.get(i) for i in (*a, *b)]))
    workspace.store.path_of(b[1]).unlink()
    with pytest.raises(IntegrityError, match="stale"):
        load_scoped(workspace.store, [MODEL_A])


def test_index_listing_a_record_under_another_checkpoint_fails(workspace: Workspace) -> None:
    a, b = populate(workspace)
    records = {i: workspace.store.get(i) for i in (*a, *b)}
    index = build_index(records.values())
    swapped = index.model_copy(
        update={
            "checkpoints": {
                "minimax-m3-nvfp4": tuple(sorted([a[0], b[0]])),
                "other-model-b": tuple(sorted([a[1], b[1]])),
            },
        }
    )
    write_index(workspace.store, swapped.model_copy(update={"digest": swapped.computed_digest()}))
    code, report = verify_json(workspace)
    assert code == EXIT_INTEGRITY and "wrong checkpoint" in " ".join(report.index_problems)
    with pytest.raises(IntegrityError, match="but the record ran"):
        load_scoped(workspace.store, [MODEL_A])


def test_missing_index_is_a_warning_and_the_audit_loads_everything(workspace: Workspace) -> None:
    a, _ = populate(workspace)
    index_path(workspace.store).unlink()
    code, report = verify_json(workspace)
    assert code == EXIT_OK and report.summary.index == "missing"
    assert any("no evidence index" in w for w in report.warnings)
    scoped = load_scoped(workspace.store, [MODEL_A])
    assert not scoped.indexed and set(scoped.records) == set(a)


def test_audit_of_model_a_reads_no_record_of_model_b(workspace: Workspace) -> None:
    a, b = populate(workspace)
    # a record of B that cannot be read at all: only an audit that opens it would fail
    workspace.store.path_of(b[0]).write_bytes(b"\x00 not json")
    scoped = load_scoped(workspace.store, [MODEL_A])
    assert scoped.indexed and set(scoped.records) == set(a)
    assert set(scoped.present) == {*a, *b}
    graph, _ = load_graph(
        workspace.ledger_root, workspace.evidence_root, PolicyNormaliser(), [MODEL_A]
    )
    assert set(graph.records) == set(a)
    with pytest.raises(IntegrityError, match=b[0][7:9]):
        load_graph(workspace.ledger_root, workspace.evidence_root, PolicyNormaliser())
    code, _ = verify_json(workspace)  # verify stays complete
    assert code == EXIT_INTEGRITY


def test_a_cited_record_missing_from_the_store_still_stops_the_audit(
    workspace: Workspace,
) -> None:
    _, b = populate(workspace)
    workspace.store.path_of(b[1]).unlink()
    update_index(workspace.store, [])  # even with the index rebuilt to match the store
    with pytest.raises(IntegrityError, match="missing from"):
        load_graph(workspace.ledger_root, workspace.evidence_root, PolicyNormaliser(), [MODEL_A])


def test_update_index_is_incremental_and_rebuilds_when_stale(workspace: Workspace) -> None:
    a, b = populate(workspace)
    added = make_record(7)
    added_id, _ = workspace.store.put(added)
    # the other records cannot be read: an incremental update must not read them
    saved = {i: workspace.store.path_of(i).read_bytes() for i in (*a, *b)}
    for i in (*a, *b):
        workspace.store.path_of(i).write_bytes(b"garbage")
    assert update_index(workspace.store, [added.with_id()])
    index = read_index(workspace.store)
    assert index is not None and added_id in index.checkpoints["minimax-m3-nvfp4"]
    for i, raw in saved.items():
        workspace.store.path_of(i).write_bytes(raw)
    index_path(workspace.store).write_text("{}")  # damaged: rebuilt from every record
    assert update_index(workspace.store, [])
    rebuilt = read_index(workspace.store)
    assert rebuilt is not None and rebuilt.ids() == {*a, *b, added_id}


def test_evidence_index_command_writes_it(workspace: Workspace) -> None:
    populate(workspace)
    index_path(workspace.store).unlink()
    result = CliRunner().invoke(
        cli,
        [
            "evidence",
            "index",
            "--ledger",
            str(workspace.ledger_root),
            "--evidence",
            str(workspace.evidence_root),
        ],
    )
    assert result.exit_code == 0, result.output
    assert "4 records, 2 checkpoints (written)" in result.output
    assert read_index(workspace.store) is not None
