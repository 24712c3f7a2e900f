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

from collections.abc import Iterable, Sequence
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


def _narrowed(entry: VerdictEntry, sets: list[SelectionSet]) -> VerdictEntry:
    count = sum(s.count for s in sets)
    if count == entry.combinations:
        return entry
    return replace(entry, selections=tuple(sets), combinations=count)


def introduced_entries(head: AuditReport, diff: DiffReport) -> tuple[VerdictEntry, ...]:
    """The head's verdict entries cut down to the combinations the PR adds or changes."""
    wanted = _Wanted(diff.changes)
    out: list[VerdictEntry] = []
    for entry in head.verdicts:
        sets = [part for s in entry.selections for part in wanted.cut(entry.recipe, s)]
        if sets:
            out.append(_narrowed(entry, sets))
    return tuple(out)


def entries_by_group(
    head: AuditReport, groups: Sequence[ChangeGroup]
) -> list[tuple[VerdictEntry, ...]]:
    """For each of ``groups``, the head's verdict entries cut down to its combinations
    (one pass over the head: a group is looked at only for the shapes it has)."""
    wanted = [_Wanted([group]) for group in groups]
    by_shape: dict[_Shape, list[int]] = {}
    for index, one in enumerate(wanted):
        for shape in one.sets:
            by_shape.setdefault(shape, []).append(index)
    out: list[list[VerdictEntry]] = [[] for _ in groups]
    for entry in head.verdicts:
        parts: dict[int, list[SelectionSet]] = {}
        for selection_set in entry.selections:
            for index in by_shape.get(_shape(entry.recipe, selection_set), ()):
                cut = wanted[index].cut(entry.recipe, selection_set)
                if cut:
                    parts.setdefault(index, []).extend(cut)
        for index, sets in parts.items():
            out[index].append(_narrowed(entry, sets))
    return [tuple(entries) for entries in out]


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
