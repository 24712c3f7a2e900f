"""A stale evidence index (an ingest killed between storing records and rewriting the
index) no longer stops ``verify`` and every ``audit`` with exit 4.

The audit rebuilds the index in memory (the unlisted records are read and proven) and
says so in one line on stderr; ``verify`` rewrites the index atomically under the
writer lock when it can, and says so. A store that is really damaged — a listed record
gone, a forged record, a cited record missing — still stops both with exit 4.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from ledger_factories import make_entry, make_record
from ledger_workspace import Workspace, new_workspace
from sec_fixtures import reduced_recipes_root

from provenance.cli.main import cli
from provenance.errors import EXIT_INTEGRITY, EXIT_OK, IntegrityError
from provenance.store.record_index import (
    StaleIndexWarning,
    build_index,
    index_path,
    load_scoped,
    read_index,
    update_index,
)

MODEL = "MiniMaxAI/MiniMax-M3-NVFP4"
NARROW = ["--variant", "nvfp4", "--hardware", "b300", "--strategy", "single_node_tp"]


@pytest.fixture
def workspace(tmp_path: Path) -> Workspace:
    (tmp_path / "work").mkdir()
    return new_workspace(tmp_path / "work")


def killed_ingest(workspace: Workspace) -> tuple[list[str], list[str]]:
    """Two records indexed and cited; then an ingest stored two more and was killed
    before it rewrote the index (its entry was never written)."""
    old = [workspace.store.put(make_record(i))[0] for i in range(2)]
    workspace.ledger.write_entry(make_entry(tuple(old)))
    update_index(workspace.store, [])
    new = [workspace.store.put(make_record(i))[0] for i in range(5, 7)]
    return old, new


def _audit(tmp_path: Path, workspace: Workspace) -> list[str]:
    recipes = tmp_path / "recipes"
    if not recipes.exists():
        reduced_recipes_root(recipes)
    return [
        "audit",
        "MiniMaxAI/MiniMax-M3",
        "--recipes-root",
        str(recipes),
        "--ledger",
        str(workspace.ledger_root),
        "--evidence",
        str(workspace.evidence_root),
        *NARROW,
        "--format",
        "json",
    ]


def _verify(workspace: Workspace) -> list[str]:
    return [
        "verify",
        "--ledger",
        str(workspace.ledger_root),
        "--evidence",
        str(workspace.evidence_root),
    ]


def test_load_scoped_rebuilds_a_stale_index_in_memory(workspace: Workspace) -> None:
    old, new = killed_ingest(workspace)
    before = index_path(workspace.store).read_bytes()
    with pytest.warns(StaleIndexWarning, match=r"index\.json.*2 record file\(s\) not listed"):
        scoped = load_scoped(workspace.store, [MODEL])
    assert set(scoped.records) == {*old, *new}
    assert index_path(workspace.store).read_bytes() == before  # a reader writes nothing


def test_audit_of_a_store_left_by_a_killed_ingest_runs_and_says_so(
    tmp_path: Path, workspace: Workspace
) -> None:
    killed_ingest(workspace)
    result = CliRunner().invoke(cli, _audit(tmp_path, workspace))
    assert result.exit_code == EXIT_OK, result.output
    notes = [line for line in result.stderr.splitlines() if "index is stale" in line]
    assert len(notes) == 1 and notes[0].startswith("warning: "), result.stderr
    assert "rebuilt in memory" in notes[0]
    stale_report = json.loads(result.stdout)
    # the same audit as after rebuilding the index by hand
    assert CliRunner().invoke(cli, ["evidence", "index", *_verify(workspace)[1:]]).exit_code == 0
    clean = CliRunner().invoke(cli, _audit(tmp_path, workspace))
    assert clean.exit_code == EXIT_OK and "index is stale" not in clean.stderr
    assert stale_report == json.loads(clean.stdout)


def test_verify_rewrites_a_stale_index_and_passes(workspace: Workspace) -> None:
    old, new = killed_ingest(workspace)
    result = CliRunner().invoke(cli, _verify(workspace))
    assert result.exit_code == EXIT_OK, result.output
    assert "verify: OK" in result.stdout
    notes = [line for line in result.output.splitlines() if "index was stale" in line]
    assert len(notes) == 1 and notes[0].endswith("rewrote it"), result.output
    index = read_index(workspace.store)
    assert index is not None
    assert index == build_index(workspace.store.get(i) for i in (*old, *new))
    again = CliRunner().invoke(cli, _verify(workspace))
    assert again.exit_code == EXIT_OK and "index was stale" not in again.output


def test_a_listed_record_deleted_still_stops_audit_and_verify(
    tmp_path: Path, workspace: Workspace
) -> None:
    _, new = killed_ingest(workspace)
    update_index(workspace.store, [])  # the index lists the new records now
    workspace.store.path_of(new[0]).unlink()  # uncited, but the index says it exists
    with pytest.raises(IntegrityError, match="stale"):
        load_scoped(workspace.store, [MODEL])
    audit = CliRunner().invoke(cli, _audit(tmp_path, workspace))
    assert audit.exit_code == EXIT_INTEGRITY, audit.output
    assert CliRunner().invoke(cli, _verify(workspace)).exit_code == EXIT_INTEGRITY


def test_a_forged_unlisted_record_still_stops_audit_and_verify(
    tmp_path: Path, workspace: Workspace
) -> None:
    _, new = killed_ingest(workspace)
    path = workspace.store.path_of(new[0])
    path.write_bytes(path.read_bytes().replace(b'"b200"', b'"b300"'))  # content != its name
    audit = CliRunner().invoke(cli, _audit(tmp_path, workspace))
    assert audit.exit_code == EXIT_INTEGRITY, audit.output
    assert new[0][7:] in audit.stderr or new[0] in audit.stderr
    before = index_path(workspace.store).read_bytes()
    assert CliRunner().invoke(cli, _verify(workspace)).exit_code == EXIT_INTEGRITY
    assert index_path(workspace.store).read_bytes() == before  # not "repaired" over a forgery


def test_a_cited_record_missing_still_stops_the_audit(tmp_path: Path, workspace: Workspace) -> None:
    old, _ = killed_ingest(workspace)
    workspace.store.path_of(old[1]).unlink()
    audit = CliRunner().invoke(cli, _audit(tmp_path, workspace))
    assert audit.exit_code == EXIT_INTEGRITY
    assert old[1] in audit.stderr
