"""``provenance verify``: is the ledger and its evidence store exactly what was recorded?

Checks, in order:

1. every ledger entry and the declarations file parse (InputError, exit 3, if not);
2. every file of the evidence store: its name, its ``id`` field and the
   SHA-256 of its content agree (else the record is *corrupt*);
3. every record id a ledger entry cites resolves to a stored record (else the
   reference is *dangling*); stored records no entry cites are *orphans*
   (a warning: an interrupted ingest leaves them, they are harmless);
4. with an InferenceX checkout (a git repository, bare or not, opened read
   only): every cited blob exists at its commit with the recorded blob SHA,
   and re-extracting the record from that commit gives the same record (else
   it is *suspect*: the source changed since it was recorded). A record stored
   without ``history`` whose re-extraction differs only by the moves of its
   content that ingest now records is not suspect (a warning counts them).

Re-extraction is injected: either a callable ``reextract(record) -> record | None``
(tests and other extractors plug in here), or the InferenceX extractor ``extract``
(``provenance.evidence.inferencex.ingest.extract``, which the command line passes),
from which :func:`inferencex_reextractor` builds one. The store sits below
extraction in the layers and imports none of it; without either, re-extraction is
``unavailable`` and a warning says so.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from enum import StrEnum
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from provenance.errors import EXIT_INTEGRITY, EXIT_OK, ProvenanceError, UsageError
from provenance.escaping import terminal
from provenance.model.ledger import INFERENCEX_REPO, LedgerEntry
from provenance.model.record import EvidenceRecord
from provenance.sources.git import Commit, commit_or_none, is_blob, open_repo, tree_entry
from provenance.store.evidence import EvidenceStore, is_record_id
from provenance.store.ledger import Ledger
from provenance.store.record_index import (
    check_index,
    index_path,
    only_unlisted,
    repair_stale_index,
)

VERIFY_SCHEMA: Literal["provenance.verify/v1"] = "provenance.verify/v1"
#: The repository ``--inferencex`` is a checkout of.

Reextract = Callable[[EvidenceRecord], EvidenceRecord | None]


class Status(StrEnum):
    OK = "ok"
    SUSPECT = "suspect"
    DANGLING = "dangling"
    CORRUPT = "corrupt"


_SEVERITY = {Status.OK: 0, Status.SUSPECT: 1, Status.DANGLING: 2, Status.CORRUPT: 3}


def _worst(statuses: list[Status]) -> Status:
    return max(statuses, key=_SEVERITY.__getitem__, default=Status.OK)


class RecordCheck(BaseModel):
    """The verdict on one evidence record (a stored file, or a cited id with no file)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str | None
    path: str | None
    status: Status
    problems: tuple[str, ...] = ()
    referenced_by: tuple[str, ...] = ()


class EntryCheck(BaseModel):
    """The verdict on one ledger entry (its references and cited blobs)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    pr: str
    path: str
    status: Status
    problems: tuple[str, ...] = ()


class VerifySummary(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    records: int
    ok: int
    suspect: int
    corrupt: int
    dangling: int
    orphans: int
    entries: int
    entries_not_ok: int
    declarations: int
    #: ``ok``, ``missing`` (a warning: audits then load every record) or ``bad``
    index: Literal["ok", "missing", "bad"] = "ok"
    blobs_checked: int = 0
    reextracted: int = 0


class VerifyReport(BaseModel):
    """Outcome of ``provenance verify`` (JSON schema ``provenance.verify/v1``)."""

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)

    schema_: Literal["provenance.verify/v1"] = Field(default=VERIFY_SCHEMA, alias="schema")
    ledger: str
    evidence: str
    inferencex: str | None = None
    reextraction: Literal["done", "unavailable", "not-requested"] = "not-requested"
    summary: VerifySummary
    records: tuple[RecordCheck, ...]
    entries: tuple[EntryCheck, ...]
    warnings: tuple[str, ...] = ()
    #: what is wrong with the evidence store's checkpoint index (``index.json``)
    index_problems: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return (
            self.summary.index != "bad"
            and all(r.status is Status.OK for r in self.records)
            and all(e.status is Status.OK for e in self.entries)
        )

    @property
    def exit_code(self) -> int:
        return EXIT_OK if self.ok else EXIT_INTEGRITY


# --------------------------------------------------------------------------
# InferenceX checks


class _GitBlobs:
    """Read-only blob lookups in a git repository, cached per (commit, path)."""

    def __init__(self, path: Path) -> None:
        self.repo = open_repo(path)
        self._cache: dict[tuple[str, str], str | None] = {}
        self._commits: dict[str, Commit | None] = {}
        self.checked = 0

    def commit(self, sha: str) -> Commit | None:
        """The commit object, or ``None`` when the repository does not have it."""
        if sha not in self._commits:
            self._commits[sha] = commit_or_none(self.repo, sha)
        return self._commits[sha]

    def has_commit(self, sha: str) -> bool:
        return self.commit(sha) is not None

    def problem(self, commit: str, path: str, blob_sha: str) -> str | None:
        """``None`` when ``path`` at ``commit`` is the blob ``blob_sha``, else what differs."""
        self.checked += 1
        if not self.has_commit(commit):
            return f"commit {commit} not found in the InferenceX checkout"
        key = (commit, path)
        if key not in self._cache:
            found_commit = self.commit(commit)
            entry = None if found_commit is None else tree_entry(self.repo, found_commit.tree, path)
            self._cache[key] = str(entry.hexsha) if entry is not None and is_blob(entry) else None
        found = self._cache[key]
        if found is None:
            return f"{path} does not exist at {commit[:12]}"
        if found != blob_sha:
            return f"{path} at {commit[:12]} is blob {found[:12]}, recorded {blob_sha[:12]}"
        return None


def _content_diff(old: EvidenceRecord, new: EvidenceRecord) -> str:
    before, after = old.content(), new.content()
    changed = sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))
    return ", ".join(changed) or "id"


def _glob_literal(text: str) -> str:
    """``text`` as an fnmatch pattern that matches only itself."""
    return "".join(f"[{ch}]" if ch in "*?[" else ch for ch in text)


def _key_pattern(keys: Collection[str]) -> str:
    """One fnmatch pattern covering ``keys``: the literal key, or their common prefix + ``*``."""
    if len(keys) == 1:
        return _glob_literal(next(iter(keys)))
    first, last = min(keys), max(keys)
    pairs = enumerate(zip(first, last, strict=False))
    size = next((i for i, (a, b) in pairs if a != b), len(first))
    return _glob_literal(first[:size]) + "*"


#: (commit, PR number or None, model token of the config key)
_Group = tuple[str, int | None, str]


def inferencex_reextractor(
    repo_path: Path,
    extract: Callable[..., Any],
    citing: Mapping[str, Sequence[int]] | None = None,
    planned: Iterable[EvidenceRecord] = (),
) -> Reextract:
    """Re-extract a record with InferenceX's ``extract`` at its commit and config key.

    A record is re-derived the way ingest derives it: for each PR that cites
    it (``citing``: record id -> PR numbers in the record's repository), with
    that PR at the record's commit; then without a PR. Extraction has a large
    fixed cost per call, so the config keys of the ``planned`` records that
    share a commit, a PR and a model token (``minimaxm3`` of
    ``minimaxm3-fp4-b200-vllm``) are extracted in one call (their common
    prefix + ``*``), falling back to one call per key if that call fails.
    Returns the re-extracted record with the same id, else the closest one for
    the same config key and hardware (so the difference can be named), else
    ``None``. An extraction that fails with a diagnosed error yields nothing.
    """
    prs_of = citing or {}

    def group_of(record: EvidenceRecord, pr: int | None) -> _Group:
        return (record.source.commit, pr, record.config_key.split("-", 1)[0])

    groups: dict[_Group, set[str]] = {}
    for record in planned:
        for pr in [*prs_of.get(record.id, ()), None]:
            groups.setdefault(group_of(record, pr), set()).add(record.config_key)
    cache: dict[tuple[str, int | None, str], dict[str, list[EvidenceRecord]] | None] = {}

    def run_once(commit: str, pr: int | None, keys: Collection[str], label: str) -> None:
        if (commit, pr, label) in cache:
            return
        try:
            prs = [] if pr is None else [pr]
            result = extract(repo_path, commit, None, _key_pattern(keys), prs)
        except ProvenanceError:
            cache[(commit, pr, label)] = None
            return
        by_key: dict[str, list[EvidenceRecord]] = {}
        for found in result.records:
            by_key.setdefault(found.config_key, []).append(found.with_id())
        cache[(commit, pr, label)] = by_key

    def run(record: EvidenceRecord, pr: int | None) -> list[EvidenceRecord]:
        commit, key = record.source.commit, record.config_key
        group = group_of(record, pr)
        keys = groups.get(group, set())
        if key in keys and len(keys) > 1:
            run_once(commit, pr, keys, "group:" + group[2])
            grouped = cache[(commit, pr, "group:" + group[2])]
            if grouped is not None:
                return grouped.get(key, [])
        run_once(commit, pr, [key], "key:" + key)
        single = cache[(commit, pr, "key:" + key)]
        return [] if single is None else single.get(key, [])

    def reextract(record: EvidenceRecord) -> EvidenceRecord | None:
        seen: list[EvidenceRecord] = []
        for pr in [*prs_of.get(record.id, ()), None]:
            candidates = run(record, pr)
            for candidate in candidates:
                if candidate.id == record.id:
                    return candidate
            seen.extend(candidates)
        near = [c for c in seen if c.hardware == record.hardware]
        if not near:
            return None
        content = record.content()

        def distance(candidate: EvidenceRecord) -> int:
            return sum(1 for k, v in candidate.content().items() if content.get(k) != v)

        return min(near, key=distance)

    return reextract


# --------------------------------------------------------------------------
# verify


class _Findings:
    """Statuses and problems gathered while verifying, keyed by record id / entry path."""

    def __init__(self) -> None:
        self.record_status: dict[str, Status] = {}
        self.record_problems: dict[str, list[str]] = {}
        self.record_paths: dict[str, str] = {}
        self.stored: dict[str, EvidenceRecord] = {}
        self.anonymous: list[RecordCheck] = []
        self.referenced_by: dict[str, list[str]] = {}
        self.entry_status: dict[str, list[Status]] = {}
        self.entry_problems: dict[str, list[str]] = {}
        self.warnings: list[str] = []

    def mark_record(self, record_id: str, status: Status, problem: str) -> None:
        self.record_status[record_id] = status
        self.record_problems.setdefault(record_id, []).append(problem)

    def mark_entry(self, path: Path, status: Status, problem: str) -> None:
        self.entry_status[str(path)].append(status)
        self.entry_problems[str(path)].append(problem)


def _check_store(store: EvidenceStore, found: _Findings) -> None:
    for check in store.check_all():
        if check.name_id is None:
            found.anonymous.append(
                RecordCheck(
                    id=check.record.id if check.record else None,
                    path=str(check.path),
                    status=Status.CORRUPT,
                    problems=(check.problem or "not a record file",),
                )
            )
            continue
        found.record_paths[check.name_id] = str(check.path)
        found.record_problems[check.name_id] = []
        if check.ok and check.record is not None:
            found.record_status[check.name_id] = Status.OK
            found.stored[check.name_id] = check.record
        else:
            found.mark_record(check.name_id, Status.CORRUPT, check.problem or "invalid")
    for temp in store.leftover_temp_files():
        found.warnings.append(f"leftover temporary file from an interrupted write: {temp}")


def _check_index(
    ledger_root: Path, store: EvidenceStore, found: _Findings
) -> tuple[Literal["ok", "missing", "bad"], list[str]]:
    """The index's state and problems. A missing index is a warning (audits then load
    every record; an empty store needs none); a damaged one fails verify. One that only
    misses sound records present in the store (an ingest killed before it rewrote the
    index) is rewritten, or left to the audits' in-memory rebuild, with a warning."""
    path = index_path(store)
    if not (path.exists() or path.is_symlink()):
        if found.record_paths or found.anonymous:
            found.warnings.extend(check_index(store, found.stored))
            return "missing", []
        return "ok", []
    problems = check_index(store, found.stored)
    sound = not found.anonymous and len(found.stored) == len(found.record_paths)
    if problems and sound and (unlisted := only_unlisted(store, found.stored)):
        done = (
            "rewrote it"
            if repair_stale_index(ledger_root, store) and not check_index(store, found.stored)
            else "could not rewrite it (read-only, or a writer holds the lock); "
            "audits rebuild it in memory"
        )
        found.warnings.append(
            f"{path}: evidence index was stale: {unlisted} record file(s) not listed "
            f"(an interrupted ingest); {done}"
        )
        return "ok", []
    return ("bad" if problems else "ok"), problems


def _check_references(
    entries: list[tuple[Path, LedgerEntry]], store: EvidenceStore, found: _Findings
) -> list[str]:
    """Resolve every cited record id; returns the orphan record ids."""
    for path, entry in entries:
        found.entry_status[str(path)] = [Status.OK]
        found.entry_problems[str(path)] = []
        for record_id in entry.records:
            if not is_record_id(record_id):
                found.mark_entry(
                    path, Status.DANGLING, f"cites {record_id!r}, which is not a record id"
                )
                continue
            found.referenced_by.setdefault(record_id, []).append(str(entry.pr))
            if record_id not in found.record_status:
                found.record_paths[record_id] = str(store.path_of(record_id))
                found.mark_record(
                    record_id, Status.DANGLING, "cited by the ledger but not in the evidence store"
                )
    orphans = sorted(set(found.stored) - set(found.referenced_by))
    found.warnings.extend(f"orphan record {r}: no ledger entry cites it" for r in orphans)
    return orphans


def _default_reextract(
    inferencex: Path,
    extract: Callable[..., Any] | None,
    entries: list[tuple[Path, LedgerEntry]],
    found: _Findings,
) -> Reextract | None:
    if extract is None:
        found.warnings.append(
            "re-extraction unavailable: no extractor was given; blobs were checked, "
            "record contents were not re-derived"
        )
        return None
    citing: dict[str, list[int]] = {}
    for _, entry in entries:
        for record_id in entry.records:
            record = found.stored.get(record_id)
            if record is not None and record.source.repo == entry.pr.repo:
                citing.setdefault(record_id, []).append(entry.pr.number)
    return inferencex_reextractor(inferencex, extract, citing, found.stored.values())


def _check_inferencex(
    blobs: _GitBlobs,
    reextract: Reextract | None,
    entries: list[tuple[Path, LedgerEntry]],
    found: _Findings,
) -> int:
    """Blob and re-extraction checks; returns how many records were re-extracted.

    Only facts about the InferenceX repository are checked against its
    checkout; records and entries of other repositories are named in a warning.
    """
    reextracted = 0
    without_history = 0
    elsewhere: set[str] = set()
    for record_id, record in sorted(found.stored.items()):
        if record.source.repo != INFERENCEX_REPO:
            elsewhere.add(record.source.repo)
            continue
        problems = [
            problem
            for file in record.source.files
            if (problem := blobs.problem(record.source.commit, file.path, file.blob_sha))
        ]
        if not problems and reextract is not None:
            fresh = reextract(record)
            reextracted += 1
            if fresh is None:
                problems.append("re-extracting at its commit gives no such record")
            elif _only_history_added(record, fresh):
                without_history += 1
            elif fresh.with_id().id != record_id:
                problems.append(
                    "re-extracting at its commit gives a different record "
                    f"({fresh.with_id().id}; differs in {_content_diff(record, fresh)})"
                )
        for problem in problems:
            found.mark_record(record_id, Status.SUSPECT, problem)
    for path, entry in entries:
        if entry.pr.repo != INFERENCEX_REPO:
            elsewhere.add(entry.pr.repo)
            continue
        for file in entry.files:
            if problem := blobs.problem(file.commit, file.path, file.blob_sha):
                found.mark_entry(path, Status.SUSPECT, problem)
        if entry.merge_commit and not blobs.has_commit(entry.merge_commit):
            found.mark_entry(
                path,
                Status.SUSPECT,
                f"merge commit {entry.merge_commit} not found in the InferenceX checkout",
            )
    for repo in sorted(elsewhere):
        found.warnings.append(
            f"records or entries from {repo} were not checked against the InferenceX checkout"
        )
    if without_history:
        found.warnings.append(
            f"{without_history} records were stored before ingest recorded the moves, renames "
            "and deprecations of their content; re-extracting them adds that history and "
            "nothing else (a rebuild of the ledger records it)"
        )
    return reextracted


def _only_history_added(stored: EvidenceRecord, fresh: EvidenceRecord) -> bool:
    """Whether ``fresh`` is ``stored`` plus the content history older ingests did not record."""
    if stored.history or not fresh.history:
        return False
    return fresh.model_copy(update={"history": ()}).with_id().id == stored.id


def verify(
    ledger_root: Path,
    evidence_root: Path,
    inferencex: Path | None = None,
    *,
    reextract: Reextract | None = None,
    extract: Callable[..., Any] | None = None,
) -> VerifyReport:
    """Verify a ledger directory and its evidence store (see the module docstring).

    With ``inferencex``, records are re-extracted by ``reextract``, else by one
    :func:`inferencex_reextractor` over ``extract`` (InferenceX's extractor).
    """
    for kind, directory in (("ledger", ledger_root), ("evidence", evidence_root)):
        if not Path(directory).is_dir():
            raise UsageError(f"{kind} directory {directory} does not exist")
    ledger = Ledger(ledger_root)
    store = EvidenceStore(evidence_root)
    found = _Findings()

    # Entries are read before the store: writers store records before the
    # entries citing them, so a verify running beside a writer can see orphans
    # but never a false dangling reference.
    entries = [(path, ledger.load_entry_file(path)) for path in ledger.entry_paths()]
    declarations = ledger.declarations()
    ledger.manifest()  # read for its errors: an unreadable or malformed manifest fails too
    _check_store(store, found)
    orphans = _check_references(entries, store, found)
    index_state, index_problems = _check_index(Path(ledger_root), store, found)

    blobs_checked = reextracted = 0
    reextraction: Literal["done", "unavailable", "not-requested"] = "not-requested"
    if inferencex is not None:
        blobs = _GitBlobs(inferencex)
        if reextract is None:
            reextract = _default_reextract(inferencex, extract, entries, found)
        reextraction = "done" if reextract is not None else "unavailable"
        reextracted = _check_inferencex(blobs, reextract, entries, found)
        blobs_checked = blobs.checked

    # An entry is as bad as the worst record it cites.
    for path, entry in entries:
        for record_id in dict.fromkeys(entry.records):
            status = found.record_status.get(record_id, Status.OK)
            if status is not Status.OK:
                found.mark_entry(path, status, f"cites {status.value} record {record_id}")

    records = [
        RecordCheck(
            id=record_id,
            path=found.record_paths.get(record_id),
            status=found.record_status[record_id],
            problems=tuple(found.record_problems.get(record_id, ())),
            referenced_by=tuple(sorted(set(found.referenced_by.get(record_id, [])))),
        )
        for record_id in sorted(found.record_status)
    ]
    records.extend(found.anonymous)
    entry_checks = [
        EntryCheck(
            pr=str(entry.pr),
            path=str(path),
            status=_worst(found.entry_status[str(path)]),
            problems=tuple(found.entry_problems[str(path)]),
        )
        for path, entry in entries
    ]

    def count(status: Status) -> int:
        return sum(1 for r in records if r.status is status)

    summary = VerifySummary(
        records=len(records),
        ok=count(Status.OK),
        suspect=count(Status.SUSPECT),
        corrupt=count(Status.CORRUPT),
        dangling=count(Status.DANGLING),
        orphans=len(orphans),
        entries=len(entry_checks),
        entries_not_ok=sum(1 for e in entry_checks if e.status is not Status.OK),
        declarations=len(declarations.declarations),
        index=index_state,
        blobs_checked=blobs_checked,
        reextracted=reextracted,
    )
    return VerifyReport(
        ledger=str(ledger_root),
        evidence=str(evidence_root),
        inferencex=str(inferencex) if inferencex is not None else None,
        reextraction=reextraction,
        summary=summary,
        records=tuple(records),
        entries=tuple(entry_checks),
        warnings=tuple(found.warnings),
        index_problems=tuple(index_problems),
    )


def render_text(report: VerifyReport) -> str:
    """A plain-text report for people; control characters in values are escaped."""
    s = report.summary
    lines = [
        f"ledger {report.ledger}: {s.entries} entries, {s.declarations} declarations",
        f"evidence {report.evidence}: {s.records} records - {s.ok} ok, {s.suspect} suspect, "
        f"{s.corrupt} corrupt, {s.dangling} dangling; {s.orphans} orphans",
    ]
    if report.inferencex is not None:
        lines.append(
            f"inferencex {report.inferencex}: {s.blobs_checked} blobs checked, "
            f"{s.reextracted} records re-extracted (re-extraction {report.reextraction})"
        )
    if report.index_problems:
        lines.append("BAD evidence index")
        lines.extend(f"  - {problem}" for problem in report.index_problems)
    for record in report.records:
        if record.status is not Status.OK:
            cited = f" (cited by {', '.join(record.referenced_by)})" if record.referenced_by else ""
            lines.append(f"{record.status.value.upper()} {record.id or record.path}{cited}")
            lines.extend(f"  - {problem}" for problem in record.problems)
    for entry in report.entries:
        if entry.status is not Status.OK:
            lines.append(f"{entry.status.value.upper()} ledger entry {entry.pr} ({entry.path})")
            lines.extend(f"  - {problem}" for problem in entry.problems)
    lines.extend(f"warning: {warning}" for warning in report.warnings)
    lines.append("verify: OK" if report.ok else "verify: FAILED (integrity)")
    return "\n".join(terminal(line) for line in lines) + "\n"
