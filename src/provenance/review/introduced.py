"""What a pull request introduces: the part of the head audit its diff points at.

A PR audit judges every combination of the head, but a reviewer (and the citations
block, and the SARIF of the PR) needs only the combinations the PR adds or changes:
the head side of the ``new``, ``verdict-changed`` and ``flags-changed`` groups of
the :class:`~provenance.review.diff.DiffReport`. :func:`introduced_report` is the
head audit cut down to them, each verdict entry keeping its roles, evidence and
reasons. :func:`recipes_without_evidence` names the recipes whose model the ledger
has no InferenceX evidence for on any hardware the recipe was audited on.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from provenance.audit.verdicts import AuditReport, SelectionSet, VerdictEntry
from provenance.model.combination import Selection
from provenance.review.diff import ChangeGroup, DiffReport, has_in_scope_evidence

#: the change kinds whose head combinations a PR introduces (``removed`` has none)
INTRODUCED_KINDS = frozenset({"new", "verdict-changed", "flags-changed"})

_Shape = tuple[str, str, str, str | None, int | None, str | None, int | None, str | None]


def _shape(recipe: str, s: SelectionSet) -> _Shape:
    return (
        recipe,
        s.variant,
        s.hardware,
        s.strategy,
        s.node_count,
        s.kv_offload,
        s.kv_instances,
        s.omni_task,
    )


class _Wanted:
    """The introduced combinations, by deployment shape: whole selection sets of the diff
    (matched as they are, the usual case) and their selections (for partial overlaps)."""

    def __init__(self, groups: Iterable[ChangeGroup]) -> None:
        self.sets: dict[_Shape, list[SelectionSet]] = {}
        self._selections: dict[_Shape, set[Selection]] = {}
        for group in groups:
            if group.kind not in INTRODUCED_KINDS:
                continue
            for selection_set in group.selections:
                self.sets.setdefault(_shape(group.recipe, selection_set), []).append(selection_set)

    def cut(self, recipe: str, selection_set: SelectionSet) -> list[SelectionSet]:
        """The part of ``selection_set`` (a head set) that the PR introduces."""
        shape = _shape(recipe, selection_set)
        wanted = self.sets.get(shape)
        if not wanted:
            return []
        if any(selection_set == w for w in wanted):
            return [selection_set]
        chosen = self._selections.get(shape)
        if chosen is None:
            chosen = self._selections[shape] = {s for w in wanted for s in w.selections()}
        selections = list(selection_set.selections())
        kept = [s for s in selections if s in chosen]
        if len(kept) == len(selections):
            return [selection_set]
        return [SelectionSet.of(s) for s in kept]


def introduced_entries(
    head: AuditReport, diff: DiffReport, groups: Iterable[ChangeGroup] | None = None
) -> tuple[VerdictEntry, ...]:
    """The head's verdict entries cut down to the combinations the PR adds or changes (or,
    given ``groups``, to the head combinations of those change groups)."""
    wanted = _Wanted(diff.changes if groups is None else groups)
    out: list[VerdictEntry] = []
    for entry in head.verdicts:
        sets = [part for s in entry.selections for part in wanted.cut(entry.recipe, s)]
        if not sets:
            continue
        count = sum(s.count for s in sets)
        if count == entry.combinations:
            out.append(entry)
        else:
            out.append(replace(entry, selections=tuple(sets), combinations=count))
    return tuple(out)


def introduced_report(head: AuditReport, diff: DiffReport) -> AuditReport:
    """The head audit with only the combinations the PR adds or changes, and only the
    claims the PR newly makes (``diff.claims``)."""
    return head.model_copy(
        update={"verdicts": introduced_entries(head, diff), "claims": diff.claims}
    )


def recipes_without_evidence(report: AuditReport) -> tuple[str, ...]:
    """The audited recipes none of whose combinations has any in-scope evidence: the
    ledger holds no InferenceX evidence for their model on the hardware audited."""
    seen: dict[str, bool] = {}
    for entry in report.verdicts:
        if entry.combinations:
            seen[entry.recipe] = seen.get(entry.recipe, False) or has_in_scope_evidence(entry)
    return tuple(recipe for recipe in report.recipes if recipe in seen and not seen[recipe])
