"""Find the green "Run Sweep" runs of ledger PRs through the GitHub API and record them.

What counts as a green sweep of a PR (spec §6):

* a run of ``.github/workflows/run-sweep.yml`` triggered by ``pull_request`` on the
  PR's head branch,
* whose head SHA is one of the PR's commits *now* (a run on a commit that was
  force-pushed away, or on main, does not count),
* that completed with conclusion ``success`` (``skipped``, ``cancelled``, ``failure``…
  are not green; when the latest attempt of a re-run is not green, earlier attempts are
  read, and a green one counts as ``(run id, attempt)``),
* and in which at least one benchmark or eval job succeeded: a reuse no-op run, where
  every benchmark job was skipped, is green on the surface but benchmarked nothing.

All API reads happen before the ledger is touched; a network failure part-way leaves
the ledger exactly as it was. Writes go through ``Ledger.merge_entry`` under
``writer_lock``; a run already in the ledger (by hand or by an earlier ingest) is kept
as it is, and a disagreement with the API is reported, never silently overwritten.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterable, Sequence
from enum import StrEnum
from pathlib import Path
from typing import Literal, get_args

from pydantic import BaseModel, ConfigDict

from provenance.errors import UsageError
from provenance.escaping import terminal
from provenance.model.ledger import Conclusion, LedgerEntry, PrRef, SweepRun
from provenance.sources.github import GitHubClient, GitHubUnavailable, JobInfo, WorkflowRunInfo
from provenance.store.ledger import Ledger
from provenance.store.lock import writer_lock

RUN_SWEEP_WORKFLOW_FILE = "run-sweep.yml"
RUN_SWEEP_EVENT = "pull_request"
API_SOURCE = "github-api"
#: The pull-request commits endpoint lists at most this many commits.
PR_COMMITS_LIMIT = 250

#: Caller-job prefixes of run-sweep.yml (spec §6.2); eval prefixes are checked first.
EVAL_JOB_PREFIXES = (
    "multi-node agentic eval /",
    "multi-node eval /",
    "agentic eval /",
    "eval /",
)
BENCHMARK_JOB_PREFIXES = (
    "multi-node agentic /",
    "multi-node 1k1k /",
    "multi-node 8k1k /",
    "single-node 1k1k /",
    "single-node 8k1k /",
    "agentic /",
)

_CONCLUSIONS: frozenset[str] = frozenset(get_args(Conclusion))


class JobTally(BaseModel):
    """Benchmark and eval jobs of one run, by outcome."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    benchmark_success: int = 0
    benchmark_other: int = 0
    eval_success: int = 0
    eval_other: int = 0
    other_jobs: int = 0


def job_kind(name: str) -> Literal["benchmark", "eval"] | None:
    """``eval``/``benchmark`` for a sweep job name, by its caller-job prefix; else None."""
    stripped = name.strip()
    if stripped.startswith(EVAL_JOB_PREFIXES):
        return "eval"
    if stripped.startswith(BENCHMARK_JOB_PREFIXES):
        return "benchmark"
    return None


def tally_jobs(jobs: Iterable[JobInfo]) -> JobTally:
    counts = {"benchmark_success": 0, "benchmark_other": 0, "eval_success": 0, "eval_other": 0}
    other = 0
    for job in jobs:
        kind = job_kind(job.name)
        if kind is None:
            other += 1
            continue
        outcome = "success" if job.conclusion == "success" else "other"
        counts[f"{kind}_{outcome}"] += 1
    return JobTally(**counts, other_jobs=other)


class RunVerdict(StrEnum):
    GREEN = "green"
    NOT_IN_PR = "not-in-pr"
    NOT_COMPLETED = "not-completed"
    NOT_GREEN = "not-green"
    NO_OP = "reuse-no-op"


class RunDecision(BaseModel):
    """What one workflow run means for the PR, and why."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    run_id: int
    attempt: int
    head_sha: str
    status: str
    conclusion: str | None
    url: str
    verdict: RunVerdict
    detail: str
    jobs: JobTally | None = None


def needs_jobs(run: WorkflowRunInfo, pr_commits: frozenset[str]) -> bool:
    """Only a completed, successful run on a PR commit needs its jobs counted."""
    return run.head_sha in pr_commits and run.status == "completed" and run.conclusion == "success"


def decide(run: WorkflowRunInfo, pr_commits: frozenset[str], jobs: JobTally | None) -> RunDecision:
    """Classify ``run`` for a PR whose commits are ``pr_commits`` (pure)."""

    def verdict(kind: RunVerdict, detail: str) -> RunDecision:
        return RunDecision(
            run_id=run.run_id,
            attempt=run.attempt,
            head_sha=run.head_sha,
            status=run.status,
            conclusion=run.conclusion,
            url=run.html_url,
            verdict=kind,
            detail=detail,
            jobs=jobs,
        )

    if run.head_sha not in pr_commits:
        return verdict(RunVerdict.NOT_IN_PR, "its head commit is not (or no longer) in the PR")
    if run.status != "completed":
        return verdict(RunVerdict.NOT_COMPLETED, f"status {run.status or 'unknown'}")
    if run.conclusion != "success":
        return verdict(RunVerdict.NOT_GREEN, f"conclusion {run.conclusion or 'none'} is not green")
    if jobs is None:
        raise ValueError(f"run {run.run_id}: jobs must be counted for a successful run")
    if jobs.benchmark_success + jobs.eval_success == 0:
        return verdict(
            RunVerdict.NO_OP,
            "reuse no-op: no benchmark or eval job succeeded "
            f"({jobs.benchmark_other + jobs.eval_other} skipped or failed)",
        )
    return verdict(
        RunVerdict.GREEN,
        f"{jobs.benchmark_success} benchmark and {jobs.eval_success} eval jobs succeeded",
    )


class PrSweeps(BaseModel):
    """Every Run Sweep run of one PR's branch, each with its verdict."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    pr: PrRef
    title: str
    head_sha: str
    branch: str
    commits: int
    decisions: tuple[RunDecision, ...]

    @property
    def green(self) -> tuple[RunDecision, ...]:
        return tuple(d for d in self.decisions if d.verdict is RunVerdict.GREEN)

    def sweep_runs(self, recorded: dt.date) -> tuple[SweepRun, ...]:
        """The green runs as ledger facts (``source="github-api"``)."""
        return tuple(_sweep_run(d, recorded) for d in self.green)


def _sweep_run(decision: RunDecision, recorded: dt.date) -> SweepRun:
    conclusion = decision.conclusion or ""
    if conclusion not in _CONCLUSIONS:
        raise ValueError(f"run {decision.run_id}: unknown conclusion {conclusion!r}")
    jobs = decision.jobs
    return SweepRun.model_validate(
        {
            "run_id": decision.run_id,
            "attempt": decision.attempt,
            "head_sha": decision.head_sha,
            "conclusion": conclusion,
            "url": decision.url,
            "source": API_SOURCE,
            "recorded": recorded,
            "benchmark_jobs": jobs.benchmark_success if jobs else None,
            "eval_jobs": jobs.eval_success if jobs else None,
        }
    )


def collect_pr_sweeps(client: GitHubClient, pr: PrRef) -> PrSweeps:
    """Read (only read) the PR, its commits, its branch's Run Sweep runs and their jobs."""
    pull = client.pull(pr)
    commits = frozenset(client.pull_commits(pr)) | {pull.head_sha}
    runs = client.workflow_runs(
        pr.repo, RUN_SWEEP_WORKFLOW_FILE, branch=pull.head_ref, event=RUN_SWEEP_EVENT
    )
    decisions = []
    for run in runs:
        jobs = None
        if needs_jobs(run, commits):
            jobs = tally_jobs(client.run_jobs(pr.repo, run.run_id))
        latest = decide(run, commits, jobs)
        decisions.append(latest)
        if latest.verdict is not RunVerdict.NOT_IN_PR and latest.verdict is not RunVerdict.GREEN:
            decisions.extend(_earlier_attempts(client, pr, run, commits))
    decisions.sort(key=lambda d: (d.verdict is not RunVerdict.GREEN, d.run_id, d.attempt))
    return PrSweeps(
        pr=pr,
        title=pull.title,
        head_sha=pull.head_sha,
        branch=pull.head_ref,
        commits=len(commits),
        decisions=tuple(decisions),
    )


def _earlier_attempts(
    client: GitHubClient, pr: PrRef, run: WorkflowRunInfo, commits: frozenset[str]
) -> list[RunDecision]:
    """A re-run that is not green may hide a green earlier attempt: walk back to it."""
    decisions = []
    for number in range(run.attempt - 1, 0, -1):
        earlier = client.run_attempt(pr.repo, run.run_id, number)
        jobs = None
        if needs_jobs(earlier, commits):
            jobs = tally_jobs(client.run_jobs(pr.repo, run.run_id, attempt=number))
        decision = decide(earlier, commits, jobs)
        decisions.append(decision)
        if decision.verdict is RunVerdict.GREEN:
            break
    return decisions


class EntryOutcome(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    pr: PrRef
    #: (run id, attempt) of each sweep newly recorded.
    added: tuple[tuple[int, int], ...] = ()
    changed: bool = False
    conflicts: tuple[str, ...] = ()


class SweepIngestReport(BaseModel):
    """The result of ``provenance ingest sweeps``."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    targets: tuple[PrRef, ...]
    not_checked: str | None = None
    found: tuple[PrSweeps, ...] = ()
    outcomes: tuple[EntryOutcome, ...] = ()


def _conflicts(entry: LedgerEntry, fresh: Sequence[SweepRun]) -> tuple[str, ...]:
    """Runs the ledger already records with facts that disagree with the API."""
    known = {(s.run_id, s.attempt): s for s in entry.sweeps}
    notes = []
    for run in fresh:
        old = known.get((run.run_id, run.attempt))
        if old is None:
            continue
        for field in ("head_sha", "conclusion"):
            recorded, api = getattr(old, field), getattr(run, field)
            if field == "head_sha" and api.startswith(recorded):
                continue
            if recorded != api:
                notes.append(
                    f"run {run.run_id} attempt {run.attempt}: ledger says {field} {recorded} "
                    f"(source {old.source}), the API says {api}; the ledger keeps its record"
                )
    return tuple(notes)


def resolve_pr(text: str, known: Iterable[PrRef]) -> PrRef:
    """``OWNER/REPO#N``, ``#N`` (InferenceX) or ``REPO#N`` matched against ledger PRs."""
    head, sep, number = text.strip().rpartition("#")
    if sep and head and "/" not in head and number.isdigit():
        matches = {
            ref
            for ref in known
            if ref.number == int(number) and ref.repo.rpartition("/")[2].lower() == head.lower()
        }
        if len(matches) == 1:
            return matches.pop()
        if len(matches) > 1:
            names = ", ".join(sorted(str(m) for m in matches))
            raise UsageError(f"{text!r} is ambiguous ({names}); write OWNER/REPO#N")
    return PrRef.parse(text)


def ingest_sweeps(
    ledger_root: Path,
    prs: Sequence[PrRef | str],
    github: GitHubClient | GitHubUnavailable,
    *,
    today: dt.date | None = None,
    lock_timeout: float = 10.0,
    scope: Callable[[LedgerEntry, SweepRun], SweepRun] | None = None,
) -> SweepIngestReport:
    """Record the green sweep runs of ``prs`` (default: every ledger PR) in the ledger.

    Everything is read from the API first; the ledger is written only once every read
    has succeeded (under the writer lock, through ``Ledger.merge_entry``). With
    ``scope`` (a run scoped to the records of an entry its head ran, from an
    InferenceX checkout), each run records them (``SweepRun.ran``) and validates
    only those; a run already recorded gets them, checked again.
    """
    ledger = Ledger(ledger_root)
    entries = {entry.pr: entry for entry in ledger.entries()}
    requested = [pr if isinstance(pr, PrRef) else resolve_pr(pr, entries) for pr in prs]
    targets = tuple(dict.fromkeys(requested)) if requested else tuple(entries)
    unknown = [str(pr) for pr in targets if pr not in entries]
    if unknown:
        raise UsageError(
            f"not in the ledger {ledger_root}: {', '.join(unknown)}",
            hint="run `provenance ingest inferencex` for these PRs first",
        )
    if isinstance(github, GitHubUnavailable):
        scoped = () if scope is None else _scope_recorded(ledger, targets, scope, lock_timeout)
        return SweepIngestReport(
            targets=targets, not_checked=github.describe("sweep runs"), outcomes=scoped
        )

    # Every read first: a failure here raises before anything is written.
    found = tuple(collect_pr_sweeps(github, pr) for pr in targets)

    recorded = today or dt.datetime.now(dt.UTC).date()
    outcomes = []
    with writer_lock(ledger_root, timeout=lock_timeout):
        for sweeps in found:
            fresh = sweeps.sweep_runs(recorded)
            current = ledger.entry(sweeps.pr) or entries[sweeps.pr]
            if scope is not None:
                fresh = tuple(scope(current, s) for s in fresh)
            known = {(s.run_id, s.attempt): s for s in current.sweeps}
            added = tuple(
                (s.run_id, s.attempt) for s in fresh if (s.run_id, s.attempt) not in known
            )
            scoped_now = any(
                s.scoped
                and (old := known.get((s.run_id, s.attempt))) is not None
                and old.scope() != s.scope()
                for s in fresh
            )
            changed = False
            if added or scoped_now:
                changed = ledger.merge_entry(
                    LedgerEntry(pr=sweeps.pr, sweeps=fresh, sources=(API_SOURCE,))
                )
            outcomes.append(
                EntryOutcome(
                    pr=sweeps.pr,
                    added=added,
                    changed=changed,
                    conflicts=_conflicts(current, fresh),
                )
            )
    return SweepIngestReport(targets=targets, found=found, outcomes=tuple(outcomes))


def _scope_recorded(
    ledger: Ledger,
    targets: Sequence[PrRef],
    scope: Callable[[LedgerEntry, SweepRun], SweepRun],
    lock_timeout: float,
) -> tuple[EntryOutcome, ...]:
    """Scope the runs the ledger already records (by hand or before) without the API.

    A run's facts (head SHA) are in the ledger, so which records its head ran needs only
    the InferenceX checkout; every run is scoped again (``scoped``, ``ran``, ``equivalent``,
    ``not_ran``), and an entry is written only when that changes.
    """
    outcomes = []
    with writer_lock(ledger.root, timeout=lock_timeout):
        for pr in targets:
            current = ledger.entry(pr)
            if current is None:
                continue
            rescoped = ((scope(current, s), s) for s in current.sweeps)
            fresh = tuple(new for new, old in rescoped if new.scope() != old.scope())
            changed = bool(fresh) and ledger.merge_entry(
                LedgerEntry(pr=pr, sweeps=fresh, sources=current.sources)
            )
            outcomes.append(EntryOutcome(pr=pr, changed=changed))
    return tuple(outcomes)


def render_text(report: SweepIngestReport) -> str:
    """The terminal report (every value from the API is made inert)."""
    if report.not_checked is not None:
        scoped = sum(1 for o in report.outcomes if o.changed)
        done = (
            f"  recorded runs scoped against the InferenceX checkout: {scoped} ledger "
            f"entr{'y' if scoped == 1 else 'ies'} updated\n"
            if report.outcomes
            else ""
        )
        return (
            f"{report.not_checked}; no new runs recorded for {len(report.targets)} ledger PR(s)\n"
            + done
            + "  set GITHUB_TOKEN (or pass --token-env NAME) to record sweep runs from the API\n"
        )
    lines: list[str] = []
    outcomes = {o.pr: o for o in report.outcomes}
    for sweeps in report.found:
        lines.append(
            f"{sweeps.pr}: {terminal(sweeps.title)} ({sweeps.commits} commits, "
            f"head {sweeps.head_sha[:9]}, branch {terminal(sweeps.branch)})"
        )
        if not sweeps.decisions:
            lines.append("  no Run Sweep runs on this PR's branch")
        for d in sweeps.decisions:
            label = "green  " if d.verdict is RunVerdict.GREEN else "ignored"
            lines.append(
                f"  {label} run {d.run_id} attempt {d.attempt} head {d.head_sha[:9]}: "
                f"{terminal(d.detail)}"
            )
        outcome = outcomes.get(sweeps.pr)
        if outcome is not None:
            if outcome.added:
                runs = ", ".join(f"run {r} attempt {a}" for r, a in outcome.added)
                lines.append(f"  recorded in the ledger: {runs}")
            elif sweeps.green:
                lines.append("  ledger already records these runs")
            else:
                lines.append("  no green sweep run found; ledger entry left as it is")
            lines.extend(f"  warning: {terminal(c)}" for c in outcome.conflicts)
    written = sum(1 for o in report.outcomes if o.changed)
    lines.append(
        f"{len(report.found)} PR(s) checked, {sum(len(s.green) for s in report.found)} green "
        f"run(s), {written} ledger entr{'y' if written == 1 else 'ies'} updated"
    )
    return "\n".join(lines) + "\n"
