"""Record on the ledger's entries which PRs were reverted, re-landed or reverted others.

``provenance ledger reverts`` runs this alone (a few seconds: one ``git log``), and
``provenance ingest inferencex`` runs it after writing its entries, over every entry of
the ledger, so a revert merged after a PR was ingested still reaches that PR's entry.
The line read is the ledger manifest's InferenceX revision unless one is given.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict

from provenance.errors import UsageError
from provenance.evidence.inferencex.history import first_parent_history
from provenance.evidence.inferencex.reverts import mark_reverts, read_reverts
from provenance.sources.git import Repo, open_repo, resolve_commit
from provenance.store.ledger import Ledger
from provenance.store.lock import writer_lock


class RevertsReport(BaseModel):
    """What ``provenance ledger reverts`` found and wrote."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    revision: str
    #: PR numbers of the entries rewritten, and one line per fact recorded
    written: tuple[int, ...] = ()
    facts: tuple[str, ...] = ()


def mark_ledger(repo: Repo, revision: str, ledger: Ledger) -> RevertsReport:
    """Set the revert fields of every entry of ``ledger`` from ``revision``'s first-parent
    line (the caller holds the writer lock)."""
    history = first_parent_history(repo, revision)
    reverts = read_reverts(repo, history)
    entries = ledger.entries()
    written: list[int] = []
    facts: list[str] = []
    for old, new in zip(entries, mark_reverts(entries, history, reverts), strict=True):
        if new == old:
            continue
        if ledger.write_entry(new):
            written.append(new.pr.number)
        if new.reverted_by is not None and new.reverted_by != old.reverted_by:
            facts.append(f"#{new.pr.number} reverted by {_name(new.reverted_by.pr)}")
        if new.relanded_by is not None and new.relanded_by != old.relanded_by:
            facts.append(f"#{new.pr.number} re-landed by {_name(new.relanded_by.pr)}")
        if new.reverts != old.reverts:
            names = ", ".join(_name(link.pr) for link in new.reverts)
            facts.append(f"#{new.pr.number} reverts {names}")
    return RevertsReport(revision=revision, written=tuple(written), facts=tuple(facts))


def _name(number: int | None) -> str:
    return f"#{number}" if number is not None else "a merge without (#N)"


def record_reverts(
    inferencex: Path, ledger_root: Path, rev: str | None, lock_timeout: float = 10.0
) -> RevertsReport:
    """``provenance ledger reverts``: ``rev`` (default: the manifest's revision) read
    from the InferenceX clone ``inferencex``; entries rewritten under the writer lock."""
    ledger = Ledger(ledger_root)
    if rev is None:
        manifest = ledger.manifest()
        if manifest is None:
            raise UsageError(
                f"{ledger_root} has no manifest.yaml: give the InferenceX revision with --rev"
            )
        rev = manifest.inferencex.revision
    repo = open_repo(inferencex)
    revision = str(resolve_commit(repo, rev).hexsha)
    with writer_lock(ledger_root, timeout=lock_timeout):
        return mark_ledger(repo, revision, ledger)


def render_reverts(report: RevertsReport) -> str:
    lines = [f"reverts on the first-parent line of {report.revision[:12]}:"]
    lines += [f"  {fact}" for fact in report.facts] or ["  nothing new to record"]
    lines.append(f"entries written: {len(report.written)}")
    return "\n".join(lines) + "\n"
