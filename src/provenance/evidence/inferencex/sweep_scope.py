"""Which records a sweep run actually ran: their content at the run's head commit.

A sweep found for a PR ran the PR's head commit, not the merge commit and not a
later revision. It validates a record only when the head holds what determines
the record. First, by the record's files (the fast path): each has, at the swept
head, the content it has at the record's commit:

* a launcher, srt-slurm recipe or runner launcher: the same blob SHA at the same path;
* a master config: the record's config key has, in some master config at the head
  (wherever it lives), the entry text it has in the record's file (comment and
  blank lines ignored, :func:`~provenance.evidence.inferencex.blocks.key_blocks`):
  the whole master file changes with every other key, the entry does not.

When a file differs, the record's config key is extracted again at the head by the
extractor ingest uses (:func:`~provenance.evidence.inferencex.ingest.extract_key`)
and the record's *determining content* — everything but its id, source (commit,
files, blob SHAs), history and workloads — is compared with that of the head's
records (:mod:`~provenance.evidence.inferencex.served_content`, the comparator
attribution uses too): the run ran the record when head records with equal
content and no partial marker cover every one of its workloads (a file that changed without
changing what the benchmark ran, e.g. a runner launcher edit elsewhere). The
differing files are kept on the run (``SweepRun.equivalent``). Otherwise the run
did not run the record, and ``SweepRun.not_ran`` says why: the content that
differs, the points the head lacks, or why the head could not be read (objects
missing, a partial or skipped extraction). Nothing is guessed.

A head the repository does not have ran nothing that can be shown.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from provenance.errors import InputError
from provenance.evidence.inferencex.blocks import key_blocks, master_files_at
from provenance.evidence.inferencex.extractor import KeyExtraction, extract_key
from provenance.evidence.inferencex.served_content import not_same_reason
from provenance.model.ledger import LedgerEntry, RecordScope, SweepRun
from provenance.model.record import EvidenceRecord
from provenance.sources.git import (
    Commit,
    MissingObjectError,
    Repo,
    commit_or_none,
    is_blob,
    open_repo,
    read_object,
    tree_entry,
)
from provenance.store.evidence import EvidenceStore


@dataclass(frozen=True, slots=True)
class RunScope:
    """The records of an entry a head ran (sorted), and notes on those whose files differ."""

    ran: tuple[str, ...]
    equivalent: tuple[RecordScope, ...]
    not_ran: tuple[RecordScope, ...]


def _entry_digests(repo: Repo, commit: Commit, path: str, key: str) -> set[str]:
    entry = tree_entry(repo, commit.tree, path)
    if entry is None or not is_blob(entry):
        return set()
    text = read_object(repo, entry.binsha).decode("utf-8", "replace")
    return set(key_blocks(text).get(key, []))


class _Head:
    """One swept head: its master-config entries' text and its re-extracted config keys."""

    def __init__(self, repo: Repo, commit: Commit) -> None:
        self.repo = repo
        self.commit = commit
        self._masters: dict[str, set[str]] | None = None
        self._keys: dict[str, KeyExtraction | str] = {}

    def entry_digests(self, key: str) -> set[str]:
        if self._masters is None:
            self._masters = {}
            for blob in master_files_at(self.commit).values():
                text = read_object(self.repo, bytes.fromhex(blob)).decode("utf-8", "replace")
                for name, digests in key_blocks(text).items():
                    self._masters.setdefault(name, set()).update(digests)
        return self._masters.get(key, set())

    def differing(self, source: Commit, record: EvidenceRecord) -> list[str]:
        """The record's files whose content at the head is not the record's."""
        found = []
        for file in record.source.files:
            if file.kind == "master-config":
                wanted = _entry_digests(self.repo, source, file.path, record.config_key)
                same = bool(wanted) and wanted <= self.entry_digests(record.config_key)
            else:
                entry = tree_entry(self.repo, self.commit.tree, file.path)
                same = entry is not None and is_blob(entry) and entry.hexsha == file.blob_sha
            if not same:
                found.append(file.path)
        return found

    def extraction(self, key: str) -> KeyExtraction | str:
        """``key`` extracted at the head, or why it could not be."""
        if key not in self._keys:
            try:
                self._keys[key] = extract_key(self.repo, self.commit, key)
            except MissingObjectError as exc:
                self._keys[key] = f"objects missing at the head ({exc.message})"
            except InputError as exc:
                self._keys[key] = f"the head could not be read ({exc.message})"
        return self._keys[key]


def scope_run(repo: Repo, head: str, records: Iterable[EvidenceRecord]) -> RunScope:
    """Which of ``records`` the commit ``head`` ran, and why not for the others."""
    records = list(records)
    at_head = commit_or_none(repo, head)
    if at_head is None:
        reason = f"the head {head} is not in the repository"
        return RunScope((), (), tuple(RecordScope(record=r.id, reason=reason) for r in records))
    swept = _Head(repo, at_head)
    ran: list[str] = []
    equivalent: list[RecordScope] = []
    not_ran: list[RecordScope] = []
    for record in records:
        source = commit_or_none(repo, record.source.commit)
        if source is None:
            reason = f"the record's commit {record.source.commit} is not in the repository"
            not_ran.append(RecordScope(record=record.id, reason=reason))
            continue
        differing = tuple(swept.differing(source, record))
        if not differing:
            ran.append(record.id)
            continue
        reason = not_same_reason(record, swept.extraction(record.config_key), "the head")
        note = RecordScope(record=record.id, differing=differing, reason=reason)
        if reason:
            not_ran.append(note)
        else:
            ran.append(record.id)
            equivalent.append(note)

    def by_record(notes: list[RecordScope]) -> tuple[RecordScope, ...]:
        return tuple(sorted(notes, key=lambda n: n.record))

    return RunScope(tuple(sorted(ran)), by_record(equivalent), by_record(not_ran))


def sweep_scope(
    repo_path: Path, evidence_root: Path
) -> Callable[[LedgerEntry, SweepRun], SweepRun]:
    """``scope(entry, run)``: ``run`` scoped to the records of ``entry`` its head ran (from
    the InferenceX checkout at ``repo_path`` and the records in ``evidence_root``)."""
    repo = open_repo(repo_path)
    store = EvidenceStore(evidence_root)

    def scope(entry: LedgerEntry, run: SweepRun) -> SweepRun:
        records = [store.get(record_id) for record_id in entry.records]
        found = scope_run(repo, run.head_sha, records)
        return run.model_copy(
            update={
                "scoped": True,
                "ran": found.ran,
                "equivalent": found.equivalent,
                "not_ran": found.not_ran,
            }
        )

    return scope
