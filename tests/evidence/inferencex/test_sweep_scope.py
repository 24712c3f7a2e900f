"""A sweep validates only the records whose content its swept head ran."""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Callable
from pathlib import Path

import pytest
from inferencex_fixtures import (
    LAUNCH_B300,
    SCRIPT_MTP,
    TOY_SCRIPT,
    RepoBuilder,
    toy_base_files,
    toy_history,
)

from provenance.evidence.inferencex.ingest import extract
from provenance.evidence.inferencex.sweep_scope import scope_run, sweep_scope
from provenance.model.ledger import LedgerEntry, PrRef, SweepRun
from provenance.model.record import EvidenceRecord, PartialMarker
from provenance.sources.git import Repo, open_repo
from provenance.store.evidence import EvidenceStore
from provenance.store.ledger import merge_entries

PR = PrRef(repo="SemiAnalysisAI/InferenceX", number=2)


def records_run_at(repo: Repo, head: str, records: list[EvidenceRecord]) -> tuple[str, ...]:
    return scope_run(repo, head, records).ran


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
    records = list(result.records)
    single = {r.id for r in result.records if r.config_key == "toy-fp4-b300-vllm-mtp"}
    disagg = {r.id for r in result.records if r.config_key == "toy-fp4-b300-dynamo-vllm"}
    assert single and disagg
    repo = open_repo(builder.root)
    # #1's head has the untuned launcher and the old recipe: it ran none of them
    assert records_run_at(repo, first, records) == ()
    # #2's head has today's launcher (and config entry), not today's recipe
    assert set(records_run_at(repo, tuned, records)) == single
    assert set(records_run_at(repo, refreshed, records)) == single | disagg
    assert records_run_at(repo, "0" * 40, records) == ()

    store = EvidenceStore(tmp_path / "evidence")
    for record in result.records:
        store.put(record)
    entry = LedgerEntry(pr=PR, records=tuple(sorted(single | disagg)))
    scope = sweep_scope(builder.root, tmp_path / "evidence")
    scoped = entry.model_copy(update={"sweeps": (scope(entry, _run(tuned)),)})
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


RUNNER = "runners/launch_b300-nv.sh"
#: The runner launcher composes ``…_v2.sh`` scripts instead (and one exists, serving other flags).
LAUNCH_V2 = LAUNCH_B300.replace('${SPEC_SUFFIX}.sh"', '${SPEC_SUFFIX}_v2.sh"')
SCRIPT_V2 = TOY_SCRIPT.replace("_mtp.sh", "_mtp_v2.sh")


def _runner_history(builder: RepoBuilder) -> tuple[str, str, list[EvidenceRecord]]:
    """Two swept heads whose runner launcher differs from the merged one, and the records
    of the merge: one head's change alters nothing served, the other's the served flags."""
    builder.commit("Add toy configs (#1)", toy_base_files())
    harmless = builder.commit(
        "Runner: log the host (#2)", {RUNNER: LAUNCH_B300.replace("set -euo", "hostname\nset -euo")}
    )
    rerouted = builder.commit(
        "Runner: v2 scripts (#3)",
        {
            RUNNER: LAUNCH_V2,
            SCRIPT_V2: SCRIPT_MTP.replace("--max-model-len", "--enforce-eager --max-model-len"),
        },
    )
    builder.commit("Runner as merged (#4)", {RUNNER: LAUNCH_B300, SCRIPT_V2: None})
    result = extract(builder.root, "HEAD", None, "toy-fp4-b300-vllm-mtp", [])
    assert result.records
    assert all(any(f.path == RUNNER for f in r.source.files) for r in result.records)
    return harmless, rerouted, list(result.records)


def test_a_runner_change_that_serves_the_same_record_ran_it(
    make_repo: Callable[[], RepoBuilder],
) -> None:
    builder = make_repo()
    harmless, _rerouted, records = _runner_history(builder)
    found = scope_run(open_repo(builder.root), harmless, records)
    assert found.ran == tuple(sorted(r.id for r in records))
    assert found.not_ran == ()
    # the files that differ are kept on the run, proven equivalent
    assert {n.record for n in found.equivalent} == set(found.ran)
    assert all(n.differing == (RUNNER,) and not n.reason for n in found.equivalent)


def test_a_runner_change_that_alters_the_served_flags_did_not_run_it(
    make_repo: Callable[[], RepoBuilder],
) -> None:
    builder = make_repo()
    _harmless, rerouted, records = _runner_history(builder)
    found = scope_run(open_repo(builder.root), rerouted, records)
    assert found.ran == () and found.equivalent == ()
    assert {n.record for n in found.not_ran} == {r.id for r in records}
    for note in found.not_ran:
        assert note.differing == (RUNNER,)
        assert "serve flags" in note.reason and "enforce_eager" in note.reason, note.reason


def test_a_head_that_cannot_be_re_extracted_ran_nothing_and_says_why(
    make_repo: Callable[[], RepoBuilder],
) -> None:
    builder = make_repo()
    builder.commit("Add toy configs (#1)", toy_base_files())
    # the swept head lost the config key's entry: nothing to compare, so not ran
    head = builder.commit("Drop the key (#2)", {"configs/nvidia-master.yaml": "{}\n"})
    builder.commit(
        "Restore (#3)",
        {"configs/nvidia-master.yaml": toy_base_files()["configs/nvidia-master.yaml"]},
    )
    records = list(extract(builder.root, "HEAD", None, "toy-fp4-b300-vllm-mtp", []).records)
    repo = open_repo(builder.root)
    found = scope_run(repo, head, records)
    assert found.ran == ()
    assert all("no record for config key" in n.reason for n in found.not_ran)
    missing = scope_run(repo, "0" * 40, records)
    assert all("not in the repository" in n.reason for n in missing.not_ran)


def test_a_partial_record_is_never_proven_equivalent(make_repo: Callable[[], RepoBuilder]) -> None:
    builder = make_repo()
    harmless, _rerouted, records = _runner_history(builder)
    marker = PartialMarker(construct_name="command-substitution", path=TOY_SCRIPT, line=3)
    partial = [r.model_copy(update={"partial": (marker,)}).with_id() for r in records]
    found = scope_run(open_repo(builder.root), harmless, partial)
    assert found.ran == ()
    assert all("partial" in n.reason for n in found.not_ran)


_DEFAULT = Path(__file__).resolve().parents[4] / ".mirror" / "SemiAnalysisAI+InferenceX" / "repo"
MIRROR = Path(os.environ.get("PROVENANCE_INFERENCEX", str(_DEFAULT)))
#: InferenceX#2120: merge commit, and the head its Run Sweep 29984401390 ran
#: (scripts/record_sweeps.sh: Klaud-Cold verdict, Ankur-singh sign-off, recipes#682).
MERGE_2120 = "7a428f813f26fb3db96c4746f8ab72bd6a7b3a16"
SWEPT_2120 = "0b896e92f975d0ef8e374fdc284b06444fc95242"


def test_mirror_2120_sweep_ran_its_single_node_nvfp4_records() -> None:
    if not (MIRROR / "objects").is_dir() and not (MIRROR / ".git").exists():
        pytest.skip(f"InferenceX mirror not found at {MIRROR}")
    result = extract(MIRROR, MERGE_2120, "minimaxm3", "minimaxm3-fp4-b*-vllm*", [2120])
    records = [r for r in result.records if r.topology.kind == "single_node"]
    indexer = [r for r in records if r.roles["serve"].get("attention_config.indexer_kv_dtype")]
    assert records and all(r.checkpoint == "nvidia/MiniMax-M3-NVFP4" for r in records)
    assert indexer and all(
        r.roles["serve"]["attention_config.indexer_kv_dtype"] == "fp8" for r in indexer
    )
    found = scope_run(open_repo(MIRROR), SWEPT_2120, records)
    assert found.not_ran == ()
    assert set(found.ran) == {r.id for r in records}
    # the runner launchers changed on main after the swept head; what ran did not
    differing = {path for note in found.equivalent for path in note.differing}
    assert "runners/launch_b200-dgxc.sh" in differing
    assert differing <= {"runners/launch_b200-dgxc.sh", "runners/launch_b300-nv.sh"}
