"""The report order of reasons and of the PRs they cite (shared by every judgement), and
the note a reason gets when the evidence value depends on a run-time condition."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace
from typing import Protocol

from provenance.audit.verdicts import Reason
from provenance.model.reasons import ReasonCode
from provenance.model.record import EvidenceRecord
from provenance.model.scope import ROLE_ORDER

CODE_ORDER = {code: i for i, code in enumerate(ReasonCode)}


class _CitesPrs(Protocol):
    @property
    def prs(self) -> tuple[str, ...]: ...


class _HasReasons(Protocol):
    @property
    def role(self) -> str: ...

    @property
    def reasons(self) -> tuple[Reason, ...]: ...

    @property
    def ordered_reasons(self) -> tuple[Reason, ...]: ...


class _HasRecord(Protocol):
    @property
    def record(self) -> EvidenceRecord: ...


def with_conditions(reason: Reason, records: Iterable[_HasRecord]) -> Reason:
    """``reason`` (about ``reason.flag`` of ``reason.role``) with, for each of ``records``
    whose value of it depends on a run-time condition, ``<config key>'s value depends on
    <condition> (path:line): <values>`` added to its detail."""
    notes: dict[str, None] = {}
    for found in records:
        keys = found.record.conditional.get(reason.role or "", {})
        value = keys.get(reason.flag or "")
        if value is not None:
            notes.setdefault(f"{found.record.config_key}'s value {value.describe()}", None)
    if not notes:
        return reason
    return replace(reason, detail="; ".join([*([reason.detail] if reason.detail else []), *notes]))


def prs_of(records: Iterable[_CitesPrs]) -> tuple[str, ...]:
    """The PRs behind ``records``, once each, by repository then number."""
    seen: dict[str, None] = {}
    for record in records:
        for pr in record.prs:
            seen.setdefault(pr, None)
    return tuple(sorted(seen, key=_pr_sort_key))


def _pr_sort_key(pr: str) -> tuple[str, int]:
    repo, _, number = pr.partition("#")
    return (repo, int(number) if number.isdigit() else 0)


def _reason_order(reason: Reason) -> tuple[int, int, str]:
    return (ROLE_ORDER.get(reason.role or "", -1), CODE_ORDER[reason.code], reason.flag or "")


def ordered(
    reasons: Sequence[Reason], judgements: Sequence[_HasReasons] = ()
) -> tuple[Reason, ...]:
    """The judgements' reasons then ``reasons``, without duplicates, in report order: by
    role (combination-level first), reason code, flag; stable otherwise.

    Shortcut: when the roles are distinct, known and in report order, and every one of
    ``reasons`` is combination-level, the result is ``reasons`` in order followed by each
    role's own reasons already in order (role-level reasons always name their role, so
    none equals another role's or a combination-level one).
    """
    if not judgements:
        if len(reasons) < 2:
            return tuple(reasons)
        return tuple(sorted(dict.fromkeys(reasons), key=_reason_order))
    previous = -1
    for judgement in judgements:
        order = ROLE_ORDER.get(judgement.role, -1)
        if order <= previous:
            break
        previous = order
    else:
        if all(reason.role is None for reason in reasons):
            head = ordered(reasons)
            if len(judgements) == 1:
                return head + judgements[0].ordered_reasons
            return head + tuple(r for j in judgements for r in j.ordered_reasons)
    chained = [r for j in judgements for r in j.reasons]
    return ordered([*chained, *reasons])
