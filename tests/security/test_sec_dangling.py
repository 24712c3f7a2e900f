"""A ledger entry citing a missing evidence record stops the audit (issue #20, class 3).

``verify`` reports such a reference ``dangling`` (exit 4); ``audit`` used to
drop the record silently and exit 0 with one record fewer. Now every command
that loads the evidence graph exits 4 naming the ledger entry and the record.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner
from ledger_factories import make_entry, make_record
from ledger_workspace import new_workspace
from sec_fixtures import REPO_ROOT, reduced_recipes_root

from provenance.cli.main import cli
from provenance.errors import EXIT_INTEGRITY, EXIT_OK
from provenance.store.evidence import EvidenceStore
from provenance.store.ledger import Ledger

NARROW = ["--hardware", "b300", "--strategy", "single_node_tp", "--features", "none"]


def _audit(recipes: Path, ledger: Path, evidence: Path, *extra: str) -> list[str]:
    return [
        "audit",
        "MiniMaxAI/MiniMax-M3",
        "--recipes-root",
        str(recipes),
        "--ledger",
        str(ledger),
        "--evidence",
        str(evidence),
        *NARROW,
        "--variant",
        "nvfp4",
        *extra,
    ]


def test_a_missing_record_in_a_hand_made_ledger_stops_audit_and_graph(tmp_path: Path) -> None:
    (tmp_path / "work").mkdir()
    workspace = new_workspace(tmp_path / "work")
    ids = [workspace.store.put(make_record(i))[0] for i in range(3)]
    workspace.ledger.write_entry(make_entry(tuple(ids)))
    recipes = reduced_recipes_root(tmp_path / "recipes")
    dirs = ["--ledger", str(workspace.ledger_root), "--evidence", str(workspace.evidence_root)]
    audit = _audit(recipes, workspace.ledger_root, workspace.evidence_root)
    assert CliRunner().invoke(cli, audit).exit_code == EXIT_OK
    workspace.store.path_of(ids[1]).unlink()
    for args in (audit, ["graph", *dirs], ["verify", *dirs]):
        result = CliRunner().invoke(cli, args)
        assert result.exit_code == EXIT_INTEGRITY, (args[0], result.output)
        assert ids[1] in result.output, args[0]
        assert "Traceback" not in result.output


@pytest.mark.parametrize("fmt", ["text", "json", "markdown"])
def test_a_missing_record_in_a_copy_of_the_real_ledger_stops_audit(
    fmt: str, tmp_path: Path
) -> None:
    ledger, evidence = tmp_path / "ledger", tmp_path / "evidence"
    shutil.copytree(REPO_ROOT / "ledger", ledger)
    shutil.copytree(REPO_ROOT / "evidence", evidence)
    entry = next(e for e in Ledger(ledger).entries() if e.records)
    victim = entry.records[0]
    EvidenceStore(evidence).path_of(victim).unlink()
    recipes = reduced_recipes_root(tmp_path / "recipes")
    result = CliRunner().invoke(cli, _audit(recipes, ledger, evidence, "--format", fmt))
    assert result.exit_code == EXIT_INTEGRITY, result.output
    assert result.output.startswith("integrity failure: ")
    assert str(Ledger(ledger).path_of(entry.pr)) in result.output
    assert victim in result.output
    assert "Traceback" not in result.output
