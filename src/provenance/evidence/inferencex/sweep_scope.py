"""Which records a sweep run actually ran: their content at the run's head commit.

A sweep found for a PR ran the PR's head commit, not the merge commit and not a
later revision. It validates a record only when every file the record was built
from has, at the swept head, the content it has at the record's commit:

* a launcher, srt-slurm recipe or runner launcher: the same blob SHA at the same path;
* a master config: the record's config key has, in some master config at the head
  (wherever it lives), the entry text it has in the record's file (comment and
  blank lines ignored, :func:`~provenance.evidence.inferencex.blocks.key_blocks`):
  the whole master file changes with every other key, the entry does not.

A head the repository does not have ran nothing that can be shown.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path

from provenance.evidence.inferencex.blocks import key_blocks, master_files_at
from provenance.model.ledger import LedgerEntry, SweepRun
from provenance.model.record import EvidenceRecord
from provenance.sources.git import (
    Commit,
    Repo,
    commit_or_none,
    is_blob,
    open_repo,
    read_object,
    tree_entry,
)
from provenance.store.evidence import EvidenceStore


def _entry_digests(repo: Repo, commit: Commit, path: str, key: str) -> set[str]:
    entry = tree_entry(repo, commit.tree, path)
    if entry is None or not is_blob(entry):
        return set()
    text = read_object(repo, entry.binsha).decode("utf-8", "replace")
    return set(key_blocks(text).get(key, []))


def records_run_at(repo: Repo, head: str, records: Iterable[EvidenceRecord]) -> tuple[str, ...]:
    """The ids of ``records`` whose content the commit ``head`` holds (sorted)."""
    at_head = commit_or_none(repo, head)
    if at_head is None:
        return ()
    masters: dict[str, set[str]] | None = None
    ran: list[str] = []
    for record in records:
        source = commit_or_none(repo, record.source.commit)
        if source is None:
            continue
        same = True
        for file in record.source.files:
            if file.kind == "master-config":
                if masters is None:
                    masters = {}
                    for blob in master_files_at(at_head).values():
                        text = read_object(repo, bytes.fromhex(blob)).decode("utf-8", "replace")
                        for key, digests in key_blocks(text).items():
                            masters.setdefault(key, set()).update(digests)
                wanted = _entry_digests(repo, source, file.path, record.config_key)
                same = bool(wanted) and wanted <= masters.get(record.config_key, set())
            else:
                entry = tree_entry(repo, at_head.tree, file.path)
                same = entry is not None and is_blob(entry) and entry.hexsha == file.blob_sha
            if not same:
                break
        if same:
            ran.append(record.id)
    return tuple(sorted(ran))


def sweep_scope(
    repo_path: Path, evidence_root: Path
) -> Callable[[LedgerEntry, SweepRun], tuple[str, ...]]:
    """``scope(entry, run)``: the records of ``entry`` that ``run``'s head ran (from the
    InferenceX checkout at ``repo_path`` and the records in ``evidence_root``)."""
    repo = open_repo(repo_path)
    store = EvidenceStore(evidence_root)

    def scope(entry: LedgerEntry, run: SweepRun) -> tuple[str, ...]:
        records = [store.get(record_id) for record_id in entry.records]
        return records_run_at(repo, run.head_sha, records)

    return scope
