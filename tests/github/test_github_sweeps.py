"""Green Run Sweep runs of ledger PRs: which runs count, and what reaches the ledger."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest
from github_fake import SENTINEL_TOKEN, FakeGitHub, Response, assert_no_sentinel, serve_pr_2120

from provenance.errors import NetworkError, UsageError
from provenance.github.sweeps import (
    RunVerdict,
    collect_pr_sweeps,
    decide,
    ingest_sweeps,
    job_kind,
    render_text,
    resolve_pr,
    tally_jobs,
)
from provenance.model.ledger import LedgerEntry, PrRef, SweepRun
from provenance.sources.github import (
    GitHubClient,
    GitHubSettings,
    GitHubUnavailable,
    JobInfo,
    WorkflowRunInfo,
)
from provenance.store.ledger import Ledger

PR_2120 = PrRef(repo="SemiAnalysisAI/InferenceX", number=2120)
PR_2310 = PrRef(repo="SemiAnalysisAI/InferenceX", number=2310)
SWEPT_HEAD = "0b896e92f975d0ef8e374fdc284b06444fc95242"
TODAY = dt.date(2026, 11, 30)


def client_for(fake: FakeGitHub) -> GitHubClient:
    return GitHubClient(SENTINEL_TOKEN, GitHubSettings(api_url=fake.base_url, retries=1, backoff=0))


@pytest.fixture
def ledger_root(tmp_path: Path) -> Path:
    root = tmp_path / "ledger"
    ledger = Ledger(root)
    ledger.write_entry(
        LedgerEntry(
            pr=PR_2120,
            title="Update vLLM MiniMax-M3 image tags",
            merge_commit="7a428f813f26fb3db96c4746f8ab72bd6a7b3a16",
            sources=("git:7a428f813f26fb3db96c4746f8ab72bd6a7b3a16",),
        )
    )
    ledger.write_entry(LedgerEntry(pr=PR_2310, title="[NV] Refresh NVFP4 B300 8k1k disagg"))
    return root


def snapshot(root: Path) -> dict[str, bytes]:
    """Every ledger file's bytes (the empty writer-lock file aside)."""
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and p.name != ".lock"
    }


def run_info(
    run_id: int, head: str, conclusion: str | None, status: str = "completed"
) -> WorkflowRunInfo:
    return WorkflowRunInfo(
        run_id=run_id,
        attempt=1,
        name="Run Sweep",
        path=".github/workflows/run-sweep.yml",
        head_sha=head,
        head_branch="b",
        event="pull_request",
        status=status,
        conclusion=conclusion,
        html_url=f"https://github.com/o/r/actions/runs/{run_id}",
    )


# --- pure classification ----------------------------------------------------------


def test_job_kinds_follow_the_caller_job_prefixes() -> None:
    assert job_kind("single-node 8k1k / p1 | minimaxm3 fp4 b200 vllm TP4 c4") == "benchmark"
    assert (
        job_kind(
            "multi-node 8k1k / p1 | minimaxm3 fp4 b300 dynamo-vllm 4P (TP1) x 1D (TP4/EP4) c4096"
        )
        == "benchmark"
    )
    assert job_kind("agentic / p2 | x") == "benchmark"
    assert job_kind("eval / p1 | minimaxm3 fp4 b200 vllm TP4 c64 | eval-only") == "eval"
    assert job_kind("multi-node agentic eval / p1 | x") == "eval"
    for name in ("collect-evals", "setup", "canary / p1 | x", "check-changelog", "compare-results"):
        assert job_kind(name) is None


def test_tally_counts_success_separately() -> None:
    jobs = [
        JobInfo(job_id=1, name="single-node 8k1k / a", status="completed", conclusion="success"),
        JobInfo(job_id=2, name="single-node 8k1k / b", status="completed", conclusion="skipped"),
        JobInfo(job_id=3, name="eval / a", status="completed", conclusion="success"),
        JobInfo(job_id=4, name="collect-evals", status="completed", conclusion="success"),
    ]
    tally = tally_jobs(jobs)
    assert (tally.benchmark_success, tally.benchmark_other) == (1, 1)
    assert (tally.eval_success, tally.eval_other, tally.other_jobs) == (1, 0, 1)


def test_decisions() -> None:
    commits = frozenset({SWEPT_HEAD})
    green_jobs = tally_jobs(
        [JobInfo(job_id=1, name="single-node 8k1k / a", status="completed", conclusion="success")]
    )
    noop_jobs = tally_jobs(
        [
            JobInfo(
                job_id=1, name="single-node 8k1k / a", status="completed", conclusion="skipped"
            ),
            JobInfo(job_id=2, name="collect-results", status="completed", conclusion="success"),
        ]
    )
    assert (
        decide(run_info(1, SWEPT_HEAD, "success"), commits, green_jobs).verdict is RunVerdict.GREEN
    )
    assert (
        decide(run_info(1, "a" * 40, "success"), commits, green_jobs).verdict
        is RunVerdict.NOT_IN_PR
    )
    assert decide(run_info(1, SWEPT_HEAD, "skipped"), commits, None).verdict is RunVerdict.NOT_GREEN
    assert decide(run_info(1, SWEPT_HEAD, "failure"), commits, None).verdict is RunVerdict.NOT_GREEN
    assert (
        decide(run_info(1, SWEPT_HEAD, None, "in_progress"), commits, None).verdict
        is RunVerdict.NOT_COMPLETED
    )
    assert (
        decide(run_info(1, SWEPT_HEAD, "success"), commits, noop_jobs).verdict is RunVerdict.NO_OP
    )


# --- against the recorded API --------------------------------------------------------


def test_pr_2120_has_exactly_one_green_sweep(fake_github: FakeGitHub) -> None:
    serve_pr_2120(fake_github)
    found = collect_pr_sweeps(client_for(fake_github), PR_2120)
    verdicts = {(d.run_id, d.attempt): d.verdict for d in found.decisions}
    assert verdicts == {
        (29984401390, 1): RunVerdict.GREEN,
        (39900000001, 1): RunVerdict.NOT_GREEN,  # skipped is not green
        (39900000002, 1): RunVerdict.NOT_IN_PR,  # green, but on a commit not in the PR
        (39900000003, 1): RunVerdict.NO_OP,  # green, every benchmark job skipped
        (39900000004, 1): RunVerdict.NOT_GREEN,
        (39900000005, 1): RunVerdict.NOT_GREEN,
        (39900000006, 2): RunVerdict.NOT_GREEN,  # a failed re-run ...
        (39900000006, 1): RunVerdict.GREEN,  # ... of a green first attempt
    }
    green, rerun = found.green
    assert (green.run_id, green.attempt, green.head_sha) == (29984401390, 1, SWEPT_HEAD)
    assert green.conclusion == "success"
    assert green.jobs is not None
    assert (green.jobs.benchmark_success, green.jobs.eval_success) == (88, 12)
    assert rerun.jobs is not None
    assert (rerun.run_id, rerun.attempt, rerun.jobs.benchmark_success) == (39900000006, 1, 4)
    # jobs are only read for successful runs on PR commits
    job_paths = {r.path for r in fake_github.requests if r.path.endswith("/jobs")}
    assert job_paths == {
        "/repos/SemiAnalysisAI/InferenceX/actions/runs/29984401390/jobs",
        "/repos/SemiAnalysisAI/InferenceX/actions/runs/39900000003/jobs",
        "/repos/SemiAnalysisAI/InferenceX/actions/runs/39900000006/attempts/1/jobs",
    }


def test_ingest_records_the_green_run_once(fake_github: FakeGitHub, ledger_root: Path) -> None:
    serve_pr_2120(fake_github)
    report = ingest_sweeps(ledger_root, [PR_2120], client_for(fake_github), today=TODAY)
    assert [o.added for o in report.outcomes] == [((29984401390, 1), (39900000006, 1))]
    entry = Ledger(ledger_root).entry(PR_2120)
    assert entry is not None
    assert entry.sweeps == (
        SweepRun(
            run_id=29984401390,
            attempt=1,
            head_sha=SWEPT_HEAD,
            conclusion="success",
            url="https://github.com/SemiAnalysisAI/InferenceX/actions/runs/29984401390",
            source="github-api",
            recorded=TODAY,
            benchmark_jobs=88,
            eval_jobs=12,
        ),
        SweepRun(
            run_id=39900000006,
            attempt=1,
            head_sha="c3cc481261dd5cda8b96c0486eb662af47ec3cca",
            conclusion="success",
            url="https://github.com/SemiAnalysisAI/InferenceX/actions/runs/39900000006",
            source="github-api",
            recorded=TODAY,
            benchmark_jobs=4,
            eval_jobs=1,
        ),
    )
    assert entry.validated
    assert "github-api" in entry.sources
    assert entry.merge_commit == "7a428f813f26fb3db96c4746f8ab72bd6a7b3a16"  # kept
    before = snapshot(ledger_root)
    again = ingest_sweeps(
        ledger_root, [PR_2120], client_for(fake_github), today=TODAY + dt.timedelta(days=3)
    )
    assert [o.changed for o in again.outcomes] == [False]
    assert snapshot(ledger_root) == before
    text = render_text(report)
    assert "green   run 29984401390 attempt 1 head 0b896e92f" in text
    assert "ignored run 39900000002" in text and "not (or no longer) in the PR" in text
    assert "reuse no-op" in text
    for content in snapshot(ledger_root).values():
        assert_no_sentinel(content.decode())


def test_no_token_checks_nothing_and_writes_nothing(ledger_root: Path) -> None:
    before = snapshot(ledger_root)
    report = ingest_sweeps(ledger_root, [], GitHubUnavailable(reason="no GITHUB_TOKEN"))
    assert report.not_checked == "sweep runs: not checked (no GITHUB_TOKEN)"
    assert set(report.targets) == {PR_2120, PR_2310}
    assert "not checked" in render_text(report)
    assert snapshot(ledger_root) == before


def test_without_a_token_recorded_runs_are_still_scoped(ledger_root: Path) -> None:
    """The head SHA of a hand-recorded run is in the ledger: scoping needs no API."""
    ledger = Ledger(ledger_root)
    ran_id, other_id = "sha256:" + "a" * 64, "sha256:" + "b" * 64
    hand = SweepRun(
        run_id=29984401390,
        attempt=1,
        head_sha=SWEPT_HEAD,
        conclusion="success",
        source="review-thread",
        recorded=TODAY,
    )
    ledger.merge_entry(LedgerEntry(pr=PR_2120, records=(ran_id, other_id), sweeps=(hand,)))
    asked: list[str] = []

    ran = [ran_id]

    def scope(entry: LedgerEntry, run: SweepRun) -> SweepRun:
        asked.append(run.head_sha)
        return run.model_copy(update={"scoped": True, "ran": tuple(ran)})

    offline = GitHubUnavailable(reason="no GITHUB_TOKEN")
    report = ingest_sweeps(ledger_root, [], offline, scope=scope)
    assert asked == [SWEPT_HEAD]  # #2310 records no run
    entry = ledger.entry(PR_2120)
    assert entry is not None
    (run,) = entry.sweeps
    assert (run.scoped, run.ran, run.source) == (True, (ran_id,), "review-thread")
    assert entry.validates(ran_id) and not entry.validates(other_id)
    assert [o.changed for o in report.outcomes] == [True, False]
    assert "1 ledger entry updated" in render_text(report)
    before = snapshot(ledger_root)
    again = ingest_sweeps(ledger_root, [], offline, scope=scope)
    assert [o.changed for o in again.outcomes] == [False, False]
    assert snapshot(ledger_root) == before
    # scoping is derived from the checkout: a run scoped before is scoped again
    ran[:] = [ran_id, other_id]
    rescoped = ingest_sweeps(ledger_root, [], offline, scope=scope)
    assert [o.changed for o in rescoped.outcomes] == [True, False]
    entry = ledger.entry(PR_2120)
    assert entry is not None
    (run,) = entry.sweeps
    assert (run.ran, run.source, run.recorded) == ((ran_id, other_id), "review-thread", TODAY)


def test_a_failure_part_way_leaves_the_ledger_untouched(
    fake_github: FakeGitHub, ledger_root: Path
) -> None:
    serve_pr_2120(fake_github)  # #2120 answers; #2310 is rate limited
    fake_github.add(
        "GET",
        "/repos/SemiAnalysisAI/InferenceX/pulls/2310",
        Response(403, {"message": "API rate limit exceeded"}, {"X-RateLimit-Remaining": "0"}),
    )
    before = snapshot(ledger_root)
    with pytest.raises(NetworkError) as caught:
        ingest_sweeps(ledger_root, [PR_2120, PR_2310], client_for(fake_github), today=TODAY)
    assert "rate limit" in caught.value.message
    assert_no_sentinel(caught.value.diagnostic())
    assert snapshot(ledger_root) == before


def test_a_recorded_run_that_disagrees_is_kept_and_reported(
    fake_github: FakeGitHub, ledger_root: Path
) -> None:
    serve_pr_2120(fake_github)
    ledger = Ledger(ledger_root)
    hand = SweepRun(
        run_id=29984401390, attempt=1, head_sha="943965ec", conclusion="success", source="manual"
    )
    entry = ledger.entry(PR_2120)
    assert entry is not None
    ledger.write_entry(entry.model_copy(update={"sweeps": (hand,)}))
    report = ingest_sweeps(ledger_root, [PR_2120], client_for(fake_github), today=TODAY)
    (outcome,) = report.outcomes
    assert outcome.added == ((39900000006, 1),)  # the other green run is still added
    assert any("ledger says head_sha 943965ec" in c for c in outcome.conflicts)
    after = Ledger(ledger_root).entry(PR_2120)
    assert after is not None
    assert after.sweeps[0] == hand  # the recorded fact is not overwritten
    assert [(s.run_id, s.source) for s in after.sweeps] == [
        (29984401390, "manual"),
        (39900000006, "github-api"),
    ]
    assert "the ledger keeps its record" in render_text(report)


def test_a_pr_not_in_the_ledger_is_a_usage_error(ledger_root: Path) -> None:
    with pytest.raises(UsageError, match="not in the ledger"):
        ingest_sweeps(
            ledger_root,
            [PrRef(repo="SemiAnalysisAI/InferenceX", number=1)],
            GitHubUnavailable(reason="no GITHUB_TOKEN"),
        )


def test_pr_references_resolve_against_the_ledger() -> None:
    known = [PR_2120, PrRef(repo="someone/InferenceX", number=7), PrRef(repo="a/x", number=7)]
    assert resolve_pr("InferenceX#2120", known) == PR_2120
    assert resolve_pr("inferencex#2120", known) == PR_2120
    assert resolve_pr("#2120", known) == PR_2120
    assert resolve_pr("SemiAnalysisAI/InferenceX#2310", known) == PR_2310
    with pytest.raises(UsageError):
        resolve_pr("recipes#5", known)
    with pytest.raises(UsageError, match="not a PR reference"):
        resolve_pr("InferenceX", known)
