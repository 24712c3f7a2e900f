"""How each evidence PR stands: reverted, a revert, or the first to serve what it ran.

A citation names a PR as evidence only when the PR changed what was served. A record's
*served content* is its checkpoint, hardware, framework, image, topology and each role's
major flags (the policy's reduction: tuning, harness and functional keys aside); a PR
*first served* it when no record of an earlier PR (by merge date, then number) that was
not reverted has the same served content. A PR none of whose cited records it first
served changed the harness, the workloads or the infrastructure around the same
deployment (an AgentX migration, a revert of one), not what ran.

Reverts come from the ledger entries (``reverted_by``, ``relanded_by``, ``reverts``;
``provenance ledger reverts``).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterable, Mapping

from pydantic import BaseModel, ConfigDict

from provenance.model.flags import FlagSet
from provenance.model.ledger import LedgerEntry, RevertLink
from provenance.model.record import EvidenceRecord, canonical_json

MajorFn = Callable[[FlagSet, str], FlagSet]


class PrStanding(BaseModel):
    """One evidence PR as a citation must present it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    pr: str
    #: ``OWNER/REPO#N`` of the merge that reverted it (it backs nothing), and of a re-land
    reverted_by: str | None = None
    relanded_by: str | None = None
    #: the PRs its merge reverted
    reverts: tuple[str, ...] = ()
    #: whether it first served the content of at least one record cited with it (None:
    #: none of its cited records could be compared)
    changed_served: bool | None = None
    #: the earlier PRs that first served what its cited records serve (when it did not)
    served_before: tuple[str, ...] = ()

    @property
    def backs(self) -> bool:
        """Whether the PR may be cited as evidence: not reverted, and not known to have
        served only what earlier PRs served."""
        return self.reverted_by is None and self.changed_served is not False


def served_content(record: EvidenceRecord, major: MajorFn) -> tuple[object, ...]:
    """What a record's deployment served (see the module docstring)."""
    return (
        record.checkpoint,
        record.hardware,
        record.framework,
        record.image,
        canonical_json(record.topology.model_dump(mode="json")),
        tuple(sorted((role, major(flags, role)) for role, flags in record.roles.items())),
    )


def _ref(entry: LedgerEntry, link: RevertLink) -> str:
    return f"{entry.pr.repo}#{link.pr}" if link.pr is not None else link.commit[:12]


def _number(ref: str) -> tuple[str, int]:
    repo, _, number = ref.rpartition("#")
    return (repo, int(number)) if number.isdigit() else (ref, 0)


def _order(entry: LedgerEntry) -> tuple[dt.date, int]:
    return (entry.merged_at or dt.date.max, entry.pr.number)


def standings(
    entries: Iterable[LedgerEntry],
    records: Mapping[str, EvidenceRecord],
    cited: Mapping[str, Iterable[str]],
    major: MajorFn,
) -> dict[str, PrStanding]:
    """The standing of each PR of ``cited`` (PR -> the record ids cited with it), judged
    over ``records`` (every record of the cited checkpoints) and the ledger ``entries``."""
    ordered = sorted(entries, key=_order)
    by_pr = {str(e.pr): e for e in ordered}
    content: dict[str, tuple[object, ...]] = {}

    def served(record_id: str) -> tuple[object, ...] | None:
        if record_id not in content:
            record = records.get(record_id)
            if record is None:
                return None
            content[record_id] = served_content(record, major)
        return content[record_id]

    first: dict[tuple[object, ...], str] = {}
    for entry in ordered:
        if entry.reverted_by is not None:
            continue
        for record_id in entry.records:
            key = served(record_id)
            if key is not None:
                first.setdefault(key, str(entry.pr))
    out: dict[str, PrStanding] = {}
    for pr, ids in cited.items():
        found = by_pr.get(pr)
        # A reverted PR backs nothing; what it served says nothing more.
        reverted = found is not None and found.reverted_by is not None
        keys = [] if reverted else [k for k in (served(i) for i in set(ids)) if k is not None]
        firsts = {first.get(k, pr) for k in keys}
        changed = (pr in firsts) if keys else None
        out[pr] = PrStanding(
            pr=pr,
            reverted_by=_ref(found, found.reverted_by) if found and found.reverted_by else None,
            relanded_by=_ref(found, found.relanded_by) if found and found.relanded_by else None,
            reverts=tuple(_ref(found, link) for link in found.reverts) if found else (),
            changed_served=changed,
            served_before=() if changed is not False else tuple(sorted(firsts, key=_number)),
        )
    return out
