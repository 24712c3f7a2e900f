"""Extract evidence records and PR ledger entries from an InferenceX repository.

:func:`extract` reads one revision (or, with ``prs``, each listed PR at its
merge commit), builds one :class:`EvidenceRecord` per evidence point — config
key × search-space point, every role of the deployment in one record — and one
:class:`LedgerEntry` per PR that backs a record. Points that produce an
identical record (same flags, topology, sources …) collapse into one record
listing every workload point it covers.

Attribution, by content (:mod:`~provenance.evidence.inferencex.content_trace`).
A record at revision ``rev`` is backed by the PR whose squash commit introduced
the newest of its contents: its master-config points (image, model, runner,
precision, framework, shape and the search-space point) and its launcher text or
srt-slurm recipe. Commits that only moved, renamed or deprecated those contents
back nothing; they are the record's ``history``. Nor does a commit that changed
the launcher or recipe text without changing what the record runs: when the
newest origin is such a file origin (newer than every point origin), the config
key is extracted at its first parent, and equal determining content over every
workload makes it an ``unchanged-served`` move, the origin then sought from the
parent's files; the commit keeps the credit when the parent cannot show that
(key absent or skipped there, a partial record, missing objects). PRs whose ``perf-changelog.yaml``
entry names the key and that merged at or after that origin re-swept the same
content and back the record too. An archived entry evaluated with a launcher
changed after its archiving was never swept that way and yields no record. With
``prs``, each PR N is ingested at its merge commit and only the records N backs
there are kept (records whose content N introduced — not those whose launcher
text N edited without changing what they run — or whose key N's changelog entry
names). See ``docs/evidence.md``.
"""

from __future__ import annotations

import fnmatch
import multiprocessing
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from provenance.evidence.inferencex.attribution import (
    HISTORY_ROOTS,
    ServedChecks,
    attribute,
    ledger_entries,
    with_head,
)
from provenance.evidence.inferencex.blocks import changed_by
from provenance.evidence.inferencex.changelog import changelog_links
from provenance.evidence.inferencex.extractor import (
    PointExtractor,
    Progress,
    PrScope,
    collapse,
)
from provenance.evidence.inferencex.history import (
    HistoryCommit,
    pr_head,
    require_pr_commit,
)
from provenance.evidence.inferencex.lineage import Lineage
from provenance.evidence.inferencex.master import (
    FileResults,
    RecentFiles,
    load_master_configs,
)
from provenance.evidence.inferencex.snapshot import Snapshot
from provenance.evidence.inferencex.summary import IngestSummary, finish_summary
from provenance.model.ledger import LedgerEntry
from provenance.model.record import (
    EvidenceRecord,
)
from provenance.sources.git import Commit, Repo, open_repo, resolve_commit
from provenance.store.extraction_cache import CACHE_FORMAT, ExtractionCache, cache_key


class CachedExtraction(BaseModel):
    """One commit's extraction as the extraction cache keeps it (see ``cache.py``)."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    format: str
    key: str
    records: list[EvidenceRecord]
    entries: list[LedgerEntry]
    summary: IngestSummary

    def problem(self, commit: str, only_pr: int | None) -> str | None:
        """Why this entry cannot be the extraction at ``commit`` (None when it can)."""
        if self.format != CACHE_FORMAT:
            return f"format {self.format!r} is not {CACHE_FORMAT!r}"
        if self.summary.commits != [commit]:
            return "it is the extraction of another commit"
        ids = set()
        for record in self.records:
            if record.compute_id() != record.id:
                return f"record {record.id} does not match its content"
            ids.add(record.id)
        for entry in self.entries:
            if only_pr is not None and entry.pr.number != only_pr:
                return f"it has a ledger entry for #{entry.pr.number}, not #{only_pr}"
            if not set(entry.records) <= ids:
                return f"the entry of #{entry.pr.number} names records it does not hold"
        return None


class IngestResult(BaseModel):
    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)

    records: list[EvidenceRecord]
    entries: list[LedgerEntry]
    summary: IngestSummary


def glob_filter(pattern: str | None) -> Callable[[str], bool]:
    """``--keys``: a shell-style glob over config keys (everything without one)."""
    if pattern is None:
        return lambda _key: True
    return lambda key: fnmatch.fnmatchcase(key, pattern)


def _select(model_prefix: str | None, keys: str | None) -> Callable[[str, Any], bool]:
    key_ok = glob_filter(keys)

    def wanted(key: str, raw: Any) -> bool:
        if model_prefix is not None and str(raw.get("model-prefix")) != model_prefix:
            return False
        return key_ok(key)

    return wanted


@dataclass
class _Shared:
    """What every commit of one ingest reads alike: the tip's first-parent line and the
    master-config files (by path and blob; the model-prefix and key filters are fixed),
    and the config keys attribution re-extracted at first parents."""

    lineage: Lineage
    masters: FileResults = field(default_factory=RecentFiles)
    checks: ServedChecks | None = None


def _ingest_commit(
    repo: Repo,
    commit: Commit,
    model_prefix: str | None,
    keys: str | None,
    only_pr: int | None,
    summary: IngestSummary,
    progress: Progress | None,
    shared: _Shared,
) -> tuple[list[EvidenceRecord], list[LedgerEntry]]:
    """One commit's records and entries (``shared.lineage``: a first-parent line holding it)."""
    snapshot = Snapshot(repo, commit)
    lineage = shared.lineage
    key_ok = glob_filter(keys)

    def prefilter(key: str, prefix: str | None) -> bool:
        # keep entries whose prefix is not written plainly: ``wanted`` decides those
        return key_ok(key) and (model_prefix is None or prefix in (None, model_prefix))

    masters = load_master_configs(
        snapshot, wanted=_select(model_prefix, keys), prefilter=prefilter, reuse=shared.masters
    )
    summary.warnings.extend(masters.warnings)
    summary.commits.append(snapshot.sha)
    entries = list(masters.entries)
    summary.config_keys += len({e.key for e in entries})
    relevant = None
    if only_pr is not None:
        # At PR N's merge commit only what N changed (or its changelog names) can be N's.
        paths, changed_keys = changed_by(repo, snapshot.sha)
        named, _ = changelog_links(snapshot, {e.key for e in entries})
        relevant = PrScope(frozenset(changed_keys | named.get(only_pr, set())), frozenset(paths))

    history = lineage.history_of(snapshot.sha)

    def removed_by(path: str) -> HistoryCommit | None:
        return lineage.file_log(HISTORY_ROOTS).removing_commit(history, path)

    extraction = PointExtractor(snapshot, summary, progress, relevant, removed_by).run(entries)
    drafts = collapse(extraction.drafts)
    if shared.checks is None:
        shared.checks = ServedChecks(repo)
    attribution, drafts = attribute(repo, snapshot, lineage, drafts, summary, shared.checks)
    changelog_keys: dict[int, set[str]] = {}
    if only_pr is not None:
        links, _ = changelog_links(snapshot, extraction.keys)
        changelog_keys = {only_pr: links.get(only_pr, set())}
        merge = lineage.history.by_sha[snapshot.sha]
        kept = []
        for draft in drafts:
            backed = only_pr in attribution.links.get(draft.record.id, set())
            swept = draft.record.config_key in changelog_keys[only_pr]
            if backed or swept:
                attribution.links[draft.record.id] = {only_pr}
                kept.append(draft)
        attribution.commits[only_pr] = merge
        if changelog_keys[only_pr]:
            attribution.changelog_prs.add(only_pr)
        drafts = kept
    records = [d.record for d in drafts]
    summary.files_read += len(snapshot.read_blobs)
    for record in records:
        if not attribution.links.get(record.id):
            summary.unlinked_records += 1
    entries_out = ledger_entries(repo, drafts, attribution, only_pr, changelog_keys)
    return records, entries_out


def _cached_or_extract(
    repo: Repo,
    commit: Commit,
    model_prefix: str | None,
    keys: str | None,
    only_pr: int | None,
    progress: Progress | None,
    cache: ExtractionCache | None,
    shared: _Shared,
) -> tuple[list[EvidenceRecord], list[LedgerEntry], IngestSummary]:
    """:func:`_ingest_commit`'s result, from ``cache`` when it holds it (then stored there)."""
    sha = str(commit.hexsha)
    key = None
    if cache is not None:
        key = cache_key(commit=sha, model_prefix=model_prefix, keys=keys, pr=only_pr)
        cached = cache.load(key, CachedExtraction)
        if cached is not None:
            problem = cached.problem(sha, only_pr)
            if problem is None:
                entries = [with_head(e, pr_head(repo, e.pr.number)) for e in cached.entries]
                return cached.records, entries, cached.summary
            cache.reject(key, problem)
    summary = IngestSummary()
    records, entries = _ingest_commit(
        repo, commit, model_prefix, keys, only_pr, summary, progress, shared
    )
    if cache is not None and key is not None:
        cache.store(
            key,
            CachedExtraction(
                format=CACHE_FORMAT, key=key, records=records, entries=entries, summary=summary
            ),
        )
    return records, entries, summary


@dataclass
class _Worker:
    """One process's repository, first-parent line and extraction cache."""

    repo_path: Path
    repo: Repo
    shared: _Shared
    cache_root: Path | None


_WORKER: list[_Worker] = []  # the pool worker's state (set by :func:`_start_worker`)


def _open_worker(repo_path: Path, rev: str, cache_root: Path | None) -> _Worker:
    repo = open_repo(repo_path)
    tip = resolve_commit(repo, rev)
    # one history walk for every commit this process extracts
    return _Worker(repo_path, repo, _Shared(Lineage.of(repo, tip.hexsha)), cache_root)


def _start_worker(repo_path: Path, rev: str, cache_root: Path | None) -> None:
    _WORKER[:] = [_open_worker(repo_path, rev, cache_root)]


@dataclass
class _CommitResult:
    records: list[EvidenceRecord]
    entries: list[LedgerEntry]
    summary: IngestSummary
    cache_hits: int = 0
    cache_misses: int = 0
    cache_warnings: list[str] = field(default_factory=list)


def _extract_target(
    worker: _Worker,
    sha: str,
    number: int | None,
    model_prefix: str | None,
    keys: str | None,
    progress: Progress | None,
) -> _CommitResult:
    cache = ExtractionCache(worker.cache_root) if worker.cache_root is not None else None
    records, entries, summary = _cached_or_extract(
        worker.repo,
        worker.repo.commit(sha),
        model_prefix,
        keys,
        number,
        progress,
        cache,
        worker.shared,
    )
    if cache is None:
        return _CommitResult(records, entries, summary)
    return _CommitResult(records, entries, summary, cache.hits, cache.misses, cache.warnings)


def _pooled_target(
    sha: str, number: int | None, model_prefix: str | None, keys: str | None
) -> _CommitResult:
    return _extract_target(_WORKER[0], sha, number, model_prefix, keys, None)


def _results(
    worker: _Worker,
    targets: list[tuple[str, int | None]],
    model_prefix: str | None,
    keys: str | None,
    jobs: int,
    progress: Progress | None,
) -> Iterator[_CommitResult]:
    """Each target's extraction, in ``targets`` order whatever order the workers finish in.

    One target: in this process, with point-by-point progress. Several: a pool of
    ``jobs`` processes, progress counting commits.
    """
    if len(targets) == 1 or jobs <= 1:
        for done, (sha, number) in enumerate(targets, start=1):
            point_progress = progress if len(targets) == 1 else None
            yield _extract_target(worker, sha, number, model_prefix, keys, point_progress)
            if progress is not None and len(targets) > 1:
                progress(done, len(targets), _target_label(sha, number))
        return
    context = multiprocessing.get_context("spawn")  # no forked git handles
    init = (worker.repo_path, worker.shared.lineage.tip, worker.cache_root)
    with ProcessPoolExecutor(
        jobs, mp_context=context, initializer=_start_worker, initargs=init
    ) as pool:
        futures = {
            pool.submit(_pooled_target, sha, number, model_prefix, keys): index
            for index, (sha, number) in enumerate(targets)
        }
        finished: dict[int, _CommitResult] = {}
        for done, future in enumerate(as_completed(futures), start=1):
            index = futures[future]
            finished[index] = future.result()
            if progress is not None:
                progress(done, len(targets), _target_label(*targets[index]))
        for index in range(len(targets)):
            yield finished[index]


def _target_label(sha: str, number: int | None) -> str:
    return f"#{number} {sha[:12]}" if number is not None else sha[:12]


def extract(
    repo_path: Path,
    rev: str,
    model_prefix: str | None,
    keys: str | None,
    prs: list[int],
    *,
    progress: Progress | None = None,
    cache: ExtractionCache | None = None,
    jobs: int = 1,
) -> IngestResult:
    """Evidence records and PR ledger entries of an InferenceX repository (see module doc).

    With ``cache``, each commit's extraction is looked up there first and stored
    there after (see :mod:`provenance.store.extraction_cache`); the result is
    the same either way. With several ``prs`` and ``jobs`` > 1 the commits are
    extracted by a pool of ``jobs`` processes; the result does not depend on it.
    A killed run loses only the commits in flight: the others are in the cache.
    """
    worker = _open_worker(repo_path, rev, cache.root if cache is not None else None)
    summary = IngestSummary()
    records: dict[str, EvidenceRecord] = {}
    entries: dict[int, LedgerEntry] = {}
    targets: list[tuple[str, int | None]]
    if prs:
        history = worker.shared.lineage.history
        targets = [(require_pr_commit(history, n, rev).sha, n) for n in prs]
    else:
        targets = [(worker.shared.lineage.tip, None)]
    for result in _results(worker, targets, model_prefix, keys, jobs, progress):
        summary.absorb(result.summary)
        records.update((r.id, r) for r in result.records)
        entries.update((e.pr.number, e) for e in result.entries)
        if cache is not None:
            cache.hits += result.cache_hits
            cache.misses += result.cache_misses
            cache.warnings.extend(result.cache_warnings)
    if cache is not None:
        summary.warnings.extend(cache.warnings)
    ordered = [records[k] for k in sorted(records)]
    finish_summary(summary, ordered)
    return IngestResult(
        records=ordered,
        entries=[entries[n] for n in sorted(entries)],
        summary=summary,
    )
