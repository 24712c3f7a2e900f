"""Reverts read from the first-parent line, and recorded on ledger entries."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner
from inferencex_fixtures import RepoBuilder, toy_history

from provenance.cli.main import cli
from provenance.evidence.inferencex.history import History, HistoryCommit
from provenance.evidence.inferencex.reverts import find_reverts, mark_reverts
from provenance.ingest.inferencex import IngestOptions, ingest_inferencex
from provenance.model.ledger import INFERENCEX_REPO, LedgerEntry, PrRef
from provenance.store.ledger import Ledger

MIRROR = Path(__file__).resolve().parents[3].parent / ".mirror/SemiAnalysisAI+InferenceX/repo"


def _line(*subjects: str) -> History:
    """A first-parent line, oldest subject first; SHAs ``a…``, ``b…`` in that order."""
    commits = [
        HistoryCommit(
            sha=chr(ord("a") + i) * 40,
            index=len(subjects) - 1 - i,
            timestamp=1_700_000_000 + i,
            subject=subject,
            pr=int(subject.rsplit("(#", 1)[1].rstrip(")")) if "(#" in subject else None,
        )
        for i, subject in enumerate(subjects)
    ]
    return History(commits=sorted(commits, key=lambda c: c.index))


def _entry(number: int, merge: str) -> LedgerEntry:
    return LedgerEntry(pr=PrRef(repo=INFERENCEX_REPO, number=number), merge_commit=merge)


def test_a_revert_a_reland_and_a_partial_revert() -> None:
    line = _line(
        "Add K2.6 EAGLE3 (#10)",
        'Revert "Add K2.6 EAGLE3 (#10)" (#11)',
        "Add K2.6 EAGLE3 (#12)",
        "dsv4: revert to #10 baseline (#13)",
        "Revert #12: contains patches (#14)",
    )
    messages = {"c" * 40: "Add K2.6 EAGLE3\n\nThis reverts commit bbbbbbbbb.\n"}
    reverts = find_reverts(line, messages)
    assert {line.by_sha[s].pr: [c.pr for c in t] for s, t in reverts.reverted.items()} == {
        11: [10],
        12: [11],  # a revert of the revert: #12 re-lands #10
        14: [12],
    }
    marked = {
        e.pr.number: e
        for e in mark_reverts([_entry(n, line.by_pr[n].sha) for n in (10, 12, 13)], line, reverts)
    }
    ten = marked[10]
    assert ten.reverted_by is not None and ten.reverted_by.pr == 11
    assert ten.reverted_by.source == f"git:{'b' * 40}"
    assert ten.relanded_by is not None and ten.relanded_by.pr == 12
    assert [r.pr for r in marked[12].reverts] == [11]
    assert marked[12].reverted_by is not None and marked[12].reverted_by.pr == 14
    assert marked[13] == _entry(13, line.by_pr[13].sha)  # "revert to #10" is no revert


def test_a_reverted_pr_validates_nothing() -> None:
    from provenance.model.ledger import RevertLink, SweepRun

    sweep = SweepRun(run_id=1, head_sha="a" * 40, conclusion="success", source="manual")
    entry = _entry(10, "a" * 40).model_copy(update={"sweeps": (sweep,), "records": ("sha256:1",)})
    assert entry.validates("sha256:1") and entry.validated
    reverted = entry.model_copy(
        update={"reverted_by": RevertLink(pr=11, commit="b" * 40, source=f"git:{'b' * 40}")}
    )
    assert not reverted.validates("sha256:1") and not reverted.validated


@pytest.fixture
def reverted(make_repo: Callable[[], RepoBuilder]) -> RepoBuilder:
    """The toy history, then #2 reverted by #5 (git's own revert message)."""
    builder = toy_history(make_repo())
    tuned = next(c for c in builder.repo.iter_commits() if str(c.summary).endswith("(#2)"))
    builder.repo.git.revert("--no-edit", tuned.hexsha)
    message = str(builder.repo.head.commit.message).replace('"\n', '" (#5)\n', 1)
    builder.repo.git.commit("--amend", "-q", "-m", message)
    return builder


def test_ingest_records_the_revert_and_the_command_finds_nothing_new(
    reverted: RepoBuilder, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    options = IngestOptions(
        repo=reverted.root, ledger=out / "ledger", evidence=out / "evidence", vllm_history=True
    )
    report = ingest_inferencex(options)
    assert 2 in report.reverts_written
    entry = Ledger(out / "ledger").entry(PrRef(repo=INFERENCEX_REPO, number=2))
    assert entry is not None and entry.reverted_by is not None and entry.reverted_by.pr == 5
    before = {p: p.read_bytes() for p in (out / "ledger").rglob("*.yaml")}
    result = CliRunner().invoke(
        cli,
        ["ledger", "reverts", "--inferencex", str(reverted.root), "--ledger", str(out / "ledger")],
    )
    assert result.exit_code == 0, result.output
    assert "nothing new to record" in result.output
    assert before == {p: p.read_bytes() for p in (out / "ledger").rglob("*.yaml")}


def test_the_command_marks_a_ledger_written_before_reverts_were_recorded(
    reverted: RepoBuilder, tmp_path: Path
) -> None:
    ledger = Ledger(tmp_path / "ledger")
    ledger.prs_dir.mkdir(parents=True)
    two = next(c for c in reverted.repo.iter_commits() if str(c.summary).endswith("(#2)"))
    ledger.write_entry(_entry(2, two.hexsha))
    result = CliRunner().invoke(
        cli,
        [
            "ledger",
            "reverts",
            "--inferencex",
            str(reverted.root),
            "--ledger",
            str(ledger.root),
            "--rev",
            "HEAD",
        ],
    )
    assert result.exit_code == 0, result.output
    assert "#2 reverted by #5" in result.output
    entry = ledger.entry(PrRef(repo=INFERENCEX_REPO, number=2))
    assert entry is not None and entry.reverted_by is not None


@pytest.mark.skipif(not MIRROR.is_dir(), reason="needs the InferenceX mirror")
def test_the_real_line_knows_2227_reverted_2158_and_2228_relanded_it(tmp_path: Path) -> None:
    from provenance.evidence.inferencex.history import first_parent_history
    from provenance.evidence.inferencex.reverts import read_reverts
    from provenance.sources.git import open_repo

    repo = open_repo(MIRROR)
    line = first_parent_history(repo, "843c6254ff69b567f772f6a5fd97675af3d04431")
    reverts = read_reverts(repo, line)
    by_pr = {line.by_sha[s].pr: {c.pr for c in t} for s, t in reverts.reverted.items()}
    assert by_pr[2227] == {2158} and by_pr[2228] == {2227} and by_pr[1392] == {1391}
    assert 1184 not in by_pr and 1186 not in by_pr  # "revert to #1143", "revert b200 portion"
