"""What an edit takes from users: measured per combination, named in the output.

An edit can reach evidence by taking something away from combinations that did not
ask for it. Two such costs are measured, combination by combination, by comparing each
combination's major flags before and after the edit (:class:`~.proof.Prover`):

* **removes-capability**: the edit gives a combination a flag that one of the recipe's
  opt-in features writes (``text_only``'s ``--language-model-only``) although the
  combination did not select that feature: the feature is forced on it (for
  ``language_model_only`` the vision encoder is gone);
* **overrides-choice**: the edit drops or changes, for a combination, a flag the recipe
  writes explicitly (a variant's ``extra_args``, a hardware override, …): a choice made
  on purpose, such as the cutlass MSA decode backend recipes #730/#735 wrote for NVFP4.
  A key naming a backend or kernel is reported as a *kernel* choice.

An edit with neither cost is *free*; only free edits are combined into the proposed
edit (:mod:`.run`). A costed edit is still shown, with its cost, and is left out
altogether when an edit scoped more narrowly (one that relies on the feature instead
of forcing it) reaches the same evidence point.

:func:`simulated_acceptance` names the evidence behind an edit whose runs simulated
speculative acceptance (``speculative_config.rejection_sample_method: synthetic``):
such a run measured the engine with a drafter whose acceptance was never measured.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict

from provenance.audit.index import EvidenceIndex
from provenance.recipes.locate import FlagPlace

__all__ = [
    "CostKey",
    "EditCost",
    "RecipeChoices",
    "RoleMap",
    "SimulatedAcceptance",
    "costs_of",
    "simulated_acceptance",
]

#: What a feature's flag takes away when it is forced on a combination (canonical key
#: -> capability); a flag not listed takes away "running without <feature>".
CAPABILITY = {
    "language_model_only": "multimodal input (the vision encoder)",
}
#: The canonical key (and value) with which a benchmark simulates speculative
#: acceptance instead of measuring it (vLLM's synthetic rejection sampler); its companion
#: ``speculative_config.synthetic_acceptance_length`` is the acceptance length assumed.
SYNTHETIC = ("speculative_config.rejection_sample_method", "synthetic")
SIMULATED_WARNING = "acceptance simulated: the drafter's acceptance rate was never measured"

#: (kind, canonical key, value, feature or place)
CostKey = tuple[str, str, str, str]
#: (role, node rank) -> canonical key -> value: one combination's major flags
RoleMap = Mapping[tuple[str, int | None], Mapping[str, str]]
#: Whether a place of the recipe reaches a combination's process of a role (the
#: combination as :mod:`.proof` keys it: variant, hardware, strategy, …)
Reaches = Callable[[FlagPlace, tuple[object, ...], str], bool]


class EditCost(BaseModel):
    """One thing an edit takes from combinations that did not ask for it (measured)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["removes-capability", "overrides-choice"]
    #: the canonical key and value forced on (removes-capability) or taken from
    #: (overrides-choice) the combinations
    flag: str
    value: str
    #: combinations that pay it (each counted once)
    combinations: int
    #: removes-capability: the opt-in feature whose flag is forced, and what it removes
    feature: str | None = None
    capability: str | None = None
    #: overrides-choice: where the recipe writes the flag (key path)
    written_at: str | None = None
    #: overrides-choice: the key names a backend or kernel
    kernel: bool = False

    def describe(self) -> str:
        if self.kind == "removes-capability":
            return (
                f"removes {self.capability} for {self.combinations} combinations that did "
                f"not select {self.feature} (forces its {self.flag}={self.value})"
            )
        what = "a kernel choice" if self.kernel else "a choice"
        return (
            f"overrides {what} written in the recipe for {self.combinations} combinations "
            f"({self.flag}={self.value} at {self.written_at})"
        )


class SimulatedAcceptance(BaseModel):
    """A run behind an edit that simulated speculative acceptance instead of measuring it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    record: str
    config_key: str
    prs: tuple[str, ...] = ()
    #: the record's flags that say so, as ``key=value``
    flags: tuple[str, ...]


def _is_kernel(key: str) -> bool:
    leaf = key.rsplit(".", 1)[-1].lower()
    return "backend" in leaf or "kernel" in leaf


def _path(place: FlagPlace) -> str:
    return ".".join(str(part) for part in place.container)


class RecipeChoices:
    """What a recipe writes on purpose, read from its flag places (canonical keys):
    the flags each opt-in feature writes, and every flag written explicitly."""

    def __init__(
        self,
        places: Mapping[str, Sequence[FlagPlace]],
        opt_in: Iterable[str],
        reaches: Reaches | None = None,
    ) -> None:
        optional = set(opt_in)
        self.reaches = reaches
        #: (key, value) -> the opt-in features writing it (any mode, any hardware)
        self.feature_flags: dict[tuple[str, str], frozenset[str]] = {}
        #: (key, value) -> every place the recipe writes it (outside features first)
        self.written: dict[tuple[str, str], list[FlagPlace]] = {}
        for key, found in places.items():
            for place in sorted(found, key=lambda p: p.container[:1] == ("features",)):
                if place.value is None:
                    continue
                pair = (key, place.value)
                self.written.setdefault(pair, []).append(place)
                head = place.container[:2]
                if len(head) == 2 and head[0] == "features" and str(head[1]) in optional:
                    held = self.feature_flags.get(pair, frozenset())
                    self.feature_flags[pair] = held | {str(head[1])}

    def forced_features(self, key: str, value: str, selected: Iterable[str]) -> frozenset[str]:
        """The features ``key=value`` belongs to when none of them is ``selected``."""
        features = self.feature_flags.get((key, value), frozenset())
        if features & set(selected):
            return frozenset()
        return features

    def _written_at(self, key: str, value: str, combo: tuple[object, ...], role: str) -> str | None:
        """Where the recipe writes ``key=value`` for ``combo`` (the first place that
        reaches it; without :attr:`reaches`, the first place)."""
        found = self.written.get((key, value))
        if not found:
            return None
        if self.reaches is not None:
            for place in found:
                if self.reaches(place, combo, role):
                    return _path(place)
        return _path(found[0])

    def classify(
        self, old: RoleMap, new: RoleMap, selected: frozenset[str], combo: tuple[object, ...]
    ) -> set[CostKey]:
        """The costs one combination (``combo``, which selected the features
        ``selected``) pays: flags forced from features it did not select, flags the
        recipe writes that it no longer gets."""
        found: set[CostKey] = set()
        for role, flags in new.items():
            before = old.get(role, {})
            for key, value in flags.items():
                if before.get(key) == value:
                    continue
                for feature in sorted(self.forced_features(key, value, selected))[:1]:
                    found.add(("removes-capability", key, value, feature))
        for role, flags in old.items():
            after = new.get(role, {})
            for key, value in flags.items():
                if after.get(key) == value:
                    continue
                where = self._written_at(key, value, combo, role[0])
                if where is not None:
                    found.add(("overrides-choice", key, value, where))
        return found


def costs_of(counts: Counter[CostKey]) -> tuple[EditCost, ...]:
    """The measured costs, most combinations first."""
    costs = []
    for (kind, key, value, detail), combinations in counts.items():
        if kind == "removes-capability":
            costs.append(
                EditCost(
                    kind="removes-capability",
                    flag=key,
                    value=value,
                    combinations=combinations,
                    feature=detail,
                    capability=CAPABILITY.get(key, f"running without {detail}"),
                )
            )
        else:
            costs.append(
                EditCost(
                    kind="overrides-choice",
                    flag=key,
                    value=value,
                    combinations=combinations,
                    written_at=detail,
                    kernel=_is_kernel(key),
                )
            )
    costs.sort(key=lambda c: (-c.combinations, c.kind, c.flag, c.value))
    return tuple(costs)


def _simulated_flags(flags: Mapping[str, str]) -> tuple[str, ...]:
    key, value = SYNTHETIC
    if flags.get(key) != value:
        return ()
    leaf = key.rsplit(".", 1)[0] + ".synthetic_"
    return tuple(f"{k}={v}" for k, v in sorted(flags.items()) if k == key or k.startswith(leaf))


def simulated_acceptance(
    graph: EvidenceIndex, records: Iterable[str]
) -> tuple[SimulatedAcceptance, ...]:
    """The records among ``records`` whose runs simulated speculative acceptance."""
    found = []
    for record_id in dict.fromkeys(records):
        indexed = graph.records.get(record_id)
        if indexed is None:
            continue
        flags: dict[str, None] = {}
        for role in indexed.record.roles.values():
            flags.update(dict.fromkeys(_simulated_flags(role)))
        if flags:
            found.append(
                SimulatedAcceptance(
                    record=record_id,
                    config_key=indexed.config_key,
                    prs=indexed.prs,
                    flags=tuple(flags),
                )
            )
    return tuple(found)
