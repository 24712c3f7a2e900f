"""Write an InferenceX extraction into the evidence store and the ledger.

Crash-safe order under the ledger's writer lock: every evidence record first,
then the PR ledger entries that reference them. Entries are merged into what
the ledger already holds (hand-recorded sweeps and notes are kept), so a
second run over the same input writes nothing.
"""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Sequence
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from provenance import __version__
from provenance.errors import UsageError
from provenance.escaping import terminal
from provenance.evidence.inferencex.extractor import Progress
from provenance.evidence.inferencex.ingest import extract
from provenance.evidence.inferencex.plan import PlannedMerge, plan_vllm_merges
from provenance.evidence.inferencex.summary import IngestSummary
from provenance.model.ledger import LedgerManifest, SourceRevision
from provenance.sources.git import is_ancestor, open_repo, resolve_commit
from provenance.store.evidence import EvidenceStore
from provenance.store.extraction_cache import ExtractionCache
from provenance.store.ledger import Ledger
from provenance.store.lock import writer_lock
from provenance.store.record_index import update_index

#: Warnings listed in the text summary; JSON output has all of them.
MAX_WARNINGS_SHOWN = 20


class IngestOptions(BaseModel):
    """``provenance ingest inferencex`` options."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    repo: Path
    rev: str = "HEAD"
    model_prefix: str | None = None
    keys: str | None = None
    prs: tuple[int, ...] = ()
    ledger: Path
    evidence: Path
    lock_timeout: float = 10.0
    #: Extraction cache directory (``cache.py``); None: extract every commit again.
    cache_dir: Path | None = None
    #: every merge of REV's first-parent line that changed vLLM evidence (``plan.py``)
    vllm_history: bool = False
    #: only the planned merges newer than the ledger manifest's InferenceX revision
    since_ledger: bool = False
    #: extraction processes (None: one per core)
    jobs: int | None = None


class IngestReport(BaseModel):
    """What an ingest found and what it changed on disk."""

    model_config = ConfigDict(extra="forbid")

    summary: IngestSummary
    records_written: int = 0
    records_unchanged: int = 0
    entries_written: list[int] = Field(default_factory=list)
    entries_unchanged: list[int] = Field(default_factory=list)
    #: Commits whose extraction came from the extraction cache / was run (None: no cache).
    extractions_cached: int | None = None
    extractions_run: int | None = None
    #: planned merges (``--vllm-history`` / ``--since-ledger``; None: no plan)
    planned: int | None = None
    #: planned merges skipped because their subject names no PR (``(#N)``)
    planned_without_pr: list[str] = Field(default_factory=list)
    #: the ledger manifest's InferenceX revision before / after (plan modes)
    since_revision: str | None = None
    manifest_written: bool = False
    #: whether the evidence store's checkpoint index (``index.json``) was rewritten
    index_written: bool = False
    #: entries whose revert fields were set (``provenance.ingest.reverts``)
    reverts_written: list[int] = Field(default_factory=list)


def _plan(options: IngestOptions, report: IngestReport) -> tuple[list[int], SourceRevision]:
    """The PRs to ingest (oldest first) and the revision the ledger will then be at."""
    repo = open_repo(options.repo)
    tip = resolve_commit(repo, options.rev)
    since = None
    if options.since_ledger:
        manifest = Ledger(options.ledger).manifest()
        if manifest is None:
            raise UsageError(
                f"{options.ledger}: no manifest.yaml, so no InferenceX revision to start from; "
                "ingest with --vllm-history first"
            )
        since = manifest.inferencex.revision
        if not is_ancestor(repo, since, tip.hexsha):
            raise UsageError(
                f"the ledger's InferenceX revision {since[:12]} is not an ancestor of "
                f"{options.rev} in {options.repo}"
            )
        report.since_revision = since
    merges: list[PlannedMerge] = plan_vllm_merges(repo, tip.hexsha, since)
    report.planned = len(merges)
    report.planned_without_pr = [m.sha for m in merges if m.pr is None]
    prs = list(dict.fromkeys(m.pr for m in merges if m.pr is not None))
    date = dt.datetime.fromtimestamp(tip.committed_date, tz=dt.UTC).date()
    return prs, SourceRevision(revision=tip.hexsha, date=date)


def _manifest(ledger: Ledger, revision: SourceRevision, prefix: str | None) -> LedgerManifest:
    old = ledger.manifest()
    prefixes: tuple[str, ...] = ()
    if prefix is not None:  # no prefix: every model (an empty list)
        prefixes = tuple(sorted({*(old.model_prefixes if old else ()), prefix}))
    return LedgerManifest(
        inferencex=revision, model_prefixes=prefixes, generated_by=f"provenance {__version__}"
    )


def ingest_inferencex(options: IngestOptions, progress: Progress | None = None) -> IngestReport:
    """Extract, then store records and merge PR entries (records first, under the lock)."""
    planning = options.vllm_history or options.since_ledger
    if planning and options.prs:
        raise UsageError("--pr cannot be combined with --vllm-history or --since-ledger")
    report = IngestReport(summary=IngestSummary())
    prs, revision = _plan(options, report) if planning else (list(options.prs), None)
    cache = ExtractionCache(options.cache_dir) if options.cache_dir is not None else None
    if planning and not prs:
        result = None  # nothing new: only the manifest may change
    else:
        result = extract(
            options.repo,
            options.rev,
            options.model_prefix,
            options.keys,
            prs,
            progress=progress,
            cache=cache,
            jobs=options.jobs or os.cpu_count() or 1,
        )
        report.summary = result.summary
    if cache is not None:
        report.extractions_cached = cache.hits
        report.extractions_run = cache.misses
    store = EvidenceStore(options.evidence)
    ledger = Ledger(options.ledger)
    with writer_lock(options.ledger, timeout=options.lock_timeout):
        stored = []
        for record in result.records if result else ():
            record_id, written = store.put(record)
            stored.append(record.with_id() if record.id != record_id else record)
            if written:
                report.records_written += 1
            else:
                report.records_unchanged += 1
        # after the records it lists, before the entries citing them
        report.index_written = update_index(store, stored)
        for entry in result.entries if result else ():
            if ledger.merge_entry(entry):
                report.entries_written.append(entry.pr.number)
            else:
                report.entries_unchanged.append(entry.pr.number)
        if result is not None:  # a revert merged since any entry was written reaches it
            from provenance.ingest.reverts import mark_ledger

            repo = open_repo(options.repo)
            tip = str(resolve_commit(repo, options.rev).hexsha)
            reverts = mark_ledger(repo, tip, ledger)
            report.reverts_written = list(reverts.written)
        if revision is not None:  # last: the ledger is at ``revision`` once all is written
            report.manifest_written = ledger.write_manifest(
                _manifest(ledger, revision, options.model_prefix)
            )
    return report


#: More commits than this are shown as a count with the first and the last.
MAX_COMMITS_SHOWN = 3


def _commits_line(commits: Sequence[str]) -> str:
    """The commits read, short: all of a few; a count, the first and the last of a history."""
    if len(commits) <= MAX_COMMITS_SHOWN:
        return ", ".join(c[:12] for c in commits) or "-"
    return f"{len(commits)} ({commits[0][:12]} … {commits[-1][:12]})"


def render_report(report: IngestReport) -> str:
    """Human summary of an ingest: what was read, written, partial and why."""
    s = report.summary
    lines = []
    if report.planned is not None:
        since = f" after {report.since_revision[:12]}" if report.since_revision else ""
        lines.append(
            f"planned: {report.planned} merge(s){since} changed vLLM evidence"
            + (
                f" ({len(report.planned_without_pr)} without (#N), skipped)"
                if report.planned_without_pr
                else ""
            )
        )
    lines += [
        f"commits: {_commits_line(s.commits)}",
        f"files read: {s.files_read}; config keys: {s.config_keys}; points: {s.points}",
        f"records: {s.records} ({report.records_written} new, {report.records_unchanged} "
        f"already stored); partial: {s.partial_records}",
    ]
    for construct, count in s.partial_by_construct.items():
        lines.append(f"  partial by {construct}: {count}")
    if report.extractions_cached is not None:
        lines.append(
            f"extractions: {report.extractions_cached} from the cache, {report.extractions_run} run"
        )
    lines.append(
        f"ledger entries: {len(report.entries_written)} written"
        + (f" (#{', #'.join(map(str, report.entries_written))})" if report.entries_written else "")
        + f", {len(report.entries_unchanged)} unchanged"
    )
    if s.unlinked_records:
        lines.append(
            f"records without a PR (last changed by a commit without (#N)): {s.unlinked_records}"
        )
    if report.planned is not None:
        lines.append(f"manifest: {'written' if report.manifest_written else 'unchanged'}")
    lines.append(f"evidence index: {'written' if report.index_written else 'unchanged'}")
    for item in s.skipped:
        lines.append(
            f"skipped {item.count} point(s) [{item.code}]: {terminal(item.message)}"
            f" ({len(item.keys)} key(s))"
        )
    if s.unresolved_scripts:
        lines.append(f"unresolved launchers ({len(s.unresolved_scripts)}):")
        lines.extend(f"  {terminal(item)}" for item in s.unresolved_scripts)
    if s.warnings:
        lines.append(f"warnings ({len(s.warnings)}):")
        lines.extend(f"  {terminal(item)}" for item in s.warnings[:MAX_WARNINGS_SHOWN])
        if len(s.warnings) > MAX_WARNINGS_SHOWN:
            hidden = len(s.warnings) - MAX_WARNINGS_SHOWN
            lines.append(f"  … {hidden} more (--format json lists them all)")
    return "\n".join(lines) + "\n"
