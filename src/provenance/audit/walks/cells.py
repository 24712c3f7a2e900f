"""The walk by shape cell: audit a recipe by its factors instead of selection by selection.

A recipe's cross-product is a product of independent choices (builder spec
§2): a deployment *shape* (variant, hardware, strategy, node count, KV
offload — a :class:`~provenance.recipes.enumerate.selections.ShapeCell`) × a feature
choice × (under ``pd_cluster``) a prefill pool × a decode pool. MiniMax-M3 has
71,208 selections but 184 shapes, at most 72 feature choices per shape and 9
pools per PD role. The verdict of a selection depends only on the major flags
of each of its processes, so this module renders and normalises each process
once per distinct input and keys whole blocks of selections at a time:

* **PD pools.** A prefill node's command does not depend on the decode pool
  (spec §2.4), so each pool of each role is rendered once per shape and feature
  choice; pools with the same major flags are interchangeable, and the pairs of
  a shape fall into a few (prefill flags, decode flags) buckets, each one
  combination key, joined from the two pools' evidence roles (each computed once
  per distinct pool: :func:`~provenance.audit.keys.joined_roles`).
* **Features.** Many features only add functional flags (``--tool-call-parser``,
  ``--reasoning-parser``). A feature argument unit is *inert* when normalising it
  alone yields no major flag, it writes no mergeable config, and its flag occurs
  nowhere else in the shape's commands (so last-wins dedupe cannot make it hide or
  reveal another unit). Dropping inert units never changes a command's major flags
  — the normaliser drops them anyway (:class:`~provenance.audit.normaliser.PolicyNormaliser`)
  — so feature choices whose remaining arguments are equal share every render
  and every key. Units are only dropped when the shape's argument boundaries
  cannot move (every feature token a ``--flag`` or its value, KV args starting
  with a flag); otherwise the feature choice is kept whole.

Everything else — judging, declarations, grouping, reverse direction, claims —
is the :class:`~provenance.audit.tally.Tally`'s, fed with
:class:`~provenance.audit.verdicts.SelectionSet` blocks instead of single
selections. ``tests/audit/test_factored.py`` proves the report equal to the
selection-by-selection audit on real recipes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import NamedTuple

from provenance.audit.judge import Outcome
from provenance.audit.keys import (
    CombinationKey,
    EvidenceRoleFlags,
    RawRoles,
    combination_key,
    evidence_roles,
    joined_roles,
)
from provenance.audit.normaliser import RoleNormaliser
from provenance.audit.tally import Tally
from provenance.audit.verdicts import FeatureChoice, PdPools, SelectionSet, feature_choice
from provenance.audit.walks.selections import SelectionWalk
from provenance.model.combination import PdPool, PdSelection, Role, Selection
from provenance.model.flags import FlagSet
from provenance.recipes.enumerate.rules import recipe_is_omni
from provenance.recipes.enumerate.selections import (
    EnumerationOptions,
    FeaturePick,
    ShapeCell,
    enumerate_cells,
    enumerate_selections,
)
from provenance.recipes.load.loader import Recipe, RecipesRoot
from provenance.recipes.render.argv import RenderedPart, dedupe_unit_list, join_units
from provenance.recipes.render.synthesis import (
    Renderer,
    RoleInputs,
    model_id_of,
    pool_role_inputs,
    render_omni,
    result_deploy_type,
    shape_role_inputs,
)

_NO_FEATURES = FeaturePick(features=(), picked=(), effective={}, is_default=False)

#: A shape's pool pairs: (prefill pool, decode pool, is the builder's default pair).
PoolPairs = tuple[tuple[PdPool, PdPool, bool], ...]


@dataclass(frozen=True, slots=True)
class _PickGroup:
    """The feature picks of a cell that share one feature signature (so one render per
    role and one key per pool pair), with their feature choices for the report."""

    #: the picks' positions in the cell's ``choices``
    positions: tuple[int, ...]
    picks: tuple[FeaturePick, ...]
    choices: tuple[FeatureChoice, ...]


#: A block of one shape's selections with one combination key: feature picks × pool
#: pairs (indexes into the shape's pool pairs; None without PD).
_Block = tuple[_PickGroup, list[int] | None]


@dataclass(frozen=True, slots=True)
class _PoolLayout:
    """A shape's PD pool pairs as indexes into its distinct pools per role."""

    pools: PoolPairs
    prefill: list[PdPool]
    decode: list[PdPool]
    #: (prefill index, decode index) of each pair, in the shape's pair order
    pairs: list[tuple[int, int]]
    #: (prefill, decode) parallelism of each pair
    modes: list[tuple[str, str]]
    #: pair index -> :meth:`products` of that pair alone
    single: dict[int, list[PdPools | None]] = field(default_factory=dict)

    @classmethod
    def of(cls, pools: PoolPairs) -> _PoolLayout:
        index: dict[str, dict[PdPool, int]] = {"prefill": {}, "decode": {}}
        pairs = []
        for prefill, decode, _ in pools:
            p = index["prefill"].setdefault(prefill, len(index["prefill"]))
            d = index["decode"].setdefault(decode, len(index["decode"]))
            pairs.append((p, d))
        modes = [(prefill.parallelism, decode.parallelism) for prefill, decode, _ in pools]
        return cls(pools, list(index["prefill"]), list(index["decode"]), pairs, modes)

    def products(
        self,
        pairs: list[int] | None,
        shared: Callable[[tuple[PdPool, ...], tuple[PdPool, ...]], PdPools],
    ) -> list[PdPools | None]:
        """:func:`_products` of ``pairs`` (a single pair's remembered per pair)."""
        if pairs is None or len(pairs) != 1:
            return _products(self.pools, pairs, shared)
        found = self.single.get(pairs[0])
        if found is None:
            found = self.single[pairs[0]] = _products(self.pools, pairs, shared)
        return found


class _Half(NamedTuple):
    """The processes of one PD pool (recipe role and major flags) and their evidence roles;
    ``number`` tells the distinct processes of the walk apart (one per distinct ``raw``)."""

    raw: RawRoles
    roles: tuple[EvidenceRoleFlags, ...]
    number: int


def audit_cells(
    tally: Tally,
    normaliser: RoleNormaliser,
    recipe: Recipe,
    root: RecipesRoot,
    options: EnumerationOptions,
) -> CellWalk | SelectionWalk:
    """Feed every selection of ``recipe`` to ``tally``, shape cell by shape cell (an omni
    recipe selection by selection); return the walk, with its memos."""
    if recipe_is_omni(recipe):
        walk = SelectionWalk(tally, normaliser)
        for selection in enumerate_selections(recipe, root, options):
            walk.add(selection, render_omni(recipe, root, selection))
        return walk
    cells = CellWalk(tally, normaliser, recipe, root)
    cells.options = options
    for cell in enumerate_cells(recipe, root, options):
        cells.add(cell)
        cells.cells.append(cell)
    return cells


class CellWalk:
    """Renders, keys and tallies the selections of one recipe by shape cell.

    Every memo is keyed by the value it depends on (render inputs, feature arguments,
    the cell's feature picks and pool pairs)."""

    def __init__(
        self, tally: Tally, normaliser: RoleNormaliser, recipe: Recipe, root: RecipesRoot
    ) -> None:
        self.tally = tally
        self.normaliser = normaliser
        self.recipe = recipe
        self.root = root
        self.renderer = Renderer(recipe, root)
        #: the cells walked, in order, and the options they were enumerated with (the
        #: PR audit's tuning comparison walks the same cells again)
        self.cells: list[ShapeCell] = []
        self.options: EnumerationOptions | None = None
        self._majors: dict[tuple[RoleInputs, tuple[str, ...]], FlagSet] = {}
        self._reduced: dict[tuple[RenderedPart, frozenset[str]], tuple[str, ...]] = {}
        #: a feature part -> the names of its droppable units
        self._droppable: dict[RenderedPart, frozenset[str]] = {}
        self._sig_parts: dict[tuple[str, ...], RenderedPart] = {}
        self._choices: dict[tuple[object, ...], FeatureChoice] = {}
        self._layouts: dict[PoolPairs, _PoolLayout] = {}
        self._pools: dict[tuple[tuple[PdPool, ...], tuple[PdPool, ...]], PdPools] = {}
        self._feature_names = _feature_names(recipe)
        self._groupings: dict[tuple[object, ...], dict[tuple[str, ...], _PickGroup]] = {}
        self._alone: dict[tuple[object, ...], tuple[frozenset[str], FlagSet] | None] = {}
        self._template_names: dict[RoleInputs, frozenset[str] | None] = {}
        self._interned: dict[FlagSet, FlagSet] = {}
        self._halves: dict[RawRoles, _Half] = {}
        self._parts_facts: dict[tuple[str, ...], tuple[frozenset[str], frozenset[str] | None]] = {}

    # Rendering -------------------------------------------------------------
    def _major(self, template: RoleInputs, sig: tuple[str, ...], model_id: str) -> FlagSet:
        """Major flags of ``template``'s process with the feature arguments ``sig``.

        When no flag or config name of ``sig`` occurs elsewhere in the command, the
        feature arguments neither dedupe, merge nor override anything: the major
        flags are those of the command without them plus those of ``sig`` alone.
        """
        memo_key = (template, sig)
        found = self._majors.get(memo_key)
        if found is not None:
            return found
        head = ("vllm", "serve", model_id)
        split = self._sig_alone(sig, head) if sig else None
        names = self._names_of(template) if split is not None else None
        if split is not None and names is not None and split[0].isdisjoint(names):
            found = self._major(template, (), model_id).merged(split[1])
        else:
            prefix, kv_args, env = self.renderer.parts(template)
            part = self._sig_part(sig)
            units = dedupe_unit_list(join_units((prefix, part, kv_args)))
            normaliser = self.normaliser
            if prefix.plain and part.plain and kv_args.plain:
                found = normaliser.units_major(head, units, env)
            else:  # a short flag or negative number: let the normaliser split the tokens
                found = normaliser.command_major((*head, *(t for u in units for t in u)), env)
        found = self._interned.setdefault(found, found)
        self._majors[memo_key] = found
        return found

    def _sig_part(self, sig: tuple[str, ...]) -> RenderedPart:
        part = self._sig_parts.get(sig)
        if part is None:
            part = self._sig_parts[sig] = RenderedPart.of(sig)
        return part

    def _sig_alone(
        self, sig: tuple[str, ...], head: tuple[str, ...]
    ) -> tuple[frozenset[str], FlagSet] | None:
        """The names ``sig`` may touch and its major flags alone (None: not separable)."""
        memo_key = (sig, head)
        if memo_key in self._alone:
            return self._alone[memo_key]
        found: tuple[frozenset[str], FlagSet] | None = None
        part = self._sig_part(sig)
        normaliser = self.normaliser
        if part.plain and all(flag is not None for flag, _ in part.units):
            names: set[str] = set()
            for flag, unit in part.units:
                unit_names = normaliser.unit_facts(unit).names
                if unit_names is None or flag is None:
                    break
                names.update(unit_names)
                names.add(flag)
            else:
                units = [unit for _, unit in part.units]
                if len({flag for flag, _ in part.units}) == len(units):
                    found = (frozenset(names), normaliser.units_major(head, units, {}))
        self._alone[memo_key] = found
        return found

    def _names_of(self, template: RoleInputs) -> frozenset[str] | None:
        """Every flag and config name the command of ``template`` sets outside the features
        (None when a unit does not normalise alone: it may touch any name)."""
        if template in self._template_names:
            return self._template_names[template]
        prefix, kv_args, _ = self.renderer.parts(template)
        found: frozenset[str] | None = None
        if _flag_first(kv_args):  # else a value first could attach to the features' last flag
            touched = self._part_facts(prefix)[1], self._part_facts(kv_args)[1]
            if touched[0] is not None and touched[1] is not None:
                found = touched[0] | touched[1]
        self._template_names[template] = found
        return found

    def _part_facts(self, part: RenderedPart) -> tuple[frozenset[str], frozenset[str] | None]:
        """The flags and config names ``part``'s units set (:meth:`_shape_facts`), and every
        name they may touch (:meth:`_names_of`; None: a unit does not normalise alone).
        Many of a recipe's templates render the same parts: each is read once."""
        found = self._parts_facts.get(part.tokens)
        if found is not None:
            return found
        unit_facts = self.normaliser.unit_facts
        names: set[str] = set()
        touched: set[str] | None = set()
        for flag, unit in part.units:
            facts = unit_facts(unit)
            if flag is not None:
                names.add(flag)
            names.add(facts.base)
            if facts.names is None or touched is None:
                touched = None
                continue
            touched.update(facts.names)
            touched.add(facts.base)
            if flag is not None:
                touched.add(flag)
        found = self._parts_facts[part.tokens] = (
            frozenset(names),
            frozenset(touched) if touched is not None else None,
        )
        return found

    def _signature(
        self, template: RoleInputs, pick: FeaturePick, names: frozenset[str], reducible: bool
    ) -> tuple[str, ...]:
        """The feature arguments of ``pick`` that can matter (inert units dropped)."""
        modes = tuple(sorted((f, m) for f, m in pick.effective.items() if m is not None))
        part = self.renderer.feature_part(
            template._replace(features=pick.features, feature_modes=modes)
        )
        if not reducible or not part.tokens:
            return part.tokens
        # only the names of the droppable units matter: most shapes share the reduction
        droppable = self._droppable.get(part)
        if droppable is None:
            droppable = self._droppable[part] = self._droppable_names(part)
        memo_key = (part, names & droppable)
        found = self._reduced.get(memo_key)
        if found is None:
            found = self._reduced[memo_key] = self._reduce(part, names)
        return found

    def _droppable_names(self, part: RenderedPart) -> frozenset[str]:
        """The flags and config names of the units :meth:`_reduce` may drop."""
        unit_facts = self.normaliser.unit_facts
        names: set[str] = set()
        for flag, unit in part.units:
            fact = unit_facts(unit)
            if fact.alone and flag is not None:
                names.update((flag, fact.base))
        return frozenset(names)

    def _reduce(self, part: RenderedPart, names: frozenset[str]) -> tuple[str, ...]:
        """``part`` without its inert units, unless a unit boundary could move."""
        if not part.plain:
            return part.tokens  # a short flag or a negative number: splits may differ
        flags = [flag for flag, _ in part.units]
        if None in flags:
            return part.tokens  # a positional: boundaries could move
        normaliser = self.normaliser
        facts = [normaliser.unit_facts(unit) for _, unit in part.units]
        bases = [f.base for f in facts]
        kept: list[str] = []
        for (flag, unit), fact in zip(part.units, facts, strict=True):
            droppable = (
                fact.alone
                and flag not in names
                and fact.base not in names
                and flags.count(flag) == 1
                and bases.count(fact.base) == 1
            )
            if not droppable:
                kept.extend(unit)
        return tuple(kept)

    # Cells ---------------------------------------------------------------------
    def add(self, cell: ShapeCell) -> None:
        shape = cell.selection(_NO_FEATURES, None)
        deploy_type = result_deploy_type(self.root, shape)
        model_id = model_id_of(self.recipe, cell.variant)
        layout: _PoolLayout | None = None
        templates: list[RoleInputs]
        if cell.pools is None:
            templates = shape_role_inputs(self.recipe, self.root, shape)
        else:
            layout = self._layout(cell.pools)
            roles: tuple[tuple[Role, list[PdPool]], ...] = (
                ("prefill", layout.prefill),
                ("decode", layout.decode),
            )
            pool_keys = {
                role: [pool_role_inputs(shape, role, pool) for pool in pools]
                for role, pools in roles
            }
            templates = [k for keys in pool_keys.values() for pool in keys for k in pool]
        # every strategy deploys a process, every pool a node: templates[0] exists
        by_sig = self._by_signature(cell, templates)
        context = self.normaliser.in_context
        blocks: dict[CombinationKey, list[_Block]] = {}
        for sig, group in by_sig.items():
            if layout is None:
                raw: RawRoles = tuple((t.role, self._major(t, sig, model_id)) for t in templates)
                key = combination_key(
                    model_id, cell.hardware, deploy_type, cell.node_count, raw, context=context
                )
                blocks.setdefault(key, []).append((group, None))
                continue
            prefill, decode = (
                [
                    self._half(tuple((t.role, self._major(t, sig, model_id)) for t in keys))
                    for keys in pools
                ]
                for pools in (pool_keys["prefill"], pool_keys["decode"])
            )
            # pairs with equal processes share a bucket
            buckets: dict[tuple[int, int], list[int]] = {}
            for index, (p, d) in enumerate(layout.pairs):
                buckets.setdefault((prefill[p].number, decode[d].number), []).append(index)
            for pairs in buckets.values():
                p, d = layout.pairs[pairs[0]]
                key = self._pd_key(model_id, cell.hardware, deploy_type, prefill[p], decode[d])
                blocks.setdefault(key, []).append((group, pairs))
        self._tally(cell, model_id, blocks, layout)

    def _half(self, raw: RawRoles) -> _Half:
        """The processes ``raw`` of a PD pool with their evidence roles (computed once per
        distinct ``raw``) and their number among the walk's distinct pools."""
        found = self._halves.get(raw)
        if found is None:
            roles = evidence_roles(raw, self.normaliser.in_context)
            found = self._halves[raw] = _Half(raw, roles, len(self._halves))
        return found

    def _pd_key(
        self, model_id: str, hardware: str, deploy_type: str, prefill: _Half, decode: _Half
    ) -> CombinationKey:
        """``combination_key`` of a prefill pool's processes followed by a decode pool's,
        from each pool's evidence roles (computed once per distinct pool)."""
        raw = prefill.raw + decode.raw
        roles = joined_roles(prefill.roles, decode.roles)
        return combination_key(
            model_id, hardware, deploy_type, None, raw, roles, context=self.normaliser.in_context
        )

    def _by_signature(
        self, cell: ShapeCell, templates: list[RoleInputs]
    ) -> dict[tuple[str, ...], _PickGroup]:
        """The cell's feature picks grouped by their feature signature (shared by the
        cells with the same picks, feature context and outside names)."""
        names, reducible = self._shape_facts(templates)
        first = templates[0]
        # the grouping depends on the names only through the flags the features write
        memo_key = (
            cell.choices,
            first.variant,
            first.hardware,
            self.renderer.allowed_features(first),
            names & self._feature_names,
            reducible,
        )
        found = self._groupings.get(memo_key)
        if found is None:
            positions: dict[tuple[str, ...], list[int]] = {}
            for position, pick in enumerate(cell.choices):
                sig = self._signature(first, pick, names, reducible)
                positions.setdefault(sig, []).append(position)
            found = self._groupings[memo_key] = {
                sig: self._pick_group(cell.choices, found_positions)
                for sig, found_positions in positions.items()
            }
        return found

    def _pick_group(self, choices: Sequence[FeaturePick], positions: list[int]) -> _PickGroup:
        picks = tuple(choices[position] for position in positions)
        return _PickGroup(tuple(positions), picks, tuple(self._choice(p) for p in picks))

    def _layout(self, pools: PoolPairs) -> _PoolLayout:
        found = self._layouts.get(pools)
        if found is None:
            found = self._layouts[pools] = _PoolLayout.of(pools)
        return found

    def _shape_facts(self, templates: Sequence[RoleInputs]) -> tuple[frozenset[str], bool]:
        """The flags and config names the shape's commands set outside the features, and
        whether feature arguments may be reduced (KV arguments start with a ``--flag``)."""
        names: set[str] = set()
        reducible = True
        for template in templates:
            prefix, kv_args, _ = self.renderer.parts(template)
            names.update(self._part_facts(prefix)[0])
            names.update(self._part_facts(kv_args)[0])
            if not _flag_first(kv_args):
                reducible = False
        return frozenset(names), reducible

    def _tally(
        self,
        cell: ShapeCell,
        model_id: str,
        blocks: dict[CombinationKey, list[_Block]],
        layout: _PoolLayout | None,
    ) -> None:
        tally = self.tally
        modes = layout.modes if layout is not None else []
        for key, key_blocks in blocks.items():
            state = tally.state(key, model_id)
            example: Callable[[], Selection] | None = None
            if state.example_of is None:
                first = min(
                    (group.positions[0], pairs[0] if pairs else 0) for group, pairs in key_blocks
                )
                example = partial(_example, cell, *first)
            for group, pairs in key_blocks:
                pd_modes: tuple[str, ...] = ()
                products: list[PdPools | None] = [None]
                if layout is not None:
                    products = layout.products(pairs, self._pd_pools)
                if pairs:
                    pd_modes = (
                        modes[pairs[0]]
                        if len(pairs) == 1
                        else tuple(mode for index in pairs for mode in modes[index])
                    )
                for declared, choices in self._declared(cell, group, state.outcome):
                    for pd in products:
                        selections = self._set(cell, choices, pd)
                        tally.add_set(
                            state,
                            selections,
                            selections.count,
                            declared,
                            example,
                            pd_modes,
                        )

    def _declared(
        self, cell: ShapeCell, group: _PickGroup, outcome: Outcome
    ) -> list[tuple[str | None, tuple[FeatureChoice, ...]]]:
        """The group's feature choices split by the declaration that covers them (None:
        none, or recommended)."""
        tally = self.tally
        if outcome.verdict == "recommended" or not tally.declarations:
            return [(None, group.choices)]
        split: dict[str | None, list[FeatureChoice]] = {}
        for pick, choice in zip(group.picks, group.choices, strict=True):
            declared = tally.declared(cell.selection(pick, None), outcome)
            split.setdefault(declared, []).append(choice)
        return [(declared, tuple(choices)) for declared, choices in split.items()]

    def _set(
        self, cell: ShapeCell, choices: tuple[FeatureChoice, ...], pd: PdPools | None
    ) -> SelectionSet:
        return SelectionSet(
            variant=cell.variant,
            hardware=cell.hardware,
            strategy=cell.strategy,
            node_count=cell.node_count,
            kv_offload=cell.kv_offload,
            kv_instances=cell.kv_instances,
            omni_task=None,
            features=choices,
            pd=pd,
        )

    def _pd_pools(self, prefill: tuple[PdPool, ...], decode: tuple[PdPool, ...]) -> PdPools:
        """One object per pool product (MiniMax-M3's 7,452 PD selection sets share 828)."""
        memo_key = (prefill, decode)
        found = self._pools.get(memo_key)
        if found is None:
            found = self._pools[memo_key] = PdPools(prefill=prefill, decode=decode)
        return found

    def _choice(self, pick: FeaturePick) -> FeatureChoice:
        memo_key = (pick.features, tuple(pick.effective.items()))
        found = self._choices.get(memo_key)
        if found is None:
            found = self._choices[memo_key] = feature_choice(pick.features, pick.effective)
        return found


def _flag_first(part: RenderedPart) -> bool:
    """``part`` is empty or starts with a ``--flag``: nothing before it can take its first
    token as a value, whichever units the features keep."""
    return not part.tokens or part.tokens[0].startswith("--")


def _feature_names(recipe: Recipe) -> frozenset[str]:
    """Every flag spelling and config name any feature argument of ``recipe`` may write
    (a superset of the names of the units a feature signature may drop)."""
    names: set[str] = set()
    stack: list[object] = [recipe.spec.model_dump().get("features") or {}]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list | tuple):
            stack.extend(item)
        elif isinstance(item, str) and item.startswith("-"):
            head = item.split("=", 1)[0]
            base = head.lstrip("-").split(".", 1)[0].replace("-", "_")
            names.update((item, head, base))
    return frozenset(names)


def _example(cell: ShapeCell, pick_index: int, pair_index: int) -> Selection:
    """The selection of ``cell`` with its ``pick_index``-th feature pick and pool pair."""
    pair = cell.pools[pair_index] if cell.pools is not None else None
    pd = PdSelection(pair[0], pair[1]) if pair else None
    return cell.selection(cell.choices[pick_index], pd)


def _products(
    pools: PoolPairs,
    pairs: list[int] | None,
    shared: Callable[[tuple[PdPool, ...], tuple[PdPool, ...]], PdPools],
) -> list[PdPools | None]:
    """The pool ``pairs`` (indexes into ``pools``) as a few prefill × decode products,
    each the ``shared`` object for its pools."""
    if pairs is None:
        return [None]
    if len(pairs) == 1:  # the common case: one pool pair per key and feature block
        prefill, decode, _ = pools[pairs[0]]
        return [shared((prefill,), (decode,))]
    by_prefill: dict[PdPool, list[PdPool]] = {}
    for index in pairs:
        prefill, decode, _ = pools[index]
        by_prefill.setdefault(prefill, []).append(decode)
    merged: dict[tuple[PdPool, ...], list[PdPool]] = {}
    for prefill, decodes in by_prefill.items():
        merged.setdefault(tuple(decodes), []).append(prefill)
    return [shared(tuple(prefills), decodes) for decodes, prefills in merged.items()]
