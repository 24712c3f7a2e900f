"""The tally: per combination key, its outcome and how many combinations have it.

The third step of the audit's flow (keys → judge → tally → walks → pipeline). Both
walks feed one :class:`Tally` per recipe with blocks of selections that share a
combination key (:meth:`Tally.add_set`); the tally judges each key once (through the
:class:`~provenance.audit.judge.Judge`), counts its combinations, remembers one example
and its PD pool modes (for the reverse direction), and groups the selections by
outcome and declaration into the report's verdict entries (:meth:`Tally.entries`).
The reverse direction, the claims and the summary read the tally only.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field

from provenance.audit.declarations import DeclarationMatcher
from provenance.audit.judge import Judge, Outcome
from provenance.audit.keys import CombinationKey
from provenance.audit.verdicts import SelectionSet, VerdictEntry
from provenance.model.combination import Selection
from provenance.model.reasons import VerdictKind


@dataclass(slots=True)
class VerdictGroup:
    """The selections of one verdict entry: one outcome, one declaration."""

    outcome: Outcome
    declared_by: str | None
    sets: list[SelectionSet] = field(default_factory=list)
    count: int = 0


@dataclass(slots=True)
class KeyTally:
    """Per combination key: how many combinations, one example (for the reverse direction).

    The example may be given as a function that builds it: few are ever read.
    """

    count: int = 0
    example_of: Selection | Callable[[], Selection] | None = None
    pd_modes: set[str] = field(default_factory=set)

    @property
    def example(self) -> Selection | None:
        found = self.example_of
        if found is None or isinstance(found, Selection):
            return found
        self.example_of = found = found()
        return found


@dataclass(slots=True, kw_only=True)
class KeyState(KeyTally):
    """Everything a combination needs per combination key, looked up once per key: its
    outcome, its groups (by declaration) and its tallies (:class:`KeyTally`)."""

    outcome: Outcome
    groups: dict[str | None, VerdictGroup] = field(default_factory=dict)


class Tally:
    """The outcomes and counts of one recipe's combinations, by combination key."""

    def __init__(self, recipe: str, judge: Judge, declarations: DeclarationMatcher) -> None:
        self.recipe = recipe
        self.judge = judge
        self.declarations = declarations
        #: (outcome, declaration) -> its group; outcomes compare by identity (one per key
        #: judged, shared by the keys the judge found equivalent)
        self._groups: dict[tuple[Outcome, str | None], VerdictGroup] = {}
        self._states: dict[CombinationKey, KeyState] = {}
        #: per combination key, its tallies (the key states themselves)
        self.seen: Mapping[CombinationKey, KeyTally] = self._states
        self.recommended_by_hardware: Counter[str] = Counter()
        self.hardware_seen: set[str] = set()
        #: the same per KV offload choice (``SelectionSet.kv_offload``)
        self.recommended_by_kv: Counter[str] = Counter()
        self.kv_seen: set[str] = set()
        self.model_ids: dict[str, set[str]] = defaultdict(set)
        self.count = 0

    def state(self, key: CombinationKey, model_id: str) -> KeyState:
        """The outcome and tallies of ``key`` (judged on first use)."""
        state = self._states.get(key)
        if state is None:
            state = self._states[key] = KeyState(outcome=self.judge.outcome(key))
            self.model_ids[model_id].add(key.hardware)
        return state

    def declared(self, selection: Selection, outcome: Outcome) -> str | None:
        """The declaration covering a guide-only ``selection``, if any."""
        if outcome.verdict is VerdictKind.RECOMMENDED or not self.declarations:
            return None
        return self.declarations.declared_by(self.recipe, selection, outcome.reason_codes)

    def add_set(
        self,
        state: KeyState,
        selections: SelectionSet,
        count: int,
        declared: str | None,
        example: Selection | Callable[[], Selection] | None,
        pd_modes: Iterable[str],
    ) -> None:
        """Tally ``count`` combinations (``selections``) that share ``state``'s key."""
        outcome = state.outcome
        hardware = selections.hardware
        self.count += count
        self.hardware_seen.add(hardware)
        kv = selections.kv_offload
        if kv is not None:
            self.kv_seen.add(kv)
        state.count += count
        if state.example_of is None:
            state.example_of = example
        state.pd_modes.update(pd_modes)
        if outcome.verdict is VerdictKind.RECOMMENDED:
            self.recommended_by_hardware[hardware] += count
            if kv is not None:
                self.recommended_by_kv[kv] += count
        group = state.groups.get(declared)
        if group is None:
            group_key = (outcome, declared)
            group = self._groups.get(group_key)
            if group is None:
                group = self._groups[group_key] = VerdictGroup(
                    outcome=outcome, declared_by=declared
                )
            state.groups[declared] = group
        group.sets.append(selections)
        group.count += count

    def outcomes(self) -> Iterator[Outcome]:
        """The outcome of every key tallied (one per key, in the order keys were met)."""
        for state in self._states.values():
            yield state.outcome

    def entries(self) -> list[VerdictEntry]:
        """One verdict entry per (outcome, declaration), in the order they were first met."""
        entries = []
        for group in self._groups.values():
            outcome = group.outcome
            entries.append(
                VerdictEntry(
                    recipe=self.recipe,
                    combinations=group.count,
                    selections=tuple(group.sets),
                    verdict=outcome.verdict,
                    roles=outcome.roles,
                    reasons=outcome.reasons,
                    nearest=outcome.nearest,
                    nearest_overall=outcome.nearest_overall,
                    evidence=outcome.evidence,
                    declared_by=group.declared_by,
                )
            )
        return entries
