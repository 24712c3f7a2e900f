"""Write an InferenceX extraction into the evidence store and the ledger.

Crash-safe order under the ledger's writer lock: every evidence record first,
then the PR ledger entries that reference them. Entries are merged into what
the ledger already holds (hand-recorded sweeps and notes are kept), so a
second run over the same input writes nothing.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from provenance.escaping import terminal
from provenance.evidence.inferencex.ingest import IngestSummary, Progress, extract
from provenance.store.evidence import EvidenceStore
from provenance.store.extraction_cache import ExtractionCache
from provenance.store.ledger import Ledger
from provenance.store.lock import writer_lock

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


def ingest_inferencex(options: IngestOptions, progress: Progress | None = None) -> IngestReport:
    """Extract, then store records and merge PR entries (records first, under the lock)."""
    cache = ExtractionCache(options.cache_dir) if options.cache_dir is not None else None
    result = extract(
        options.repo,
        options.rev,
        options.model_prefix,
        options.keys,
        list(options.prs),
        progress=progress,
        cache=cache,
    )
    report = IngestReport(summary=result.summary)
    if cache is not None:
        report.extractions_cached = cache.hits
        report.extractions_run = cache.misses
    store = EvidenceStore(options.evidence)
    ledger = Ledger(options.ledger)
    with writer_lock(options.ledger, timeout=options.lock_timeout):
        for record in result.records:
            _, written = store.put(record)
            if written:
                report.records_written += 1
            else:
                report.records_unchanged += 1
        for entry in result.entries:
            if ledger.merge_entry(entry):
                report.entries_written.append(entry.pr.number)
            else:
                report.entries_unchanged.append(entry.pr.number)
    return report


def render_report(report: IngestReport) -> str:
    """Human summary of an ingest: what was read, written, partial and why."""
    s = report.summary
    lines = [
        f"commits: {', '.join(c[:12] for c in s.commits) or '-'}",
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
