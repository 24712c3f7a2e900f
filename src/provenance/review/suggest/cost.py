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

**Scoping is not a cost.** Dropping a flag from a combination for which no in-scope
evidence point sets it (the baseline audit's flag provenance for it is empty) takes
nothing evidence vouches for, provided the combination only *inherits* the flag: every
recipe place that gives it to the combination is a layer that names no hardware,
strategy or feature (``model.base_args``/``base_env``, ``variants.<v>.extra_args``/
``extra_env``). That is the review's request on recipes #682 (the MXFP8 variant's FP8
indexer cache, written for every hardware and run by InferenceX only on Blackwell), and
such a drop is counted as :class:`ScopedFlag`, shown, but free. Still a cost:

* a flag the recipe writes for the combination by name (a hardware or strategy
  override, a feature it selected), evidenced or not: the author chose it for that cell;
* a *kernel* choice (a key naming a backend or kernel), wherever it is written: dropping
  it falls back to a kernel no evidence backs there either (the cutlass MSA decode
  backend of recipes #730/#735);
* a flag some in-scope evidence sets with that value, or a changed value (the recipe's
  value replaced, not scoped away);
* a feature forced on a combination that did not select it (always).

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
    "ScopedFlag",
    "SimulatedAcceptance",
    "Unbacked",
    "costs_of",
    "scoped_of",
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

#: (kind, canonical key, value, feature or place); kind ``scopes-unbacked`` is no cost
#: (:class:`ScopedFlag`)
CostKey = tuple[str, str, str, str]
#: The kind of :data:`CostKey` that records a scoping drop, not a cost.
SCOPES = "scopes-unbacked"
#: (role, node rank) -> canonical key -> value: one combination's major flags
RoleMap = Mapping[tuple[str, int | None], Mapping[str, str]]
#: (role, node rank) -> the canonical keys whose value no in-scope evidence point sets in
#: that role (the baseline verdict's flag provenance is empty)
Unbacked = Mapping[tuple[str, int | None], frozenset[str]]
#: The recipe layers that name no hardware, strategy or feature: a flag written there is
#: inherited by every combination of the model (``model``) or of the variant.
BROAD = frozenset(
    {
        ("model", "base_args"),
        ("model", "base_env"),
        ("variants", "extra_args"),
        ("variants", "extra_env"),
    }
)
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


class ScopedFlag(BaseModel):
    """A flag an edit drops from combinations that only inherited it and for which no
    in-scope evidence sets it: scoping, not a cost (measured like one)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    flag: str
    value: str
    #: combinations that no longer claim it (each counted once)
    combinations: int
    #: the broad layer they inherited it from (key path)
    written_at: str

    def describe(self) -> str:
        return (
            f"drops {self.flag}={self.value} from {self.combinations} combinations that "
            f"inherit it from {self.written_at} and that no in-scope evidence runs it for"
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
    """Whether ``key`` picks a kernel: it names a backend or kernel, or turns one on
    (``attention_config.use_trtllm_attention`` selects TensorRT-LLM's attention)."""
    leaf = key.rsplit(".", 1)[-1].lower()
    return "backend" in leaf or "kernel" in leaf or "trtllm" in leaf


def _path(place: FlagPlace) -> str:
    return ".".join(str(part) for part in place.container)


def _broad(place: FlagPlace) -> bool:
    """Whether ``place`` is a layer naming no hardware, strategy or feature."""
    path = place.container
    if len(path) == 2 and path[0] == "model":
        return (path[0], str(path[1])) in BROAD
    return len(path) == 3 and path[0] == "variants" and ("variants", str(path[2])) in BROAD


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

    def _places(
        self, key: str, value: str, combo: tuple[object, ...], role: str
    ) -> list[FlagPlace]:
        """The places that write ``key=value`` for ``combo`` (all of them without
        :attr:`reaches`), outside features first."""
        found = self.written.get((key, value), [])
        if self.reaches is None:
            return list(found)
        return [place for place in found if self.reaches(place, combo, role)]

    def classify(
        self,
        old: RoleMap,
        new: RoleMap,
        selected: frozenset[str],
        combo: tuple[object, ...],
        unbacked: Unbacked | None = None,
    ) -> set[CostKey]:
        """What one combination (``combo``, which selected the features ``selected``)
        pays: flags forced from features it did not select, flags the recipe writes that
        it no longer gets. A flag it only inherited, that no in-scope evidence sets for it
        (``unbacked``: the baseline's flag provenance), and that names no kernel, is
        dropped as scoping (kind :data:`SCOPES`), not as a cost."""
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
                places = self._places(key, value, combo, role[0])
                if not places:
                    places = list(self.written.get((key, value), []))[:1]
                if not places:
                    continue  # not written in the recipe: no choice of the recipe
                scoping = (
                    key not in after
                    and unbacked is not None
                    and key in unbacked.get(role, frozenset())
                    and not _is_kernel(key)
                    and all(_broad(place) for place in places)
                )
                kind = SCOPES if scoping else "overrides-choice"
                found.add((kind, key, value, _path(places[0])))
        return found


def costs_of(counts: Counter[CostKey]) -> tuple[EditCost, ...]:
    """The measured costs, most combinations first."""
    costs = []
    for (kind, key, value, detail), combinations in counts.items():
        if kind == SCOPES:
            continue
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


def scoped_of(counts: Counter[CostKey]) -> tuple[ScopedFlag, ...]:
    """The measured scoping drops (no cost), most combinations first."""
    found = [
        ScopedFlag(flag=key, value=value, combinations=combinations, written_at=detail)
        for (kind, key, value, detail), combinations in counts.items()
        if kind == SCOPES
    ]
    found.sort(key=lambda s: (-s.combinations, s.flag, s.value, s.written_at))
    return tuple(found)


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
