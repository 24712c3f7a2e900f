"""The tuning, harness and functional flags a pull request changes, counted by flag.

The audit judges major flags only (``docs/flags.md``), so its verdict entries carry no
other flag. This PR-audit-only pass renders both sides' role commands again, shape
cell by shape cell as the audit's cell walk does (each role command of each PD pool
once per distinct input, :class:`~provenance.recipes.render.synthesis.Renderer`),
normalises each distinct command once (:meth:`PolicyNormaliser.non_major`) and
keeps the flags the same :class:`~provenance.normalise.policy.Policy` classifies as
not major. A flag *changes* in a combination when, in some process of the
combination, the PR adds it, removes it or changes its value. Each count is exact:
the number of combinations present on both sides whose commands change that flag
(a newly exposed or removed combination is counted by the gate, not here).

Nothing is executed: commands are rendered and read, as in the audit.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from provenance.audit.normaliser import PolicyNormaliser
from provenance.audit.pipeline import KeptWalk, LoadedRecipes
from provenance.model.combination import EnvValue, PdPool, Selection
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
    shape_role_inputs,
)

#: (before, after) value pairs kept per flag as examples
MAX_EXAMPLES = 3


class TuningChange(BaseModel):
    """One non-major flag key the PR adds, changes or removes, and where."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    key: str
    #: the policy class of the key: tuning, harness or functional
    flag_class: str
    #: combinations present in the base and the head in which the flag changes
    combinations: int
    #: a few (before, after) values, ``None`` where the flag is absent
    examples: tuple[tuple[str | None, str | None], ...] = ()


#: a process of a deployment, named the same way on both sides
_ProcessName = tuple[object, ...]
#: key -> (before, after) of the flags that differ between two processes
_Delta = dict[str, tuple[str | None, str | None]]
#: a rendered process: model id, prefix, feature part, KV arguments, environment
_Command = tuple[str, RenderedPart, RenderedPart, RenderedPart, dict[str, EnvValue]]
_EMPTY = RenderedPart.of(())
_NO_FEATURES = FeaturePick(features=(), picked=(), effective={}, is_default=False)


@dataclass
class _Counts:
    combinations: Counter[str] = field(default_factory=Counter)
    examples: dict[str, list[tuple[str | None, str | None]]] = field(default_factory=dict)

    def add(self, delta: _Delta, count: int) -> None:
        for key, pair in delta.items():
            self.combinations[key] += count
            seen = self.examples.setdefault(key, [])
            if pair not in seen and len(seen) < MAX_EXAMPLES:
                seen.append(pair)


def _delta(before: Mapping[str, str], after: Mapping[str, str]) -> _Delta:
    if before is after or before == after:
        return {}
    return {
        key: (before.get(key), after.get(key))
        for key in before.keys() | after.keys()
        if before.get(key) != after.get(key)
    }


def _merge(deltas: Iterable[_Delta]) -> _Delta:
    merged: _Delta = {}
    for delta in deltas:
        for key, pair in delta.items():
            merged.setdefault(key, pair)
    return merged


class _Side:
    """One revision of a recipe: its renderer and the non-major flags of each process."""

    def __init__(
        self,
        recipe: Recipe,
        root: RecipesRoot,
        normaliser: PolicyNormaliser,
        memo: _Memo,
        renderer: Renderer | None = None,
    ) -> None:
        self.recipe = recipe
        self.root = root
        self.renderer = renderer or Renderer(recipe, root)
        self.normaliser = normaliser
        self.memo = memo

    def templates(self, cell: ShapeCell, pool: tuple[str, PdPool] | None) -> list[RoleInputs]:
        shape = cell.selection(_NO_FEATURES, None)
        if pool is None:
            return shape_role_inputs(self.recipe, self.root, shape)
        return pool_role_inputs(shape, pool[0], pool[1])  # type: ignore[arg-type]

    def feature_part(self, template: RoleInputs, pick: FeaturePick | None) -> RenderedPart:
        """The feature arguments ``pick`` renders in ``template``'s deployment (None: none)."""
        if pick is None:
            return _EMPTY
        modes = tuple(sorted((f, m) for f, m in pick.effective.items() if m is not None))
        return self.renderer.feature_part(
            template._replace(features=pick.features, feature_modes=modes)
        )

    def commands(
        self, templates: Sequence[RoleInputs], pick: FeaturePick | None, model_id: str
    ) -> dict[_ProcessName, _Command]:
        """The rendered command of each process of ``templates`` with the features ``pick``."""
        found: dict[_ProcessName, _Command] = {}
        for template in templates:
            prefix, kv_args, env = self.renderer.parts(template)
            part = self.feature_part(template, pick)
            name = (template.role, template.node_rank, template.pool, template.kv_instances)
            found[name] = (model_id, prefix, part, kv_args, env)
        return found


class _Memo:
    """The non-major flags of each distinct command, shared by both sides.

    As in the audit's cell walk (``_sig_alone``): when no flag or config name of the
    feature arguments occurs elsewhere in the command, they neither dedupe, merge nor
    override anything, so the command's flags are those of the command without them
    plus those of the feature arguments alone; each is normalised once.
    """

    def __init__(self, normaliser: PolicyNormaliser) -> None:
        self.normaliser = normaliser
        #: by the identity of the renderer's memoised parts (kept alive in the value)
        self._by_id: dict[tuple[int, ...], tuple[tuple[object, ...], FlagSet]] = {}
        self._by_tokens: dict[tuple[object, ...], FlagSet] = {}
        self._names: dict[tuple[str, ...], frozenset[str] | None] = {}
        self._joins: dict[tuple[int, int], FlagSet] = {}
        self._deltas: dict[tuple[tuple[str, ...], ...], _Delta | None] = {}
        self._parts: dict[tuple[str, ...], RenderedPart] = {}

    def flags(
        self,
        model_id: str,
        prefix: RenderedPart,
        part: RenderedPart,
        kv_args: RenderedPart,
        env: dict[str, EnvValue],
    ) -> FlagSet:
        id_key = (id(model_id), id(prefix), id(part), id(kv_args), id(env))
        held = self._by_id.get(id_key)
        parts = (model_id, prefix, part, kv_args, env)
        if held is not None and all(a is b for a, b in zip(held[0], parts, strict=True)):
            return held[1]
        found: FlagSet | None = None
        if part.tokens and (not kv_args.tokens or kv_args.tokens[0].startswith("--")):
            features = self.part_names(part)
            outside = self.part_names(prefix), self.part_names(kv_args)
            if (
                features is not None
                and None not in outside
                and all(features.isdisjoint(names or ()) for names in outside)
            ):
                alone = self._command(model_id, _EMPTY, part, _EMPTY, {})
                rest = self._command(model_id, prefix, _EMPTY, kv_args, env)
                found = self._joined(rest, alone)
        if found is None:
            found = self._command(model_id, prefix, part, kv_args, env)
        self._by_id[id_key] = (parts, found)
        return found

    def _joined(self, rest: FlagSet, alone: FlagSet) -> FlagSet:
        key = (id(rest), id(alone))  # both are held by ``_by_tokens``
        found = self._joins.get(key)
        if found is None:
            found = self._joins[key] = FlagSet({**rest, **alone}) if alone else rest
        return found

    def _command(
        self,
        model_id: str,
        prefix: RenderedPart,
        part: RenderedPart,
        kv_args: RenderedPart,
        env: dict[str, EnvValue],
    ) -> FlagSet:
        env_items = tuple(sorted(env.items()))
        token_key = (model_id, prefix.tokens, part.tokens, kv_args.tokens, env_items)
        found = self._by_tokens.get(token_key)
        if found is None:
            units = dedupe_unit_list(join_units((prefix, part, kv_args)))
            argv = ("vllm", "serve", model_id, *(t for unit in units for t in unit))
            found = self._by_tokens[token_key] = self.normaliser.non_major(argv, env)
        return found

    def delta(self, before: _Command, after: _Command) -> _Delta | None:
        """The flags two commands of one process differ in, from the argument units they
        do not share alone; None when that may differ from comparing them whole.

        The units of each command (after last-wins dedupe) all start with a ``--flag``
        and normalise alone; when the units only one side has touch no flag or config
        name the shared units touch, the shared units set the same flags on both sides
        and nothing else sets those flags (each flag is resolved from its own name's
        occurrences), so the difference is that of the unshared units alone, each side
        normalised once per distinct set of unshared units instead of per command.
        """
        if before[0] != after[0] or before[4] != after[4]:
            return None
        token_key = (*(p.tokens for p in before[1:4]), *(p.tokens for p in after[1:4]))
        if token_key in self._deltas:
            return self._deltas[token_key]
        found: _Delta | None = None
        old, new = self._units(before), self._units(after)
        if old is not None and new is not None:
            shared = set(old) & set(new)
            only = [tuple(u for u in side if u not in shared) for side in (old, new)]
            names = [self.units_names(side) for side in (tuple(shared), only[0] + only[1])]
            if names[0] is not None and names[1] is not None and names[0].isdisjoint(names[1]):
                model_id = before[0]
                found = _delta(
                    self._command(model_id, self._tokens_part(only[0]), _EMPTY, _EMPTY, {}),
                    self._command(model_id, self._tokens_part(only[1]), _EMPTY, _EMPTY, {}),
                )
        self._deltas[token_key] = found
        return found

    def _units(self, command: _Command) -> tuple[tuple[str, ...], ...] | None:
        """The argument units of ``command`` after last-wins dedupe (None: a part is not
        plain or a unit does not start with a ``--flag``, so boundaries could move)."""
        parts = command[1:4]
        if not all(part.plain for part in parts):
            return None
        units = tuple(dedupe_unit_list(join_units(parts)))
        if not all(unit[0].startswith("--") for unit in units):
            return None
        return units

    def _tokens_part(self, units: tuple[tuple[str, ...], ...]) -> RenderedPart:
        tokens = tuple(t for unit in units for t in unit)
        found = self._parts.get(tokens)
        if found is None:
            found = self._parts[tokens] = RenderedPart.of(tokens)
        return found

    def units_names(self, units: Iterable[tuple[str, ...]]) -> frozenset[str] | None:
        """Every flag and config name ``units`` may touch (None: a unit that does not
        normalise alone, which may touch any name)."""
        names: set[str] = set()
        for unit in units:
            facts = self.normaliser.unit_facts(unit)
            if facts.names is None:
                return None
            names.update((*facts.names, unit[0], unit[0].split("=", 1)[0], facts.base))
        return frozenset(names)

    def part_names(self, part: RenderedPart) -> frozenset[str] | None:
        """Every flag and config name ``part`` may touch (None: a positional, a short flag
        or a unit that does not normalise alone, which may touch any name)."""
        if part.tokens in self._names:
            return self._names[part.tokens]
        names: set[str] | None = set() if part.plain else None
        for flag, unit in part.units:
            facts = self.normaliser.unit_facts(unit)
            if names is None or flag is None or facts.names is None:
                names = None
                break
            names.update((*facts.names, flag, facts.base))
        found = self._names[part.tokens] = frozenset(names) if names is not None else None
        return found


def _cell_key(cell: ShapeCell) -> tuple[object, ...]:
    return (
        cell.variant,
        cell.hardware,
        cell.strategy,
        cell.node_count,
        cell.kv_offload,
        cell.kv_instances,
    )


def _pick_key(pick: FeaturePick) -> tuple[object, ...]:
    return (pick.features, tuple(sorted(pick.effective.items(), key=lambda kv: kv[0])))


def _split_picks(
    base: _Side, head: _Side, old: ShapeCell, new: ShapeCell, templates: _Templates
) -> tuple[int, list[tuple[FeaturePick, FeaturePick]]]:
    """The feature picks offered on both sides: how many cannot change a flag beyond what
    the commands without features change (the same feature arguments on both sides, whose
    names occur nowhere else in the cell's commands: see :class:`_Memo`), and the others
    as (base pick, head pick)."""
    old_picks = {_pick_key(p): p for p in old.choices}
    outside: set[str] | None = set()
    for base_group, head_group in templates.values():
        for side, group in ((base, base_group), (head, head_group)):
            for template in group:
                prefix, kv_args, _ = side.renderer.parts(template)
                spans = side.memo.part_names(prefix), side.memo.part_names(kv_args)
                if outside is None or spans[0] is None or spans[1] is None:
                    outside = None
                elif kv_args.tokens and not kv_args.tokens[0].startswith("--"):
                    outside = None  # a value first could attach to the features' last flag
                else:
                    outside.update(spans[0] | spans[1])
    first = next(iter(templates.values()))
    same = 0
    others: list[tuple[FeaturePick, FeaturePick]] = []
    for pick in new.choices:
        before = old_picks.get(_pick_key(pick))
        if before is None:
            continue
        part = base.feature_part(first[0][0], before)
        names = base.memo.part_names(part) if outside is not None else None
        if (
            names is not None
            and outside is not None
            and part.tokens == head.feature_part(first[1][0], pick).tokens
            and names.isdisjoint(outside)
        ):
            same += 1
        else:
            others.append((before, pick))
    return same, others


#: the processes of a cell, per process group (None, or a PD pool with its role): the
#: role inputs on each side
_Templates = dict[tuple[str, PdPool] | None, tuple[list[RoleInputs], list[RoleInputs]]]


def _compare_cell(base: _Side, head: _Side, old: ShapeCell, new: ShapeCell, out: _Counts) -> None:
    if (new.pools is None) != (old.pools is None):
        return  # not the same deployment on both sides: new and removed combinations
    model_ids = (model_id_of(base.recipe, old.variant), model_id_of(head.recipe, new.variant))
    pairs: list[tuple[PdPool, PdPool]] = []
    templates: _Templates = {None: (base.templates(old, None), head.templates(new, None))}
    if new.pools is not None and old.pools is not None:
        old_pairs = {(p, d) for p, d, _ in old.pools}
        pairs = [(p, d) for p, d, _ in new.pools if (p, d) in old_pairs]
        if not pairs:
            return
        prefills = sorted({p for p, _ in pairs}, key=repr)
        decodes = sorted({d for _, d in pairs}, key=repr)
        templates = {
            (role, pool): (base.templates(old, (role, pool)), head.templates(new, (role, pool)))
            for role, pools in (("prefill", prefills), ("decode", decodes))
            for pool in pools
        }
    same, others = _split_picks(base, head, old, new, templates)
    picks: list[tuple[FeaturePick | None, FeaturePick | None, int]] = [(b, h, 1) for b, h in others]
    if same:
        picks.append((None, None, same))  # the commands without their features
    for old_pick, new_pick, count in picks:
        deltas = {
            group: _process_delta(
                base.memo,
                base.commands(before, old_pick, model_ids[0]),
                head.commands(after, new_pick, model_ids[1]),
            )
            for group, (before, after) in templates.items()
        }
        if not pairs:
            if deltas[None]:
                out.add(deltas[None], count)
            continue
        for prefill, decode in pairs:
            first, second = deltas[("prefill", prefill)], deltas[("decode", decode)]
            if first or second:
                out.add(_merge((first, second)), count)


def _same_command(before: _Command, after: _Command) -> bool:
    """Whether two rendered processes are the same command: the same flags, unread."""
    return (
        before[0] == after[0]
        and all(b.tokens == a.tokens for b, a in zip(before[1:4], after[1:4], strict=True))
        and before[4] == after[4]
    )


def _process_delta(
    memo: _Memo, before: dict[_ProcessName, _Command], after: dict[_ProcessName, _Command]
) -> _Delta:
    """The flags that differ between the processes of two deployments. A process whose
    command is the same on both sides changes nothing and is not normalised: most of a
    PR's commands are (recipes #828: a third of its audit went to normalising them). A
    process on both sides is compared by the arguments its two commands do not share
    when :meth:`_Memo.delta` can (recipes #828 removes one flag from every prefill
    command: each distinct command used to be normalised whole)."""
    empty = FlagSet()
    deltas: list[_Delta] = []
    for name in sorted(before.keys() | after.keys(), key=repr):
        old, new = before.get(name), after.get(name)
        if old is not None and new is not None:
            if _same_command(old, new):
                continue
            found = memo.delta(old, new)
            if found is not None:
                deltas.append(found)
                continue
        deltas.append(
            _delta(
                memo.flags(*old) if old is not None else empty,
                memo.flags(*new) if new is not None else empty,
            )
        )
    return _merge(deltas)


def _flags_delta(
    before: Mapping[_ProcessName, FlagSet], after: Mapping[_ProcessName, FlagSet]
) -> _Delta:
    empty = FlagSet()
    return _merge(
        _delta(before.get(name, empty), after.get(name, empty))
        for name in sorted(before.keys() | after.keys(), key=repr)
    )


def _compare_omni(base: _Side, head: _Side, options: EnumerationOptions, out: _Counts) -> None:
    def commands(side: _Side) -> Iterator[tuple[Selection, dict[_ProcessName, FlagSet]]]:
        for selection in enumerate_selections(side.recipe, side.root, options):
            result = render_omni(side.recipe, side.root, selection)
            yield (
                selection,
                {
                    (role.role, role.node_rank, None, role.instance): side.normaliser.non_major(
                        role.argv, role.env
                    )
                    for role in result.roles
                    if role.argv is not None
                },
            )

    before = dict(commands(base))
    for selection, after in commands(head):
        if selection in before:
            delta = _flags_delta(before[selection], after)
            if delta:
                out.add(delta, 1)


class TuningComparison:
    """The non-major flags the PR changes, compared one recipe at a time: the PR audit
    compares each recipe as soon as its head is audited, with the renderers both audits
    kept for it (their memos hold the very processes compared here: rendered once, not
    twice), and then frees them. ``variants`` (recipe -> variants) limits a recipe to
    the variants that can differ (the others are the same on both sides);
    ``own_options`` (recipe file, relative to its root -> options) replaces ``options``
    for a recipe. The counts do not depend on the order of the recipes; the examples of
    a flag are the first ones met, so the recipes are added in one order (the PR audit's:
    by recipe file)."""

    def __init__(
        self,
        options: EnumerationOptions,
        normaliser: PolicyNormaliser,
        variants: Mapping[str, Iterable[str]] | None = None,
        own_options: Mapping[str, EnumerationOptions] | None = None,
    ) -> None:
        self.options = options
        self.normaliser = normaliser
        self.variants = variants or {}
        self.own_options = own_options or {}
        self._out = _Counts()

    def add(
        self,
        base_side: tuple[Recipe, RecipesRoot],
        head_side: tuple[Recipe, RecipesRoot],
        kept: tuple[KeptWalk | None, KeptWalk | None] = (None, None),
    ) -> None:
        """Compare one recipe's base and head (with the renderers and cells the audits
        kept for them, if any: their cells are used when enumerated with the options the
        comparison enumerates with)."""
        (base_recipe, base_root), (head_recipe, head_root) = base_side, head_side
        options = self.options
        wanted = self.variants.get(head_recipe.hf_id)
        recipe_options = self.own_options.get(
            head_recipe.path.relative_to(head_root.path).as_posix(), options
        )
        if wanted is not None:
            only = sorted(set(wanted))
            if recipe_options.variants is not None:
                only = [v for v in only if v in recipe_options.variants]
            recipe_options = options.model_copy(update={"variants": tuple(only)})
        # one memo per recipe, freed with it: it holds the recipe's rendered parts, and
        # two recipes share next to no command (their model ids differ)
        normaliser, memo, out = self.normaliser, _Memo(self.normaliser), self._out
        base = _Side(base_recipe, base_root, normaliser, memo, _renderer(kept[0]))
        head = _Side(head_recipe, head_root, normaliser, memo, _renderer(kept[1]))
        if recipe_is_omni(base_recipe) or recipe_is_omni(head_recipe):
            if recipe_is_omni(base_recipe) and recipe_is_omni(head_recipe):
                _compare_omni(base, head, recipe_options, out)
            return
        old_cells = {
            _cell_key(c): c for c in _cells(kept[0], base_recipe, base_root, recipe_options)
        }
        for cell in _cells(kept[1], head_recipe, head_root, recipe_options):
            old = old_cells.get(_cell_key(cell))
            if old is not None:
                _compare_cell(base, head, old, cell, out)

    def changes(self) -> tuple[TuningChange, ...]:
        """The flags changed so far, largest first."""
        out = self._out
        return tuple(
            TuningChange(
                key=key,
                flag_class=self.normaliser.classify(key),
                combinations=count,
                examples=tuple(out.examples[key]),
            )
            for key, count in sorted(out.combinations.items(), key=lambda kv: (-kv[1], kv[0]))
        )


def _renderer(kept: KeptWalk | None) -> Renderer | None:
    return kept.renderer if kept is not None else None


def _cells(
    kept: KeptWalk | None, recipe: Recipe, root: RecipesRoot, options: EnumerationOptions
) -> Iterable[ShapeCell]:
    """The cells of ``recipe`` with ``options``: those its audit walked if it walked them
    with the same options (the audit and the comparison enumerate alike), else anew."""
    if kept is not None and kept.options == options:
        return kept.cells
    return enumerate_cells(recipe, root, options)


def tuning_changes(
    pairs: Iterable[tuple[tuple[Recipe, RecipesRoot], tuple[Recipe, RecipesRoot]]],
    options: EnumerationOptions,
    normaliser: PolicyNormaliser,
    variants: Mapping[str, Iterable[str]] | None = None,
    own_options: Mapping[str, EnumerationOptions] | None = None,
) -> tuple[TuningChange, ...]:
    """The non-major flags the PR changes across the recipes ``pairs`` ((base, head) of
    each recipe on both sides), largest first (:class:`TuningComparison`)."""
    comparison = TuningComparison(options, normaliser, variants, own_options)
    for base, head in pairs:
        comparison.add(base, head)
    return comparison.changes()


def recipe_pairs(
    base_root: Path,
    head_root: Path,
    models: Iterable[str],
    loaded: LoadedRecipes | None = None,
) -> list[tuple[tuple[Recipe, RecipesRoot], tuple[Recipe, RecipesRoot]]]:
    """(base, head) of each recipe file ``models`` present on both materialised sides
    (from ``loaded`` when given: the objects the audits read)."""
    cache = loaded or LoadedRecipes()
    base_loaded, head_loaded = cache.root(base_root), cache.root(head_root)
    return [
        (
            (cache.recipe(base_loaded, model), base_loaded),
            (cache.recipe(head_loaded, model), head_loaded),
        )
        for model in models
    ]
