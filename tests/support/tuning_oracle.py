"""The tuning comparison's oracle: every process of every selection rendered and
normalised whole on both sides, with no factoring and no shortcut."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from provenance.audit.normaliser import PolicyNormaliser
from provenance.audit.pipeline import AuditFilters, enumeration_options
from provenance.model.combination import Selection
from provenance.model.flags import FlagSet
from provenance.recipes.enumerate.selections import enumerate_selections
from provenance.recipes.load.loader import load_recipe, load_recipes_root
from provenance.recipes.render.synthesis import render

#: flag key -> every (before, after) value pair met
ValuePairs = dict[str, set[tuple[str | None, str | None]]]


def whole_changes(
    base_root: Path, head_root: Path, model: str, filters: AuditFilters
) -> tuple[Counter[str], ValuePairs]:
    """Selection by selection, ``model`` on both sides: the selections (present on both)
    in which each non-major flag changes, and every (before, after) pair of it."""
    normaliser = PolicyNormaliser()
    options = enumeration_options(filters)
    sides = []
    for root_path in (base_root, head_root):
        root = load_recipes_root(root_path)
        recipe = load_recipe(root, model)
        found: dict[Selection, dict[tuple[object, ...], FlagSet]] = {}
        for selection in enumerate_selections(recipe, root, options):
            result = render(recipe, root, selection)
            found[selection] = {
                (r.role, r.node_rank, r.instance, index): normaliser.non_major(r.argv or (), r.env)
                for index, r in enumerate(result.roles)
            }
        sides.append(found)
    counts: Counter[str] = Counter()
    pairs: ValuePairs = {}
    for selection, after in sides[1].items():
        before = sides[0].get(selection)
        if before is None:
            continue
        changed: set[str] = set()
        for name in before.keys() | after.keys():
            old, new = before.get(name, FlagSet()), after.get(name, FlagSet())
            for key in old.keys() | new.keys():
                if old.get(key) != new.get(key):
                    changed.add(key)
                    pairs.setdefault(key, set()).add((old.get(key), new.get(key)))
        counts.update(changed)
    return counts, pairs
