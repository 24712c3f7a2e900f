"""Which PR backs each draft record, by content, and the ledger entries of those PRs.

See :mod:`~provenance.evidence.inferencex.content_trace` for the walk; this module
turns its traces into record history, backing PRs and :class:`LedgerEntry` rows.

A launcher or recipe text change need not change what the benchmark runs (an
added ``echo``, an eval harness call). When a record's newest origin is such a
file origin (newer than every master-config point origin), the record's config
key is extracted again at that commit's first parent (:class:`ServedChecks`)
and compared by :func:`~provenance.evidence.inferencex.served_content.ran_by`.
Equal: the commit is an ``unchanged-served`` move on the record's history and
the next candidate is the origin of the files as they were at the parent.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from provenance.errors import InputError
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
    KeyExtraction,
    extract_key,
)
from provenance.evidence.inferencex.history import (
    HistoryCommit,
    pr_head,
)
from provenance.evidence.inferencex.lineage import Lineage
from provenance.evidence.inferencex.served_content import ran_by
from provenance.evidence.inferencex.snapshot import Snapshot
from provenance.evidence.inferencex.summary import IngestSummary
from provenance.model.ledger import INFERENCEX_REPO, LedgerEntry, LedgerFile, PrRef
from provenance.model.record import (
    ContentMove,
    ContentPlace,
    EvidenceRecord,
    SourceFileKind,
)
from provenance.sources.git import MissingObjectError, Repo

HISTORY_ROOTS = ("benchmarks",)
MoveFileKind = Literal["master-config", "launcher", "srt-slurm-recipe", "other"]


@dataclass
class Attribution:
    """Which PRs back each record, from git history and perf-changelog."""

    links: dict[str, set[int]] = field(default_factory=dict)
    commits: dict[int, HistoryCommit] = field(default_factory=dict)
    changelog_prs: set[int] = field(default_factory=set)


def _file_kind(kinds: Mapping[str, SourceFileKind], path: str) -> MoveFileKind:
    kind = kinds.get(path, "other")
    return "other" if kind == "perf-changelog" else kind


def _moves(
    traces: Iterable[tuple[str, Trace]],
    kinds: Mapping[str, SourceFileKind],
    unchanged: Iterable[tuple[int, ContentMove]] = (),
) -> tuple[ContentMove, ...]:
    """The moves of a record's contents as :class:`ContentMove`, newest first, once each
    (``unchanged``: ``unchanged-served`` moves, with their commits' history indexes)."""
    found: dict[tuple[Any, ...], tuple[int, ContentMove]] = {}
    for index, made in unchanged:
        found.setdefault((made.commit, made.file_kind, made.before, made.after), (index, made))
    for path, content in traces:
        file_kind = _file_kind(kinds, path)
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


@dataclass
class ServedChecks:
    """Config keys extracted at commits and launcher traces from commits, memoised for
    every commit of one ingest (on one :class:`Lineage`): each (commit, key) once."""

    repo: Repo
    _keys: dict[tuple[str, str], KeyExtraction | str] = field(default_factory=dict)
    _traces: dict[tuple[str, str], Trace] = field(default_factory=dict)

    def extraction(self, sha: str, config_key: str) -> KeyExtraction | str:
        """``config_key`` extracted at ``sha``, or why it could not be."""
        token = (sha, config_key)
        if token not in self._keys:
            try:
                found: KeyExtraction | str = extract_key(
                    self.repo, self.repo.commit(sha), config_key
                )
            except MissingObjectError as exc:
                found = f"objects missing at {sha[:9]} ({exc.message})"
            except InputError as exc:
                found = f"{sha[:9]} could not be read ({exc.message})"
            self._keys[token] = found
        return self._keys[token]

    def traces(self, lineage: Lineage, sha: str, keys: Iterable[str]) -> dict[str, Trace]:
        """The launcher and recipe traces of ``keys`` (:func:`file_key`) from ``sha``."""
        wanted = set(keys)
        missing = {k for k in wanted if (sha, k) not in self._traces}
        if missing:
            log = lineage.file_log(HISTORY_ROOTS)
            found = trace(lineage.history_of(sha), log, file_contents(self.repo), missing)
            self._traces.update(((sha, k), t) for k, t in found.items())
        return {k: self._traces[(sha, k)] for k in wanted}


@dataclass
class _Credit:
    """A record's origin once launcher edits that changed nothing it runs are passed over."""

    origin: HistoryCommit | None
    unchanged: list[tuple[int, ContentMove]] = field(default_factory=list)
    traces: list[tuple[str, Trace]] = field(default_factory=list)
    kinds: dict[str, SourceFileKind] = field(default_factory=dict)


def _key_at(snapshot: Snapshot, path: str) -> str | None:
    """``path``'s :func:`file_key` at ``snapshot`` (None when not in its tree)."""
    blob = snapshot.blob_sha(path)
    if blob is None:
        return None
    return file_key(path, blob, functools.partial(_read, snapshot, path))


def _placed(content: Trace, path: str) -> frozenset[Place]:
    """Where ``content`` (at ``path`` now) was just after its origin: before its oldest move."""
    oldest = content.moves[-1].before if content.moves else frozenset()
    return oldest or frozenset({(path, "")})


def _newest(commits: Iterable[HistoryCommit | None]) -> HistoryCommit | None:
    return min((c for c in commits if c is not None), key=lambda c: c.index, default=None)


@dataclass(frozen=True, slots=True)
class _ParentRun:
    """A commit's first parent whose extraction of a record's key shows it ran the record."""

    sha: str
    found: KeyExtraction
    #: indexes of ``found.records`` with the record's determining content
    same: tuple[int, ...]


def _same_at_parent(
    checks: ServedChecks, lineage: Lineage, record: EvidenceRecord, commit: HistoryCommit
) -> _ParentRun | None:
    """``record``'s config key extracted at ``commit``'s first parent, when that shows
    the same determining content over every workload of ``record`` (else None: no
    parent in the history, the key absent or skipped there, a partial record on
    either side, missing objects, other content)."""
    commits = lineage.history.commits
    if commit.index + 1 >= len(commits):
        return None
    parent = commits[commit.index + 1].sha
    found = checks.extraction(parent, record.config_key)
    same = ran_by(record, found, parent[:9])
    if isinstance(found, str) or isinstance(same, str):
        return None
    return _ParentRun(parent, found, same)


def _credit(
    checks: ServedChecks,
    lineage: Lineage,
    record: EvidenceRecord,
    point_origin: HistoryCommit | None,
    files: list[tuple[str, str, Trace]],
    kinds: Mapping[str, SourceFileKind],
) -> _Credit:
    """The origin of what ``record`` runs, given the newest origin of its master-config
    points and its launcher and recipe files (path, :func:`file_key`, trace).

    While the newest origin C is a file origin newer than ``point_origin``, the key
    is extracted at C's first parent: when that shows the same determining content
    over every workload, C is an ``unchanged-served`` move and the files as they
    were at the parent are traced from there. C stays the origin when the parent
    cannot show it (no parent in the history, the key absent or skipped there,
    a partial record on either side, missing objects, a file unreadable there).
    """
    credit = _Credit(origin=None, kinds=dict(kinds))
    while True:
        newest_file = _newest(t.origin for _p, _k, t in files)
        points_newer = (
            point_origin is not None
            and newest_file is not None
            and (point_origin.index <= newest_file.index)
        )
        if newest_file is None or points_newer:
            credit.origin = _newest([point_origin, newest_file])
            return credit
        credit.origin = newest_file
        run = _same_at_parent(checks, lineage, record, newest_file)
        if run is None:
            return credit
        parent, found, same = run.sha, run.found, run.same
        snapshot = Snapshot(checks.repo, checks.repo.commit(parent))
        parent_files: list[tuple[str, str]] = []
        for path in sorted({p for i in same for p in found.attributed[i]}):
            key = _key_at(snapshot, path)
            if key is None:
                return credit
            parent_files.append((path, key))
        for i in same:
            for source_file in found.records[i].source.files:
                credit.kinds.setdefault(source_file.path, source_file.kind)
        traced = checks.traces(lineage, parent, (k for _p, k in parent_files))
        at_commit = Snapshot(checks.repo, checks.repo.commit(newest_file.sha))
        changed = [p for p, k in parent_files if _key_at(at_commit, p) != k]
        before = [(p, "") for p in changed]
        after = [pl for p, _k, t in files if t.origin is newest_file for pl in _placed(t, p)]
        credit.unchanged.append(
            (
                newest_file.index,
                ContentMove(
                    kind="unchanged-served",
                    file_kind=_file_kind(credit.kinds, (changed or [after[0][0]])[0]),
                    commit=newest_file.sha,
                    pr=newest_file.pr,
                    before=_places(before),
                    after=_places(after),
                ),
            )
        )
        files = [(p, k, traced[k]) for p, k in parent_files]
        credit.traces.extend((p, traced[k]) for p, k in parent_files)


def attribute(
    repo: Repo,
    snapshot: Snapshot,
    lineage: Lineage,
    drafts: list[Draft],
    summary: IngestSummary,
    checks: ServedChecks | None = None,
) -> tuple[Attribution, list[Draft]]:
    """Link each record to the PRs that back it, by content; drop archived points never
    swept as read; add the moves of each record's content to it as ``history``.

    The backing PR is the newest origin (:func:`content_trace.trace`) of the record's
    master-config points and launcher or recipe text, past launcher and recipe
    edits that changed nothing the record runs (:func:`_credit`; ``checks``
    memoises its extractions for the ingest). An entry archived in
    ``configs/deprecated`` is evaluated with the launcher of the ingested revision;
    when that launcher's text changed after the entry was archived and the key,
    extracted just before the archiving, does not show what the record runs (the
    same determining content over every workload), the combination was never
    swept so and is not evidence.
    """
    checks = checks if checks is not None else ServedChecks(repo)
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
        if (
            archived_since is not None
            and any(c.index < archived_since.index for c in file_origins)
            and _same_at_parent(checks, lineage, draft.record, archived_since) is None
        ):
            summary.skip(
                "archived-launcher-changed",
                draft.record.framework,
                [draft.record.config_key],
                len(draft.workloads),
            )
            continue
        credit = _credit(
            checks,
            lineage,
            draft.record,
            _newest(t.origin for _p, t in traced),
            [(p, file_keys[p], t) for p, t in traced_files],
            kinds,
        )
        moves = _moves([*traced, *traced_files, *credit.traces], credit.kinds, credit.unchanged)
        record = draft.record.model_copy(update={"history": moves}).with_id()
        draft = replace(draft, record=record)
        kept.append(draft)
        prs: set[int] = set()
        latest = credit.origin
        if latest is not None:
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
