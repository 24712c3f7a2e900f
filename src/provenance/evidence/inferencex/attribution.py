"""Which PR backs each draft record, by content, and the ledger entries of those PRs.

See :mod:`~provenance.evidence.inferencex.content_trace` for the walk; this module
turns its traces into record history, backing PRs and :class:`LedgerEntry` rows.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from provenance.evidence.inferencex.changelog import changelog_links
from provenance.evidence.inferencex.content_trace import (
    Place,
    Trace,
    file_contents,
    file_key,
    master_contents,
    move_kind,
    trace,
)
from provenance.evidence.inferencex.extractor import (
    Draft,
)
from provenance.evidence.inferencex.history import (
    HistoryCommit,
    pr_head,
)
from provenance.evidence.inferencex.lineage import Lineage
from provenance.evidence.inferencex.snapshot import Snapshot
from provenance.evidence.inferencex.summary import IngestSummary
from provenance.model.ledger import INFERENCEX_REPO, LedgerEntry, LedgerFile, PrRef
from provenance.model.record import (
    ContentMove,
    ContentPlace,
    EvidenceRecord,
    SourceFileKind,
)
from provenance.sources.git import Repo

HISTORY_ROOTS = ("benchmarks",)
MoveFileKind = Literal["master-config", "launcher", "srt-slurm-recipe", "other"]


@dataclass
class Attribution:
    """Which PRs back each record, from git history and perf-changelog."""

    links: dict[str, set[int]] = field(default_factory=dict)
    commits: dict[int, HistoryCommit] = field(default_factory=dict)
    changelog_prs: set[int] = field(default_factory=set)


def _moves(
    traces: Iterable[tuple[str, Trace]], kinds: Mapping[str, SourceFileKind]
) -> tuple[ContentMove, ...]:
    """The moves of a record's contents as :class:`ContentMove`, newest first, once each."""
    found: dict[tuple[Any, ...], tuple[int, ContentMove]] = {}
    for path, content in traces:
        kind = kinds.get(path, "other")
        file_kind: MoveFileKind = "other" if kind == "perf-changelog" else kind
        for move in content.moves:
            made = ContentMove(
                kind=move_kind(move),
                file_kind=file_kind,
                commit=move.commit.sha,
                pr=move.commit.pr,
                before=_places(move.before),
                after=_places(move.after),
            )
            token = (made.commit, made.file_kind, made.before, made.after)
            found.setdefault(token, (move.commit.index, made))
    ordered = sorted(found.items(), key=lambda item: (item[1][0], repr(item[0])))
    return tuple(made for _token, (_index, made) in ordered)


def _read(snapshot: Snapshot, path: str) -> bytes:
    return snapshot.read(path) or b""


def _places(places: Iterable[Place]) -> tuple[ContentPlace, ...]:
    return tuple(ContentPlace(path=p, config_key=k or None) for p, k in sorted(places))


def attribute(
    repo: Repo,
    snapshot: Snapshot,
    lineage: Lineage,
    drafts: list[Draft],
    summary: IngestSummary,
) -> tuple[Attribution, list[Draft]]:
    """Link each record to the PRs that back it, by content; drop archived points never
    swept as read; add the moves of each record's content to it as ``history``.

    The backing PR is the newest origin (:func:`content_trace.trace`) of the record's
    master-config points and launcher or recipe text. An entry archived in
    ``configs/deprecated`` is evaluated with the launcher of the ingested revision;
    when that launcher's content changed after the entry was archived, the
    combination was never swept and is not evidence.
    """
    result = Attribution()
    history = lineage.history_of(snapshot.sha)
    prefixes = frozenset(d.model_prefix for d in drafts)
    wanted = {key for d in drafts for key in d.point_keys}
    points = trace(history, lineage.master_log(), master_contents(repo, prefixes), wanted)
    file_keys: dict[str, str] = {}
    for draft in drafts:
        for path in draft.attributed_files:
            blob = snapshot.blob_sha(path)
            if path not in file_keys and blob is not None:
                file_keys[path] = file_key(path, blob, functools.partial(_read, snapshot, path))
    file_log = lineage.file_log(HISTORY_ROOTS)
    files = trace(history, file_log, file_contents(repo), set(file_keys.values()))
    keys = {d.record.config_key for d in drafts}
    links, warnings = changelog_links(snapshot, keys)
    summary.warnings.extend(warnings)
    key_changelog: dict[str, list[HistoryCommit]] = {}
    for number, named in links.items():
        commit = history.by_pr.get(number)
        if commit is None:
            continue
        for key in named:
            key_changelog.setdefault(key, []).append(commit)
    kept: list[Draft] = []
    for draft in drafts:
        kinds: dict[str, SourceFileKind] = {f.path: f.kind for f in draft.record.source.files}
        traced = [(draft.entry_path, points[k]) for k in sorted(draft.point_keys) if k in points]
        traced_files = [(p, files[file_keys[p]]) for p in draft.attributed_files if p in file_keys]
        archived_since = None
        if draft.archived:
            archiving = [
                move.commit
                for _path, content in traced
                for move in content.moves
                if move_kind(move) == "deprecated"
            ]
            archived_since = min(archiving, key=lambda c: c.index) if archiving else None
        file_origins = [t.origin for _p, t in traced_files if t.origin is not None]
        if archived_since is not None and any(c.index < archived_since.index for c in file_origins):
            summary.skip(
                "archived-launcher-changed",
                draft.record.framework,
                [draft.record.config_key],
                len(draft.workloads),
            )
            continue
        moves = _moves([*traced, *traced_files], kinds)
        record = draft.record.model_copy(update={"history": moves}).with_id()
        draft = replace(draft, record=record)
        kept.append(draft)
        present = [t.origin for _p, t in traced if t.origin is not None] + file_origins
        prs: set[int] = set()
        if present:
            latest = min(present, key=lambda c: c.index)
            if latest.pr is not None:
                prs.add(latest.pr)
                result.commits[latest.pr] = latest
            for commit in key_changelog.get(record.config_key, []):
                after_change = commit.index <= latest.index
                before_archiving = archived_since is None or commit.index > archived_since.index
                if after_change and before_archiving and commit.pr is not None:
                    prs.add(commit.pr)
                    result.commits[commit.pr] = commit
                    result.changelog_prs.add(commit.pr)
        result.links[record.id] = prs
    return result, kept


def ledger_entries(
    repo: Repo,
    drafts: list[Draft],
    attribution: Attribution,
    only: int | None,
    changelog_keys: dict[int, set[str]],
) -> list[LedgerEntry]:
    by_pr: dict[int, list[EvidenceRecord]] = {}
    for draft in drafts:
        for number in attribution.links.get(draft.record.id, set()):
            if only is not None and number != only:
                continue
            by_pr.setdefault(number, []).append(draft.record)
    entries = []
    for number in sorted(by_pr):
        records = by_pr[number]
        commit = attribution.commits[number]
        files: dict[tuple[str, str], LedgerFile] = {}
        for record in records:
            for source_file in record.source.files:
                files[(source_file.path, record.source.commit)] = LedgerFile(
                    path=source_file.path,
                    blob_sha=source_file.blob_sha,
                    commit=record.source.commit,
                    source="git",
                )
        sources = [f"git:{commit.sha}"]
        if number in attribution.changelog_prs or changelog_keys.get(number):
            sources.append("perf-changelog.yaml")
        keys = {r.config_key for r in records} | changelog_keys.get(number, set())
        entry = LedgerEntry(
            pr=PrRef(repo=INFERENCEX_REPO, number=number),
            title=commit.title,
            merge_commit=commit.sha,
            merged_at=commit.date,
            config_keys=tuple(sorted(keys)),
            files=tuple(files[k] for k in sorted(files)),
            records=tuple(sorted(r.id for r in records)),
            sources=tuple(sources),
        )
        entries.append(with_head(entry, pr_head(repo, number)))
    return entries


def with_head(entry: LedgerEntry, head: str | None) -> LedgerEntry:
    """``entry`` with its PR head commit (``refs/pull/N/head``, the last source) set to ``head``.

    The ref is not part of any commit, so it is looked up again whenever an
    extraction comes from the cache.
    """
    ref = f"refs/pull/{entry.pr.number}/head"
    sources = [s for s in entry.sources if s != ref]
    if head:
        sources.append(ref)
    return entry.model_copy(update={"pr_head": head, "sources": tuple(sources)})
