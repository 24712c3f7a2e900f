"""Whether a re-extraction shows that a commit ran what a record runs: one comparator.

A record's *determining content* is everything but where it came from — its id,
source (commit, files, blob SHAs), history, workloads and partial markers: the
served flags and env per role, image, topology, checkpoint, hardware, runner,
precision, framework and config key. Another commit ran the record when the
records its extraction of the record's config key gives with equal determining
content and no partial marker cover every workload of the record
(:func:`ran_by`). Sweep scoping (``sweep_scope.py``) asks it of a swept
head; attribution (``attribution.py``) of the first parent of a commit that
changed a record's launcher text.
"""

from __future__ import annotations

from typing import Any

from provenance.evidence.inferencex.extractor import KeyExtraction
from provenance.model.record import EvidenceRecord, WorkloadPoint, canonical_json

#: Record fields that say where a record came from, not what the benchmark ran.
_PROVENANCE = ("id", "source", "history", "workloads", "partial")


def determining_content(record: EvidenceRecord) -> dict[str, Any]:
    """What determines ``record`` apart from its workloads: served flags and env per role,
    image, topology, checkpoint, hardware, runner, precision, framework, config key."""
    data = record.content()
    for name in _PROVENANCE:
        data.pop(name, None)
    return data


def _workload_key(point: WorkloadPoint) -> bytes:
    return canonical_json(point.model_dump(mode="json"))


def _differences(record: EvidenceRecord, other: EvidenceRecord) -> list[str]:
    """The determining fields of ``other`` that differ from ``record``'s (flags by key)."""
    mine, theirs = determining_content(record), determining_content(other)
    named = []
    for name in sorted(set(mine) | set(theirs)):
        if mine.get(name) == theirs.get(name):
            continue
        if name == "roles":
            for role in sorted(set(record.roles) | set(other.roles)):
                a, b = record.roles.get(role), other.roles.get(role)
                if a is None or b is None:
                    named.append(f"role {role}")
                elif a != b:
                    keys = sorted({*a.diff(b).only_left, *a.diff(b).only_right, *a.diff(b).changed})
                    named.append(f"{role} flags {', '.join(keys)}")
        else:
            named.append(name)
    return named


def ran_by(record: EvidenceRecord, found: KeyExtraction | str, where: str) -> tuple[int, ...] | str:
    """The indexes of ``found.records`` that show ``where`` ran ``record`` (equal
    determining content, none partial, every workload covered), or why ``found``
    (``record``'s config key extracted at ``where``, e.g. "the head", or why it could
    not be) does not show it."""
    if isinstance(found, str):
        return found
    if record.partial:
        return "the record is partial: its flags are not all known, so no change is provably none"
    if not found.records:
        skipped = sorted({item.code for item in found.skipped})
        if skipped:
            return f"re-extraction at {where} skipped the key's points ({', '.join(skipped)})"
        problem = f" ({found.warnings[0]})" if found.warnings else ""
        return f"{where} has no record for config key {record.config_key}{problem}"
    content = determining_content(record)
    indexes = tuple(i for i, r in enumerate(found.records) if determining_content(r) == content)
    if not indexes:
        nearest = min(found.records, key=lambda r: len(_differences(record, r)))
        return f"re-extracted at {where}, it differs: " + "; ".join(_differences(record, nearest))
    same = [found.records[i] for i in indexes]
    if any(r.partial for r in same):
        return f"re-extraction at {where} is partial: the content cannot be shown equal"
    covered = {_workload_key(w) for r in same for w in r.workloads}
    missing = sum(1 for w in record.workloads if _workload_key(w) not in covered)
    if missing:
        total = len(record.workloads)
        return f"{where}'s search space lacks {missing} of the record's {total} points"
    return indexes


def not_same_reason(record: EvidenceRecord, found: KeyExtraction | str, where: str) -> str:
    """Why ``found`` does not show that ``where`` ran ``record`` (:func:`ran_by`); ""
    when it does."""
    result = ran_by(record, found, where)
    return result if isinstance(result, str) else ""
