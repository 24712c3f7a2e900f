"""What a pull request changes in the exposed combinations (base audit vs head audit).

Pure functions over two :class:`~provenance.audit.verdicts.AuditReport` objects:

* per combination: newly exposed, removed, verdict changed, major flags added /
  changed / removed per role;
* the *flag lens*: for every major ``key=value`` the PR adds or changes in a recipe
  (in a combination of both sides, or in a new one of a recipe the PR touches when no
  base combination of the recipe sets it), every head combination of that recipe in
  which it now appears, each with its evidence or its absence — a flag added to a
  variant applies on every hardware that variant runs on, which is where unverified
  cross-products hide;
* the *gate* (``docs/audit.md``, "The PR gate"): it blocks what the PR makes worse
  or newly claims, each blocking group with its category —
  ``regressed-verdict`` (recommended in the base, guide-only in the head),
  ``new-unevidenced-flag`` (a major flag or value newly present in a cell that has
  in-scope evidence, where no in-scope evidence sets it; not one unevidenced value
  replacing another), ``new-claim`` (a ``verified`` claim of the head that no
  recommended combination backs, that the base did not make, inside InferenceX's
  coverage) and ``new-guide-only`` (a newly exposed guide-only combination carrying
  such a flag where in-scope evidence exists); and every recipe the PR touches that
  is invalid in the head (the site would refuse it: ``errors``). Changes in cells
  with no in-scope evidence on either side are reported as *unbenchmarked*, changes in
  ``unreachable`` cells and claims outside InferenceX's coverage are reported too; none
  of them blocks, nor does anything a declaration covers.

A combination's change depends only on the verdict entry holding it in the base
and the one holding it in the head: kind, flag changes, verdicts, reasons and
gate decision are the same for every combination of such a pair. So the diff
pairs entries, not selections: each selection is keyed by a tuple of small
integers (shape, feature choice, pool pair), a head :class:`SelectionSet` whose
selections all sit in one base entry is taken whole, and each changed pair
becomes one :class:`ChangeGroup` listing its combinations as selection sets
(``ChangeGroup.iter_changes`` gives them back one :class:`CombinationChange`
each). ``tests/review/test_diff_equivalence.py`` proves the result equal to the
selection-by-selection diff on the whole MiniMax-M3 cross-product.

Why one module (about 840 lines): one concept, the comparison of two audits. The
entry keys, the pairing of base and head entries, the gate's decision on each pair
and the flag lens share private types, and the equivalence test proves them as a
whole against the selection-by-selection oracle.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SerializerFunctionWrapHandler, model_serializer

from provenance.audit.verdicts import (
    AuditReport,
    Claim,
    EvidenceRef,
    FeatureChoice,
    NearestEvidence,
    PdPools,
    Reason,
    RecipeError,
    RoleFlags,
    SelectionSet,
    VerdictEntry,
)
from provenance.model.combination import PdPool, Selection
from provenance.model.ledger import LedgerIdentity
from provenance.model.reasons import ReasonCode, VerdictKind
from provenance.model.recipes_source import RecipesSource
from provenance.review.revisions import JudgingChange
from provenance.review.tuning import TuningChange

DIFF_SCHEMA: Literal["provenance.diff/v3"] = "provenance.diff/v3"

ChangeKind = Literal["new", "removed", "verdict-changed", "flags-changed"]
BlockReason = Literal["regressed-verdict", "new-unevidenced-flag", "new-guide-only"]

#: role -> flag key -> value
RoleFlagMap = dict[str, dict[str, str]]


class FlagChanges(BaseModel):
    """Major-flag changes of one combination, per role."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    added: RoleFlagMap = Field(default_factory=dict)
    changed: dict[str, dict[str, tuple[str, str]]] = Field(default_factory=dict)
    removed: RoleFlagMap = Field(default_factory=dict)

    @property
    def empty(self) -> bool:
        return not (self.added or self.changed or self.removed)


class _Change(BaseModel):
    """How combinations changed (the fields a change group shares with each combination)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    recipe: str
    kind: ChangeKind
    base_verdict: VerdictKind | None = None
    head_verdict: VerdictKind | None = None
    flags: FlagChanges = Field(default_factory=FlagChanges)
    reasons: tuple[Reason, ...] = ()
    nearest: tuple[NearestEvidence, ...] = ()
    declared_by: str | None = None
    blocking: bool = False
    #: Why the gate blocks it (its category): ``regressed-verdict``,
    #: ``new-unevidenced-flag`` or ``new-guide-only``.
    block_reason: BlockReason | None = None
    #: Guide-only in the head with no in-scope evidence in the base or the head: the
    #: change is reported, not blocked (nobody benchmarked the cell).
    unbenchmarked: bool = False


class CombinationChange(_Change):
    """How one combination changed (one selection of a :class:`ChangeGroup`)."""

    selection: Selection


class ChangeGroup(_Change):
    """Combinations of one recipe that changed the same way (``combinations`` of them,
    listed as ``selections`` cross-products): same kind, verdicts, flag changes,
    reasons, nearest evidence, declaration and gate decision."""

    combinations: int
    selections: tuple[SelectionSet, ...]

    @model_serializer(mode="wrap")
    def _written_order(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """The fields in the order ``provenance.diff/v3`` writes them, which is not the
        order of their declaration: the group's size first, then (for a removed group) the
        head side before the flags, or (otherwise) the gate decision before the head side."""
        data: dict[str, Any] = handler(self)
        order = _REMOVED_ORDER if self.kind == "removed" else _CHANGED_ORDER
        return {name: data[name] for name in order if name in data}

    def iter_selections(self) -> Iterator[Selection]:
        for selection_set in self.selections:
            yield from selection_set.selections()

    def iter_changes(self) -> Iterator[CombinationChange]:
        """The group one combination at a time."""
        shared = {name: getattr(self, name) for name in _Change.model_fields}
        for selection in self.iter_selections():
            yield CombinationChange(**shared, selection=selection)


_GROUP_HEAD = ("recipe", "combinations", "selections", "kind", "base_verdict")
_HEAD_SIDE = ("head_verdict", "reasons", "nearest", "declared_by")
_GATE = ("blocking", "block_reason", "unbenchmarked")
_REMOVED_ORDER = (
    *_GROUP_HEAD,
    "head_verdict",
    "flags",
    "reasons",
    "nearest",
    "declared_by",
    *_GATE,
)
_CHANGED_ORDER = (*_GROUP_HEAD, "flags", *_GATE, *_HEAD_SIDE)


class LensRole(BaseModel):
    """A role in which the lens flag appears, with the evidence for it there (none: absent)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    role: str
    evidence: tuple[EvidenceRef, ...] = ()


class LensOccurrence(BaseModel):
    """Head combinations (``combinations`` of them, listed as ``selections``) with one
    verdict entry, and the roles in which a lens flag appears in each of them."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    recipe: str
    verdict: VerdictKind
    combinations: int
    selections: tuple[SelectionSet, ...]
    roles: tuple[LensRole, ...]

    def iter_selections(self) -> Iterator[Selection]:
        for selection_set in self.selections:
            yield from selection_set.selections()


class LensEntry(BaseModel):
    """One major ``key=value`` the PR adds or changes, and everywhere it now appears.

    ``evidenced`` and ``unevidenced`` count (combination, role) pairs.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    key: str
    value: str
    evidenced: int
    unevidenced: int
    occurrences: tuple[LensOccurrence, ...]


class GateResult(BaseModel):
    """The gate's decision; counts are combinations, ``claims`` new unbacked claims."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    passed: bool
    blocking: int
    declared: int
    #: new unbacked claims inside InferenceX's coverage, undeclared: they block
    claims: int = 0
    #: new unbacked claims the gate reports without blocking: outside InferenceX's
    #: coverage (no evidence can exist) or acknowledged by a declaration
    claims_reported: int = 0
    #: changed guide-only combinations with no in-scope evidence on either side
    unbenchmarked: int = 0
    #: recipes invalid in the head (``DiffReport.errors``); left out of the JSON when 0
    invalid: int = Field(default=0, exclude_if=lambda invalid: not invalid)


class DiffSummary(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    base_combinations: int
    head_combinations: int
    new: int
    removed: int
    verdict_changed: int
    flags_changed: int


class DiffReport(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)

    schema_: Literal["provenance.diff/v3"] = Field(default=DIFF_SCHEMA, alias="schema")
    base: str
    head: str
    recipes: tuple[str, ...]
    summary: DiffSummary
    changes: tuple[ChangeGroup, ...]
    lens: tuple[LensEntry, ...]
    #: ``verified`` claims of the head no recommended combination backs, new in this PR,
    #: inside InferenceX's coverage and undeclared: each blocks the gate
    claims: tuple[Claim, ...] = ()
    #: the other new unbacked claims: outside InferenceX's coverage, or declared (reported)
    claims_reported: tuple[Claim, ...] = ()
    gate: GateResult
    #: the ledger both sides were audited against (set by the PR audit)
    ledger_source: LedgerIdentity | None = None
    #: the recipes repository (``--repo``) and the head commit it was read at (set by the
    #: PR audit)
    recipes_source: RecipesSource | None = None
    #: recipes of the head whose model the ledger holds no InferenceX evidence for on
    #: any audited hardware (set by the PR audit): every combination is ``no-evidence``
    no_evidence: tuple[str, ...] = ()
    #: tuning, harness and functional flags the PR changes, by flag (set by the PR audit:
    #: the verdict entries carry major flags only, see ``review/tuning.py``)
    tuning: tuple[TuningChange, ...] = ()
    #: recipes invalid in the head, named ``<head>:<path>``: not audited there (their base
    #: combinations are ``removed``), and each blocks the gate; absent when none
    errors: tuple[RecipeError, ...] = Field(default=(), exclude_if=lambda errors: not errors)
    #: recipes invalid in the base, named ``<base>:<path>``: a notice (the PR fixes them
    #: when they are not in ``errors`` too); their head combinations are all ``new``
    base_errors: tuple[RecipeError, ...] = Field(default=(), exclude_if=lambda errors: not errors)
    #: recipes invalid in both base and head that the PR does not touch, named
    #: ``<head>:<path>``: a notice, not this PR's doing; absent when none
    errors_unchanged: tuple[RecipeError, ...] = Field(
        default=(), exclude_if=lambda errors: not errors
    )
    #: judging files (policy, aliases, context rules, declarations) the PR changes: not
    #: applied to this PR (the base's judge it); a maintainer reviews them
    judging_changes: tuple[JudgingChange, ...] = Field(
        default=(), exclude_if=lambda changes: not changes
    )
    #: when a shared-file change could affect only some hardware profiles or strategies,
    #: how the recipes the PR does not touch were narrowed to them (set by the PR audit);
    #: the combination totals count what was audited
    audit_scope: str | None = Field(default=None, exclude_if=lambda scope: scope is None)

    def iter_changes(self) -> Iterator[CombinationChange]:
        """Every changed combination, one at a time."""
        for group in self.changes:
            yield from group.iter_changes()


def _role_flags(roles: tuple[RoleFlags, ...]) -> RoleFlagMap:
    """Major flags per role; a role rendered on several nodes counts once (rank 0 first)."""
    out: RoleFlagMap = {}
    for role in sorted(roles, key=lambda r: (r.role, r.node_rank or 0)):
        out.setdefault(role.role, {f.key: f.value for f in role.flags})
    return out


def _unevidenced(roles: tuple[RoleFlags, ...]) -> set[tuple[str, str, str]]:
    return {(r.role, f.key, f.value) for r in roles for f in r.flags if not f.evidence}


def has_in_scope_evidence(entry: VerdictEntry) -> bool:
    """Does any in-scope evidence point exist for the entry's combinations? (Recommended;
    or a reason other than ``no-evidence``, which only in-scope evidence can give; or a
    flag some in-scope record sets.)"""
    if entry.verdict is VerdictKind.RECOMMENDED:
        return True
    if any(r.code is not ReasonCode.NO_EVIDENCE for r in entry.reasons):
        return True
    return any(f.evidence for role in entry.roles for f in role.flags)


def unreachable(entry: VerdictEntry) -> bool:
    """Is the entry ``unreachable``: its evidence exists only in shapes the recipe schema
    cannot express, so no recipe edit reaches it (its flag reasons are secondary)?"""
    return any(r.code is ReasonCode.UNREACHABLE for r in entry.reasons)


def _carried(before: VerdictEntry) -> set[tuple[str, str, str]]:
    """Flags the base already carried (evidenced or not): not new to this PR."""
    return {(r.role, f.key, f.value) for r in before.roles for f in r.flags}


def _flag_changes(base: RoleFlagMap, head: RoleFlagMap) -> FlagChanges:
    added: RoleFlagMap = {}
    changed: dict[str, dict[str, tuple[str, str]]] = {}
    removed: RoleFlagMap = {}
    for role in sorted(set(base) | set(head)):
        old, new = base.get(role, {}), head.get(role, {})
        plus = {k: v for k, v in new.items() if k not in old}
        minus = {k: v for k, v in old.items() if k not in new}
        moved = {k: (old[k], v) for k, v in new.items() if k in old and old[k] != v}
        if plus:
            added[role] = plus
        if minus:
            removed[role] = minus
        if moved:
            changed[role] = moved
    return FlagChanges(added=added, changed=changed, removed=removed)


#: A selection as (shape id, feature-choice id, pool-pair id); pool-pair 0 = no PD.
_Key = tuple[int, int, int]
_PoolKey = tuple[int, str, int, str]
#: A selection set as (shape id, feature-choice ids, pool-pair ids).
_SetKey = tuple[int, tuple[int, ...], tuple[int, ...]]


def _expand(set_key: _SetKey) -> list[_Key]:
    """The keys of the set's selections, in ``SelectionSet.selections`` order."""
    shape, choices, pools = set_key
    return [(shape, c, p) for c in choices for p in pools]


class _Keys:
    """Interns the parts of selections of both sides, so that a selection's key is three
    small integers (cheap to build, hash and compare) and a key can be turned back into
    a :class:`SelectionSet`. Equal keys mean equal selections (``Selection.__eq__``)."""

    def __init__(self) -> None:
        self._shape_ids: dict[tuple[object, ...], int] = {}
        self.shapes: list[tuple[str, dict[str, Any]]] = []
        self._choice_ids: dict[tuple[object, ...], int] = {}
        self.choices: list[FeatureChoice] = []
        self._pool_ids: dict[_PoolKey, int] = {}
        #: pool-pair id (from 1) -> (prefill pool, decode pool)
        self.pools: dict[int, tuple[PdPool, PdPool]] = {}
        self._by_object: dict[int, tuple[object, tuple[int, ...]]] = {}

    def set_key(self, recipe: str, selections: SelectionSet) -> _SetKey:
        """(shape, feature choices, pool pairs) of a set: equal keys, equal sets."""
        shape = self._shape(recipe, selections)
        features = selections.features
        known = self._by_object.get(id(features))  # audits share one tuple per pick list
        if known is not None and known[0] is features:
            choices = known[1]
        else:
            choices = tuple([self._choice(c) for c in features])
            self._by_object[id(features)] = (features, choices)
        pools = self._pools(selections.pd) if selections.pd is not None else (0,)
        return (shape, choices, pools)

    def _shape(self, recipe: str, s: SelectionSet) -> int:
        key = (
            recipe,
            s.variant,
            s.hardware,
            s.strategy,
            s.node_count,
            s.kv_offload,
            s.kv_instances,
            s.omni_task,
        )
        found = self._shape_ids.get(key)
        if found is None:
            found = self._shape_ids[key] = len(self.shapes)
            fields = {
                "variant": s.variant,
                "hardware": s.hardware,
                "strategy": s.strategy,
                "node_count": s.node_count,
                "kv_offload": s.kv_offload,
                "kv_instances": s.kv_instances,
                "omni_task": s.omni_task,
            }
            self.shapes.append((recipe, fields))
        return found

    def _choice(self, choice: FeatureChoice) -> int:
        # The factored audit shares FeatureChoice objects: look them up by identity first
        # (the object is kept alive here, so its id cannot be reused).
        known = self._by_object.get(id(choice))
        if known is not None and known[0] is choice:
            return known[1][0]
        key = (choice.features, tuple(sorted(choice.feature_modes.items())))
        found = self._choice_ids.get(key)
        if found is None:
            found = self._choice_ids[key] = len(self.choices)
            self.choices.append(choice)
        self._by_object[id(choice)] = (choice, (found,))
        return found

    def _pools(self, pd: PdPools) -> tuple[int, ...]:
        known = self._by_object.get(id(pd))
        if known is not None and known[0] is pd:
            return known[1]
        ids = []
        for prefill in pd.prefill:
            for decode in pd.decode:
                key = (prefill.nodes, prefill.parallelism, decode.nodes, decode.parallelism)
                found = self._pool_ids.get(key)
                if found is None:
                    found = self._pool_ids[key] = len(self.pools) + 1
                    self.pools[found] = (prefill, decode)
                ids.append(found)
        found_ids = tuple(ids)
        self._by_object[id(pd)] = (pd, found_ids)
        return found_ids

    def sets(self, keys: Sequence[_Key]) -> list[SelectionSet]:
        """``keys`` (distinct) as few selection sets: per shape, the feature choices with
        the same pool pairs share one set, whose pools are one product when they form one."""
        by_shape: dict[int, dict[int, list[int]]] = {}
        for shape, choice, pool in keys:
            by_shape.setdefault(shape, {}).setdefault(choice, []).append(pool)
        out: list[SelectionSet] = []
        for shape, choices in by_shape.items():
            by_pools: dict[tuple[int, ...], list[int]] = {}
            for choice, pool_list in choices.items():
                by_pools.setdefault(tuple(pool_list), []).append(choice)
            for pools, choice_ids in by_pools.items():
                features = tuple(self.choices[c] for c in choice_ids)
                for pd in self._pd_blocks(pools):
                    out.append(self._set(shape, features, pd))
        return out

    def _pd_blocks(self, pools: tuple[int, ...]) -> list[PdPools | None]:
        if pools == (0,):
            return [None]
        pairs = [self.pools[p] for p in pools]
        prefill = {(p.nodes, p.parallelism): p for p, _ in pairs}
        decode = {(d.nodes, d.parallelism): d for _, d in pairs}
        if len(prefill) * len(decode) == len(pairs):  # distinct pairs: the whole product
            return [PdPools(tuple(prefill.values()), tuple(decode.values()))]
        return [PdPools((p,), (d,)) for p, d in pairs]

    def _set(
        self, shape: int, features: tuple[FeatureChoice, ...], pd: PdPools | None
    ) -> SelectionSet:
        fields = self.shapes[shape][1]
        return SelectionSet(**fields, features=features, pd=pd)


@dataclass
class _Pair:
    """The combinations held by one base entry (``None``: new) and one head entry
    (``None``: removed), and how they changed."""

    change: dict[str, Any]
    recipe: str
    sets: list[SelectionSet] = field(default_factory=list)
    loose: list[_Key] = field(default_factory=list)
    count: int = 0


class _Differ:
    def __init__(
        self,
        base: Sequence[VerdictEntry],
        head: Sequence[VerdictEntry],
        base_as_head: Mapping[str, Collection[str]] | None = None,
    ) -> None:
        self.base = base
        self.head = head
        self.base_as_head = base_as_head or {}
        self.keys = _Keys()
        self.pairs: dict[tuple[int | None, int | None], _Pair | None] = {}
        #: recipe -> the major ``key=value`` the PR adds to or changes in its combinations
        self.lens_keys: dict[str, set[tuple[str, str]]] = {}
        #: recipe -> the major ``key=value`` of its new combinations: lens keys only where
        #: no base combination sets them (:meth:`lens`)
        self.new_combination_keys: dict[str, set[tuple[str, str]]] = {}
        # Entries of an audit share their RoleFlags objects (one per judged role): the
        # memos below are keyed by the identities of an entry's roles (all kept alive by
        # the reports being compared).
        self._flags: dict[tuple[int, ...], RoleFlagMap] = {}
        self._changes: dict[tuple[tuple[int, ...], tuple[int, ...]], FlagChanges] = {}
        self._new_flags: dict[tuple[int, ...], bool] = {}
        self._triples: dict[
            tuple[int, bool], tuple[RoleFlags, frozenset[tuple[str, str, str]]]
        ] = {}

    def flags(self, side: bool, index: int) -> RoleFlagMap:
        roles = (self.head if side else self.base)[index].roles
        key = tuple(map(id, roles))
        found = self._flags.get(key)
        if found is None:
            found = self._flags[key] = _role_flags(roles)
        return found

    def flag_changes(self, before: int, after: int) -> FlagChanges:
        key = (tuple(map(id, self.base[before].roles)), tuple(map(id, self.head[after].roles)))
        found = self._changes.get(key)
        if found is None:
            found = _flag_changes(self.flags(False, before), self.flags(True, after))
            self._changes[key] = found
        return found

    def new_unevidenced(self, old: VerdictEntry | None, entry: VerdictEntry) -> bool:
        """Does ``entry`` carry an unevidenced major flag or value that makes it worse than
        ``old`` (``None``: a new combination)? A flag ``old`` already carried is not new,
        and neither is a value that replaces another unevidenced value of the same flag
        in the same role (one unbacked value for another: reported, not blocked).
        From per-role memos."""
        old_roles = old.roles if old is not None else ()
        key = (*map(id, old_roles), -1, *map(id, entry.roles))
        found = self._new_flags.get(key)
        if found is None:
            carried = [self._role_triples(r, False) for r in old_roles]
            unbacked_before = {
                (role, flag_key)
                for r in old_roles
                for role, flag_key, _ in self._role_triples(r, True)
            }
            found = self._new_flags[key] = any(
                not any(triple in flags for flags in carried)
                and (triple[0], triple[1]) not in unbacked_before
                for role in entry.roles
                for triple in self._role_triples(role, True)
            )
        return found

    def _role_triples(self, role: RoleFlags, unevidenced: bool) -> frozenset[tuple[str, str, str]]:
        """(role, key, value) of the role's flags (only those without evidence if asked)."""
        memo = self._triples.get((id(role), unevidenced))
        if memo is not None and memo[0] is role:
            return memo[1]
        triples = frozenset(
            (role.role, f.key, f.value) for f in role.flags if not (unevidenced and f.evidence)
        )
        self._triples[(id(role), unevidenced)] = (role, triples)
        return triples

    def pair(self, before: int | None, after: int | None) -> _Pair | None:
        """The pair of these entries, or None when its combinations did not change."""
        key = (before, after)
        if key in self.pairs:
            return self.pairs[key]
        change = self._change(before, after)
        found = None
        if change is not None:
            recipe = (self.head[after] if after is not None else self.base[before or 0]).recipe
            found = _Pair(change=change, recipe=recipe)
        self.pairs[key] = found
        return found

    def _change(self, before: int | None, after: int | None) -> dict[str, Any] | None:
        if after is None:
            assert before is not None
            old = self.base[before]
            return {
                "kind": "removed",
                "base_verdict": old.verdict,
                "head_verdict": None,
                "flags": FlagChanges(removed=self.flags(False, before)),
                "reasons": (),
                "nearest": (),
                "declared_by": None,
                "blocking": False,
                "block_reason": None,
                "unbenchmarked": False,
            }
        entry = self.head[after]
        if before is not None:
            old = self.base[before]
            if old.roles is entry.roles and old.verdict is entry.verdict:
                return None  # one outcome of a judge shared by both audits: nothing changed
        head_flags = self.flags(True, after)
        guide_only = entry.verdict is VerdictKind.GUIDE_ONLY
        shared = {
            "head_verdict": entry.verdict,
            "reasons": entry.reasons,
            "nearest": entry.nearest,
            "declared_by": entry.declared_by,
        }
        if before is None:
            held = self.new_combination_keys.setdefault(entry.recipe, set())
            for role_flags in head_flags.values():
                held.update(role_flags.items())
            undeclared = guide_only and entry.declared_by is None
            evidenced = undeclared and has_in_scope_evidence(entry)
            blocking = evidenced and not unreachable(entry) and self.new_unevidenced(None, entry)
            return {
                "kind": "new",
                "base_verdict": None,
                "flags": FlagChanges(added=head_flags),
                "blocking": blocking,
                "block_reason": "new-guide-only" if blocking else None,
                "unbenchmarked": undeclared and not evidenced,
                **shared,
            }
        old = self.base[before]
        flags = self.flag_changes(before, after)
        if flags.added or flags.changed:
            keys = self.lens_keys.setdefault(entry.recipe, set())
            for role_flags in flags.added.values():
                keys.update(role_flags.items())
            for role_changes in flags.changed.values():
                keys.update((k, new) for k, (_old, new) in role_changes.items())
        verdict_changed = old.verdict is not entry.verdict
        if not verdict_changed and flags.empty:
            return None
        block_reason: BlockReason | None = None
        unbenchmarked = False
        if guide_only and entry.declared_by is None:
            if old.verdict is VerdictKind.RECOMMENDED:
                block_reason = "regressed-verdict"
            elif not (has_in_scope_evidence(old) or has_in_scope_evidence(entry)):
                unbenchmarked = True
            elif not unreachable(entry) and self.new_unevidenced(old, entry):
                block_reason = "new-unevidenced-flag"
        return {
            "kind": "verdict-changed" if verdict_changed else "flags-changed",
            "base_verdict": old.verdict,
            "flags": flags,
            "blocking": block_reason is not None,
            "block_reason": block_reason,
            "unbenchmarked": unbenchmarked,
            **shared,
        }

    def lens(self, touched: Collection[str] | None = None) -> dict[str, set[tuple[str, str]]]:
        """Per recipe, the ``key=value`` pairs of its flag lens: those the PR adds to or
        changes in its combinations of both sides, and, for a ``touched`` recipe (None:
        all), those of its new combinations that none of its base combinations sets. A
        recipe the PR does not touch gains no flag: its new combinations come from a shared
        file (a hardware profile added), and their own gate decisions say what they are."""
        fresh = {
            recipe: keys - self.lens_keys.get(recipe, set())
            for recipe, keys in self.new_combination_keys.items()
            if touched is None or recipe in touched
        }
        found = {recipe: set(keys) for recipe, keys in self.lens_keys.items()}
        if not any(fresh.values()):
            return found
        # the base's entries, and the head's of the variants the base stands for
        # (``base_as_head``: the same in both)
        as_base = [e for e in self.base if e.combinations and e.recipe in fresh]
        as_base += [
            e
            for e in self.head
            if any(s.variant in self.base_as_head.get(e.recipe, ()) for s in e.selections)
        ]
        in_base: dict[str, set[tuple[str, str]]] = {}
        for e in as_base:
            held = in_base.setdefault(e.recipe, set())
            held.update((flag.key, flag.value) for r in e.roles for flag in r.flags)
        for recipe, keys in fresh.items():
            added = keys - in_base.get(recipe, set())
            if added:
                found.setdefault(recipe, set()).update(added)
        return found

    def run(self) -> tuple[list[ChangeGroup], int, int]:
        """The change groups, and the number of base and head combinations.

        A head selection set equal to a base one (same shape, feature choices and
        pools: the usual case, both audits cut a shape the same way) is paired whole;
        only the other sets are compared selection by selection. Each selection is in
        one set per side, so a selection of an unmatched head set can only be in an
        unmatched base set.
        """
        keys = self.keys
        base_sets: list[tuple[int, SelectionSet, _SetKey]] = []
        base_by_key: dict[_SetKey, int] = {}
        base_count = head_count = 0
        for index, entry in enumerate(self.base):
            left_out = self.base_as_head.get(entry.recipe, ())
            for selection_set in entry.selections:
                if selection_set.variant in left_out:
                    continue  # the head's stand for them (counted there)
                set_key = keys.set_key(entry.recipe, selection_set)
                base_count += len(set_key[1]) * len(set_key[2])
                base_by_key[set_key] = len(base_sets)
                base_sets.append((index, selection_set, set_key))
        matched = [False] * len(base_sets)
        rest: list[tuple[int, SelectionSet, _SetKey]] = []
        for index, entry in enumerate(self.head):
            as_head = self.base_as_head.get(entry.recipe, ())
            for selection_set in entry.selections:
                if selection_set.variant in as_head:  # the same in the base: unchanged
                    count = selection_set.count
                    head_count += count
                    base_count += count
                    continue
                set_key = keys.set_key(entry.recipe, selection_set)
                count = len(set_key[1]) * len(set_key[2])
                head_count += count
                position = base_by_key.get(set_key)
                if position is not None and not matched[position]:
                    matched[position] = True
                    self._take(base_sets[position][0], index, selection_set, count)
                else:
                    rest.append((index, selection_set, set_key))
        base_where: dict[_Key, int] = {}
        for position, (index, _, set_key) in enumerate(base_sets):
            if not matched[position]:
                base_where.update(dict.fromkeys(_expand(set_key), index))
        head_where: set[_Key] = set()
        lookup = base_where.get
        for index, selection_set, set_key in rest:
            selection_keys = _expand(set_key)
            if not selection_keys:
                continue
            head_where.update(selection_keys)
            befores = [lookup(k) for k in selection_keys]
            if befores.count(befores[0]) == len(befores):
                self._take(befores[0], index, selection_set, len(selection_keys))
            else:
                for key, before in zip(selection_keys, befores, strict=True):
                    self._take_one(before, index, key)
        for position, (index, selection_set, set_key) in enumerate(base_sets):
            if matched[position]:
                continue
            selection_keys = _expand(set_key)
            gone = [k for k in selection_keys if k not in head_where]
            if not gone:
                continue
            if len(gone) == len(selection_keys):
                self._take(index, None, selection_set, len(selection_keys))
            else:
                for key in gone:
                    self._take_one(index, None, key)
        groups = [self._group(pair) for pair in self.pairs.values() if pair is not None]
        return groups, base_count, head_count

    def _take(
        self, before: int | None, after: int | None, selections: SelectionSet, count: int
    ) -> None:
        pair = self.pair(before, after)
        if pair is not None and count:
            pair.sets.append(selections)
            pair.count += count

    def _take_one(self, before: int | None, after: int | None, key: _Key) -> None:
        pair = self.pair(before, after)
        if pair is not None:
            pair.loose.append(key)
            pair.count += 1

    def _group(self, pair: _Pair) -> ChangeGroup:
        sets = [*pair.sets, *self.keys.sets(pair.loose)]
        return ChangeGroup(
            recipe=pair.recipe, combinations=pair.count, selections=tuple(sets), **pair.change
        )


def diff_reports(
    base: AuditReport | None,
    head: AuditReport | None,
    *,
    base_label: str,
    head_label: str,
    base_as_head: Mapping[str, Collection[str]] | None = None,
    untouched_invalid: Collection[str] = frozenset(),
    touched: Collection[str] | None = None,
) -> DiffReport:
    """Compare two audits of the same recipes; ``base`` None means the recipes are new.

    ``touched``: the recipes whose file the PR changes (None: every recipe audited); only
    their new combinations add flags to the lens (:meth:`_Differ.lens`).

    ``untouched_invalid``: repository paths of recipes invalid in the base that the PR
    does not touch; still invalid in the head, they are a notice (``errors_unchanged``),
    not a block.

    A recipe one side could not load (in that report's ``errors``) is missing on that
    side, like a recipe the PR adds or removes; the head's errors block the gate.

    ``base_as_head`` (recipe -> variants) names variants the base audit left out because
    their combinations are known to be the head's (same outcomes, see
    :func:`provenance.review.pr_audit.variant_change`): they count as unchanged, in the
    base and head totals alike, and the base's own (if any) are ignored.
    """
    base_entries: Sequence[VerdictEntry] = base.verdicts if base is not None else ()
    head_entries = head.verdicts if head is not None else ()
    differ = _Differ(base_entries, head_entries, base_as_head)
    groups, base_count, head_count = differ.run()
    fixed = fixed_recipes(base, head, base_label)
    groups = [
        g.model_copy(update={"blocking": False, "block_reason": None})
        if g.recipe in fixed and g.blocking
        else g
        for g in groups
        if g.combinations
    ]
    groups.sort(key=_change_order)
    lens = _lens(head_entries, differ.lens(touched))
    blocked = sum(g.combinations for g in groups if g.blocking)
    unbenchmarked = sum(g.combinations for g in groups if g.unbenchmarked)
    claims: list[Claim] = []
    claims_reported: list[Claim] = []
    for claim in new_claims(base, head, base_as_head):
        blocks = (
            claim.coverage == "in-coverage"
            and claim.declared_by is None
            and claim.recipe not in fixed
        )
        (claims if blocks else claims_reported).append(claim)
    declared = sum(
        g.combinations for g in groups if g.declared_by and g.head_verdict is VerdictKind.GUIDE_ONLY
    )
    counts = {"new": 0, "removed": 0, "verdict-changed": 0, "flags-changed": 0}
    for group in groups:
        counts[group.kind] += group.combinations
    recipes = {e.recipe for e in (*base_entries, *head_entries) if e.combinations}
    errors: list[RecipeError] = []
    unchanged: list[RecipeError] = []
    revision = f"{head_label}:"
    for error in head.errors if head is not None else ():
        untouched = error.path.removeprefix(revision) in untouched_invalid
        (unchanged if untouched else errors).append(error)
    return DiffReport(
        base=base_label,
        head=head_label,
        recipes=tuple(sorted(recipes)),
        summary=DiffSummary(
            base_combinations=base_count,
            head_combinations=head_count,
            new=counts["new"],
            removed=counts["removed"],
            verdict_changed=counts["verdict-changed"],
            flags_changed=counts["flags-changed"],
        ),
        changes=tuple(groups),
        lens=lens,
        claims=tuple(claims),
        claims_reported=tuple(claims_reported),
        gate=GateResult(
            passed=blocked == 0 and not claims and not errors,
            blocking=blocked,
            declared=declared,
            claims=len(claims),
            claims_reported=len(claims_reported),
            unbenchmarked=unbenchmarked,
            invalid=len(errors),
        ),
        errors=tuple(errors),
        errors_unchanged=tuple(unchanged),
        base_errors=tuple(
            e for e in (base.errors if base is not None else ()) if not _same_error(e, unchanged)
        ),
    )


def fixed_recipes(
    base: AuditReport | None, head: AuditReport | None, base_label: str
) -> frozenset[str]:
    """The recipes of the head that did not load in the base (``<base>:<path>`` among the
    base's errors): the PR fixes them. Their head combinations are all ``new`` but were
    there before, broken, so the gate cannot say the PR made them worse: they and their
    claims are reported, not blocked (the PR that broke the recipe was the one to block)."""
    if base is None or head is None or not base.errors:
        return frozenset()
    broken = {error.path for error in base.errors}
    return frozenset(
        recipe for recipe, path in head.recipe_files.items() if f"{base_label}:{path}" in broken
    )


def _same_error(error: RecipeError, unchanged: Sequence[RecipeError]) -> bool:
    """Is ``error`` (the base's) one of ``unchanged`` (the head's, named another revision)?"""
    path = error.path.split(":", 1)[-1]
    return any(u.path.split(":", 1)[-1] == path for u in unchanged)


def new_claims(
    base: AuditReport | None,
    head: AuditReport | None,
    base_as_head: Mapping[str, Collection[str]] | None = None,
) -> tuple[Claim, ...]:
    """The head's unbacked ``verified`` claims that the base did not make (a claim the
    base already made unbacked is not this PR's).

    With ``base_as_head`` (the base audited only some variants of a recipe, the others
    being the head's), the base's claims of that recipe are not comparable (a hardware
    the base audit did not reach makes no claim there); the recipe's ``meta`` is the
    same on both sides, so a head claim is new only where the base backed it: where
    a combination was recommended in the base's own variants or the head's others.
    """
    if head is None:
        return ()
    narrowed = base_as_head or {}
    before = {_claim_key(c) for c in base.claims if c.recipe not in narrowed} if base else set()
    backed = _backed_before(base, head, narrowed)
    return tuple(
        c
        for c in head.claims
        if (c.recipe in narrowed and (c.recipe, c.subject) in backed)
        or (c.recipe not in narrowed and _claim_key(c) not in before)
    )


def _backed_before(
    base: AuditReport | None, head: AuditReport, narrowed: Mapping[str, Collection[str]]
) -> set[tuple[str, str]]:
    """(recipe, claim subject) with a recommended combination in the base, for the
    ``narrowed`` recipes: the base's audited variants, the head's others."""
    backed: set[tuple[str, str]] = set()
    if not narrowed:
        return backed
    sides = [(e, False) for e in (base.verdicts if base is not None else ())]
    sides += [(e, True) for e in head.verdicts]
    for entry, from_head in sides:
        variants = narrowed.get(entry.recipe)
        if variants is None or entry.verdict is not VerdictKind.RECOMMENDED:
            continue
        for selections in entry.selections:
            if (selections.variant in variants) is not from_head:
                continue
            backed.add((entry.recipe, selections.hardware))
            if selections.kv_offload:
                backed.add((entry.recipe, f"kv_offload_support.{selections.kv_offload}"))
    return backed


def _claim_key(claim: Claim) -> tuple[str, str, str, str | None]:
    return (claim.recipe, claim.hardware, claim.claim, claim.kv_offload)


#: The order of blocking groups (a new claim, between regressions and new unevidenced
#: flags, is not a change group: see ``DiffReport.claims``).
BLOCK_ORDER: tuple[BlockReason, ...] = (
    "regressed-verdict",
    "new-unevidenced-flag",
    "new-guide-only",
)


def _change_order(group: ChangeGroup) -> tuple[int, str, str, str]:
    first = next(group.iter_selections(), None)
    label = first.label() if first is not None else ""
    rank = BLOCK_ORDER.index(group.block_reason) if group.block_reason else len(BLOCK_ORDER)
    return (rank, group.kind, group.recipe, label)


@dataclass
class _LensGroup:
    recipe: str
    verdict: VerdictKind
    roles: tuple[LensRole, ...]
    combinations: int = 0
    selections: list[SelectionSet] = field(default_factory=list)


def _lens(
    head: Sequence[VerdictEntry], lens_keys: Mapping[str, set[tuple[str, str]]]
) -> tuple[LensEntry, ...]:
    """Per lens flag, every head combination of the recipes it is a lens flag of (the PR
    added or changed it there) in which it now appears."""
    if not any(lens_keys.values()):
        return ()
    found: dict[tuple[str, str], dict[tuple[object, ...], _LensGroup]] = {}
    #: (role, id of a flag's evidence tuple) -> that tuple and its LensRole (whose own
    #: tuple is a validated copy): one LensRole per evidence tuple of the audit
    lens_roles: dict[tuple[str, int], tuple[tuple[EvidenceRef, ...], LensRole]] = {}
    # per RoleFlags (shared by many entries) and recipe: its lens flags, each with its
    # LensRole
    role_hits: dict[tuple[int, str], tuple[RoleFlags, list[tuple[tuple[str, str], LensRole]]]] = {}
    for entry in head:
        recipe_keys = lens_keys.get(entry.recipe)
        if not entry.combinations or not recipe_keys:
            continue
        # per flag, its roles in this entry (a role on several nodes once, the first)
        here: dict[tuple[str, str], dict[str, LensRole]] = {}
        for role in entry.roles:
            known = role_hits.get((id(role), entry.recipe))
            if known is None or known[0] is not role:
                hits = []
                for flag in role.flags:
                    flag_key = (flag.key, flag.value)
                    if flag_key not in recipe_keys:
                        continue
                    memo = (role.role, id(flag.evidence))
                    held = lens_roles.get(memo)
                    if held is None or held[0] is not flag.evidence:
                        held = lens_roles[memo] = (
                            flag.evidence,
                            LensRole(role=role.role, evidence=flag.evidence),
                        )
                    hits.append((flag_key, held[1]))
                known = role_hits[(id(role), entry.recipe)] = (role, hits)
            for flag_key, lens_role in known[1]:
                roles = here.setdefault(flag_key, {})
                if role.role not in roles:
                    roles[role.role] = lens_role
        for flag_key, roles in here.items():
            # entries differing only in what the lens does not show share one occurrence
            group_key = (entry.recipe, entry.verdict, *map(id, roles.values()))
            group = found.setdefault(flag_key, {}).get(group_key)
            if group is None:
                group = found[flag_key][group_key] = _LensGroup(
                    entry.recipe, entry.verdict, tuple(roles.values())
                )
            group.combinations += entry.combinations
            group.selections.extend(entry.selections)
    entries = []
    for (key, value), groups in sorted(found.items()):
        occurrences = [
            LensOccurrence(
                recipe=g.recipe,
                verdict=g.verdict,
                combinations=g.combinations,
                selections=tuple(g.selections),
                roles=g.roles,
            )
            for g in groups.values()
        ]
        evidenced = total = 0
        for occurrence in occurrences:
            total += occurrence.combinations * len(occurrence.roles)
            evidenced += occurrence.combinations * sum(1 for r in occurrence.roles if r.evidence)
        entries.append(
            LensEntry(
                key=key,
                value=value,
                evidenced=evidenced,
                unevidenced=total - evidenced,
                occurrences=tuple(occurrences),
            )
        )
    return tuple(entries)
