"""A sweep validates only the records whose content its swept head ran."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from pathlib import Path

from inferencex_fixtures import RepoBuilder, toy_history

from provenance.evidence.inferencex.ingest import extract
from provenance.evidence.inferencex.sweep_scope import records_run_at, sweep_scope
from provenance.model.ledger import LedgerEntry, PrRef, SweepRun
from provenance.sources.git import open_repo
from provenance.store.evidence import EvidenceStore
from provenance.store.ledger import merge_entries

PR = PrRef(repo="SemiAnalysisAI/InferenceX", number=2)


def _run(head: str, **update: object) -> SweepRun:
    run = SweepRun(run_id=1, head_sha=head, conclusion="success", source="test")
    return run.model_copy(update=update)


def test_a_head_runs_only_the_records_whose_files_it_holds(
    make_repo: Callable[[], RepoBuilder], tmp_path: Path
) -> None:
    builder = toy_history(make_repo())
    commits = [c.hexsha for c in builder.repo.iter_commits("HEAD", first_parent=True)][::-1]
    first, tuned, _resweep, _push, refreshed = commits
    result = extract(builder.root, "HEAD", None, None, [])
    single = {r.id for r in result.records if r.config_key == "toy-fp4-b300-vllm-mtp"}
    disagg = {r.id for r in result.records if r.config_key == "toy-fp4-b300-dynamo-vllm"}
    assert single and disagg
    repo = open_repo(builder.root)
    # #1's head has the untuned launcher and the old recipe: it ran none of them
    assert records_run_at(repo, first, result.records) == ()
    # #2's head has today's launcher (and config entry), not today's recipe
    assert set(records_run_at(repo, tuned, result.records)) == single
    assert set(records_run_at(repo, refreshed, result.records)) == single | disagg
    assert records_run_at(repo, "0" * 40, result.records) == ()

    store = EvidenceStore(tmp_path / "evidence")
    for record in result.records:
        store.put(record)
    entry = LedgerEntry(pr=PR, records=tuple(sorted(single | disagg)))
    scope = sweep_scope(builder.root, tmp_path / "evidence")
    ran = scope(entry, _run(tuned))
    scoped = entry.model_copy(update={"sweeps": (_run(tuned, scoped=True, ran=ran),)})
    assert all(scoped.validates(r) for r in single)
    assert not any(scoped.validates(r) for r in disagg)
    assert scoped.validated  # the PR has a green sweep; not every record it lists ran


def test_an_unchecked_sweep_validates_every_record_and_is_upgraded() -> None:
    records = ("sha256:" + "a" * 64, "sha256:" + "b" * 64)
    legacy = LedgerEntry(pr=PR, records=records, sweeps=(_run("c" * 40),))
    assert all(legacy.validates(r) for r in records)
    checked = LedgerEntry(
        pr=PR,
        sweeps=(_run("c" * 40, scoped=True, ran=records[:1], recorded=dt.date(2026, 1, 1)),),
    )
    merged = merge_entries(legacy, checked)
    (run,) = merged.sweeps
    assert run.scoped and run.ran == records[:1] and run.recorded is None  # facts kept
    assert merged.validates(records[0]) and not merged.validates(records[1])
    # a run checked once stays as checked
    assert merge_entries(merged, legacy).sweeps == merged.sweeps
