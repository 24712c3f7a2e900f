"""The proof of a suggested edit: apply it to a copy, re-render, re-audit, compare.

The edited recipe is written into a private copy of the recipes root (taxonomy,
strategies, kv_store and the one model file), loaded and validated exactly as any
recipe (a file the site's builder could not render is refused there: schema, YAML 1.2
scalars, feature-mode rules), rendered with the ported builder and audited against the
same evidence graph as the original. Every combination is then compared with the
original audit, one by one:

* **gained**: guide-only before, recommended after;
* **lost**: recommended before, guide-only after;
* **worse**: guide-only both times, but further from the nearest evidence point (of all
  points, validated or not: the verdict entry's ``nearest_overall`` when it has one);
* **better**: guide-only both times and closer;
* anything else is unchanged.

Distance counts only towards evidence an edit could reach: a combination whose nearest
evidence point has a deployment shape the recipe cannot render
(:func:`~provenance.audit.judge.reachability.expressibility_problems`, e.g. a prefill engine on 2
GPUs where pd_cluster pools are whole nodes) is neither worse nor better, before or
after: moving towards or away from a point no recipe edit can match changes nothing the
author can act on.

Given the recipe's choices (:class:`~provenance.review.suggest.cost.RecipeChoices`),
the comparison also measures each combination's major flags before and after: a
feature's flag forced on a combination that did not select it, or a flag the recipe
writes taken from it, is the edit's ``cost``. A flag dropped from a combination that
only inherited it and that no in-scope evidence sets for it (the original audit's flag
provenance) is ``scoped``: measured and shown, but no cost (:mod:`.cost`). ``backed_by``
names the evidence of the combinations it makes recommended.

An edit that touches only ``variants.<v>`` sections is audited for those variants
alone: no other combination can change.
"""

from __future__ import annotations

import shutil
import tempfile
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from provenance.audit.index import EvidenceIndex
from provenance.audit.judge.reachability import expressibility_problems
from provenance.audit.pipeline import AuditFilters, AuditInputs, EvidenceCache, run_audit
from provenance.audit.verdicts import AuditReport, SelectionSet, VerdictEntry
from provenance.model.reasons import VerdictKind
from provenance.normalise.policy import POLICY_FILES
from provenance.review.suggest.cost import (
    CostKey,
    EditCost,
    RecipeChoices,
    RoleMap,
    ScopedFlag,
    Unbacked,
    costs_of,
    scoped_of,
)

__all__ = ["CellCount", "Outcomes", "Proof", "Prover", "Reachable", "outcomes", "reachable_points"]

#: variant, hardware, strategy, node count, KV, KV instances, features, modes, pools
SelectionKey = tuple[object, ...]


@dataclass(frozen=True, slots=True)
class _Outcome:
    recommended: bool
    #: summed distance to the nearest evidence point over the roles (None: none in scope)
    distance: int | None
    #: the verdict entry (its major flags and evidence): what the cost measure compares
    entry: VerdictEntry | None = field(default=None, compare=False, repr=False)


Outcomes = dict[SelectionKey, _Outcome]


def _keys(selections: SelectionSet) -> Iterator[SelectionKey]:
    head = (
        selections.variant,
        selections.hardware,
        selections.strategy,
        selections.node_count,
        selections.kv_offload,
        selections.kv_instances,
    )
    pairs: list[tuple[object, ...]] = [()]
    if selections.pd is not None:
        pairs = [
            (p.nodes, p.parallelism, d.nodes, d.parallelism)
            for p in selections.pd.prefill
            for d in selections.pd.decode
        ]
    for choice in selections.features:
        features = (choice.features, tuple(sorted(choice.feature_modes.items(), key=str)))
        for pair in pairs:
            yield (*head, *features, *pair)


#: Whether the recipe can render the deployment shape of an evidence point (record id) on
#: a piece of hardware (hardware id).
Reachable = Callable[[str, str], bool]


def reachable_points(graph: EvidenceIndex, gpus_per_node: Mapping[str, int]) -> Reachable:
    """:data:`Reachable` for ``graph``'s records (memoised per record and hardware)."""
    memo: dict[tuple[str, str], bool] = {}

    def reachable(record_id: str, hardware: str) -> bool:
        found = memo.get((record_id, hardware))
        if found is None:
            record = graph.records.get(record_id)
            found = memo[(record_id, hardware)] = record is not None and not (
                expressibility_problems(record.record.topology, gpus_per_node.get(hardware))
            )
        return found

    return reachable


def _outcome(entry: VerdictEntry, reachable: Reachable | None) -> _Outcome:
    # the nearest point of all (validated or not): the search already aims at validated
    # points; here an edit must move no combination away from any evidence
    nearest = entry.nearest_overall or entry.nearest
    distance = sum(n.distance for n in nearest) if nearest else None
    if distance is not None and reachable is not None and entry.selections:
        hardware = entry.selections[0].hardware
        if not all(reachable(n.record, hardware) for n in nearest):
            distance = None
    return _Outcome(entry.verdict is VerdictKind.RECOMMENDED, distance, entry)


def _role_map(entry: VerdictEntry | None) -> RoleMap:
    if entry is None:
        return {}
    return {(r.role, r.node_rank): {f.key: f.value for f in r.flags} for r in entry.roles}


def _unbacked(entry: VerdictEntry) -> Unbacked:
    """Per role, the keys whose value no in-scope evidence point sets (empty provenance)."""
    return {
        (r.role, r.node_rank): frozenset(f.key for f in r.flags if not f.evidence)
        for r in entry.roles
    }


def _selected(key: SelectionKey) -> frozenset[str]:
    """The features a combination selected (see :func:`_keys`)."""
    features = key[6]
    return frozenset(str(f) for f in features) if isinstance(features, tuple) else frozenset()


def outcomes(report: AuditReport, reachable: Reachable | None = None) -> Outcomes:
    """Each combination of ``report`` with its verdict and distance to the nearest point
    (None without one, or, given ``reachable``, when the recipe cannot render it)."""
    found: Outcomes = {}
    for entry in report.verdicts:
        outcome = _outcome(entry, reachable)
        for selections in entry.selections:
            for key in _keys(selections):
                found[key] = outcome
    return found


class CellCount(BaseModel):
    """How many combinations of one variant × hardware × strategy changed one way."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    variant: str
    hardware: str
    strategy: str
    combinations: int


class Proof(BaseModel):
    """What an edit does to every combination of the recipe (audited, not estimated)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    combinations: int
    recommended_before: int
    recommended_after: int
    gained: int
    lost: int
    worse: int
    better: int
    gained_cells: tuple[CellCount, ...] = ()
    #: every combination the edit makes worse or loses, by cell
    costs: tuple[CellCount, ...] = ()
    #: reason code -> combinations, before and after (the whole recipe)
    reasons_before: dict[str, int] = {}
    reasons_after: dict[str, int] = {}
    #: what the edit takes from combinations that did not ask for it (:mod:`.cost`),
    #: measured combination by combination; empty: the edit costs nothing
    cost: tuple[EditCost, ...] = ()
    #: flags the edit drops from combinations that only inherited them and for which no
    #: in-scope evidence sets them: scoping, measured like a cost but none (:mod:`.cost`)
    scoped: tuple[ScopedFlag, ...] = ()
    #: the evidence records that back the combinations the edit makes recommended
    backed_by: tuple[str, ...] = ()

    @property
    def clean(self) -> bool:
        """No combination loses its recommendation or moves away from the evidence."""
        return self.lost == 0 and self.worse == 0

    @property
    def free(self) -> bool:
        """Clean, and takes nothing from any combination (no :attr:`cost`)."""
        return self.clean and not self.cost


def _cells(counter: Counter[tuple[str, str, str]]) -> tuple[CellCount, ...]:
    return tuple(
        CellCount(variant=v, hardware=h, strategy=s, combinations=n)
        for (v, h, s), n in sorted(counter.items())
    )


class Prover:
    """Audits edited copies of one recipe against the evidence of its original audit."""

    def __init__(
        self,
        recipes_root: Path,
        recipe_file: Path,
        ledger: Path,
        evidence: Path,
        filters: AuditFilters,
        shared: EvidenceCache,
        baseline: AuditReport,
        reachable: Reachable | None = None,
        choices: RecipeChoices | None = None,
    ) -> None:
        self.recipes_root = recipes_root
        self.relative = recipe_file.resolve().relative_to(recipes_root.resolve())
        self.ledger = ledger
        self.evidence = evidence
        self.filters = filters
        self.shared = shared
        self.baseline = baseline
        self.reachable = reachable
        self.choices = choices
        self.before = outcomes(baseline, reachable)
        self._flags: dict[int, RoleMap] = {}
        self._workdir = tempfile.TemporaryDirectory(prefix="provenance-suggest-")
        self.root = Path(self._workdir.name) / "recipes"
        self._copy_root()

    def close(self) -> None:
        self._workdir.cleanup()

    def __enter__(self) -> Prover:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _copy_root(self) -> None:
        self.root.mkdir(parents=True)
        shutil.copyfile(self.recipes_root / "taxonomy.yaml", self.root / "taxonomy.yaml")
        for name in POLICY_FILES:  # the copy is audited under the root's own policy
            if (self.recipes_root / name).is_file():
                shutil.copyfile(self.recipes_root / name, self.root / name)
        for folder in ("strategies", "kv_store"):
            source = self.recipes_root / folder
            if source.is_dir():
                shutil.copytree(source, self.root / folder, symlinks=False)

    def audit(self, text: str, variants: set[str] | None) -> AuditReport:
        """Audit the recipe with ``text`` as its file (for ``variants`` only, if given)."""
        target = self.root / self.relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
        filters = self.filters
        if variants is not None:
            wanted = tuple(sorted(variants))
            if filters.variants is not None:
                wanted = tuple(v for v in wanted if v in filters.variants)
            filters = filters.model_copy(update={"variants": wanted or filters.variants})
        return run_audit(
            AuditInputs(
                recipes=(str(self.relative),),
                recipes_root=self.root,
                ledger=self.ledger,
                evidence=self.evidence,
            ),
            filters,
            shared=self.shared,
        )

    def prove(self, text: str, variants: set[str] | None) -> tuple[Proof, AuditReport]:
        """Audit ``text`` and compare it with the original, combination by combination."""
        report = self.audit(text, variants)
        after = outcomes(report, self.reachable)
        gained: Counter[tuple[str, str, str]] = Counter()
        costs: Counter[tuple[str, str, str]] = Counter()
        counts = Counter[str]()
        paid: Counter[CostKey] = Counter()
        backed: dict[str, None] = {}
        memo: dict[tuple[object, ...], set[CostKey]] = {}
        after_flags: dict[int, RoleMap] = {}
        for key, new in after.items():
            old = self.before.get(key)
            if old is None:
                continue
            if self.choices is not None and old.entry is not None and new.entry is not None:
                selected = _selected(key)
                # the cell and its feature picks decide which recipe place writes a flag
                at = (id(old.entry), id(new.entry), *key[:3], *key[6:8])
                found = memo.get(at)
                if found is None:
                    found = memo[at] = self.choices.classify(
                        self._entry_flags(old.entry, self._flags),
                        self._entry_flags(new.entry, after_flags),
                        selected,
                        key,
                        _unbacked(old.entry),
                    )
                paid.update(found)
            cell = (str(key[0]), str(key[1]), str(key[2]))
            if new.recommended and not old.recommended:
                gained[cell] += 1
                counts["gained"] += 1
                if new.entry is not None:
                    backed.update(dict.fromkeys(ref.record for ref in new.entry.evidence))
            elif old.recommended and not new.recommended:
                costs[cell] += 1
                counts["lost"] += 1
            elif not new.recommended and old.distance is not None and new.distance is not None:
                if new.distance > old.distance:
                    costs[cell] += 1
                    counts["worse"] += 1
                elif new.distance < old.distance:
                    counts["better"] += 1
        recommended_before = sum(1 for o in self.before.values() if o.recommended)
        recommended_after = recommended_before + counts["gained"] - counts["lost"]
        reasons_after = dict(self.baseline.summary.by_reason)
        if variants is not None:
            reasons_after = self._merged_reasons(report, variants)
        else:
            reasons_after = dict(report.summary.by_reason)
        proof = Proof(
            combinations=len(self.before),
            recommended_before=recommended_before,
            recommended_after=recommended_after,
            gained=counts["gained"],
            lost=counts["lost"],
            worse=counts["worse"],
            better=counts["better"],
            gained_cells=_cells(gained),
            costs=_cells(costs),
            reasons_before=dict(self.baseline.summary.by_reason),
            reasons_after=reasons_after,
            cost=costs_of(paid),
            scoped=scoped_of(paid),
            backed_by=tuple(backed),
        )
        return proof, report

    @staticmethod
    def _entry_flags(entry: VerdictEntry, memo: dict[int, RoleMap]) -> RoleMap:
        found = memo.get(id(entry))
        if found is None:
            found = memo[id(entry)] = _role_map(entry)
        return found

    def _merged_reasons(self, report: AuditReport, variants: set[str]) -> dict[str, int]:
        """The whole recipe's reason counts: the baseline's for untouched variants, the
        edited audit's for the others."""
        merged: Counter[str] = Counter()
        for source, keep in ((self.baseline, False), (report, True)):
            for entry in source.verdicts:
                if entry.verdict is VerdictKind.RECOMMENDED:
                    continue
                count = sum(s.count for s in entry.selections if (s.variant in variants) == keep)
                for code in dict.fromkeys(str(r.code) for r in entry.reasons):
                    merged[code] += count
        return {code: n for code, n in sorted(merged.items()) if n}
