"""``provenance suggest RECIPE``: the smallest recipe edits that evidence backs, proven.

1. Audit the recipe (the baseline).
2. *Reach*: for each guide-only group and each validated evidence point in its scope
   whose shape the schema can express, build the edit that gives the group the point's
   flags (:mod:`.search`).
3. *Scope*: for each flag a variant writes for all its hardware, find the hardware
   where the evidence of some combination's own scope (hardware × deployment kind ×
   role: the baseline audit's flag provenance) sets it, leaving out combinations
   another recipe layer gives the flag to; where that is a strict subset, build the
   edit that moves the flag there (the generation block when it covers exactly
   those, else exact-id overrides; the first spelling proven is kept). A clean edit
   that only drops the flag where no evidence sets it is kept. Where the evidence
   splits *within* a kept hardware (by strategy, or, by the nearest evidence, by
   feature), no layer of the schema can follow it: say so (:class:`Inexpressible`).
4. Prove every candidate (:mod:`.proof`): apply it to a copy, re-render, re-audit,
   compare combination by combination. Only edits that render and help are kept. The
   proof also measures what each edit takes from combinations that did not ask for it
   (:mod:`.cost`: a feature forced on them, a flag the recipe writes taken from them;
   a flag dropped where a combination only inherits it and no in-scope evidence sets
   it is scoping, counted but no cost, so a scope edit can be proposed).
   A costed edit is dropped when another edit to the same evidence point costs
   strictly less (its scoped form); otherwise it is shown with its cost, never combined.
5. Combine the free ones (clean, no cost) greedily (most combinations gained first,
   smaller edits first), proving the combination again at each step: two edits that move the same
   flag out of a variant's list are merged (the flag written back only where both
   write it back); an edit whose addition makes the combination worse or cancels an
   earlier edit's gain is left out and reported as conflicting with it.
6. Name the runs behind each edit that simulated speculative acceptance.
7. Where nothing can reach evidence, name the benchmark that would have to exist.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from provenance.audit.index import EvidenceIndex
from provenance.audit.pipeline import (
    AuditFilters,
    AuditInputs,
    EvidenceCache,
    default_inputs,
    recipe_model_ids,
    run_audit,
)
from provenance.audit.verdicts import AuditReport, VerdictEntry
from provenance.errors import ProvenanceError
from provenance.model.reasons import ReasonCode, VerdictKind
from provenance.model.scope import EVIDENCE_ROLE, deployment_kind
from provenance.normalise.policy import load_policy
from provenance.recipes.enumerate.hardware import HardwareView, hardware_view
from provenance.recipes.load.loader import Recipe, RecipesRoot, load_recipe, load_recipes_root
from provenance.recipes.locate import FlagPlace, flag_places
from provenance.recipes.render.synthesis import model_id_of
from provenance.review.suggest.cost import (
    EditCost,
    RecipeChoices,
    simulated_acceptance,
)
from provenance.review.suggest.edits import (
    AddFlag,
    Edit,
    RemoveFlag,
    apply_edit,
    merge_edits,
    unified_diff,
)
from provenance.review.suggest.model import (
    EvidenceNeed,
    Inexpressible,
    Suggestion,
    SuggestReport,
    TargetRef,
)
from provenance.review.suggest.proof import Proof, Prover, reachable_points
from provenance.review.suggest.search import (
    Cell,
    Target,
    applies,
    by_canonical_key,
    candidate_edits,
    cells_of,
    targets,
    variant_hardware,
)
from provenance.safe_yaml import load_yaml

__all__ = ["SuggestRequest", "run_suggest"]

#: Most candidate edits proven (each is a re-render and a re-audit).
MAX_CANDIDATES = 24
#: Most suggestions combined into the final edit.
MAX_SUGGESTIONS = 6
#: Edits that gain but cost something, shown with exactly what they cost.
MAX_COSTLY = 2
#: Clean edits that take something from users (:mod:`.cost`), shown with that cost.
MAX_PRICED = 6


class SuggestRequest(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    recipe: str
    recipes_root: Path | None = None
    ledger: Path | None = None
    evidence: Path | None = None
    filters: AuditFilters = AuditFilters()


class _Proven(BaseModel):
    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    kind: str
    edit: Edit
    proof: Proof
    group: str
    title: str
    target: TargetRef | None = None
    #: the costs of a broader edit to the same evidence that this one avoids
    scoped_instead_of: tuple[EditCost, ...] = ()


def run_suggest(
    request: SuggestRequest, progress: Callable[[str], None] | None = None
) -> SuggestReport:
    """The suggestions for ``request``'s recipe; ``progress`` (the CLI's progress line)
    is told each phase."""
    say = progress or (lambda _message: None)
    resolved = default_inputs(
        AuditInputs(
            recipes=(request.recipe,),
            recipes_root=request.recipes_root,
            ledger=request.ledger,
            evidence=request.evidence,
        )
    )
    shared = EvidenceCache()
    inputs = AuditInputs(
        recipes=resolved.recipes,
        recipes_root=resolved.recipes_root,
        ledger=resolved.ledger,
        evidence=resolved.evidence,
    )
    say(f"auditing {request.recipe}")
    baseline = run_audit(inputs, request.filters, shared=shared)
    root = load_recipes_root(resolved.recipes_root)
    recipe = load_recipe(root, request.recipe)
    loaded = shared.load(
        resolved.ledger,
        resolved.evidence,
        recipe_model_ids([recipe]),
        load_policy(resolved.recipes_root),
    )
    text = recipe.path.read_text(encoding="utf-8")
    # verdicts name flags as the audit compares them (canonical keys, in context)
    places = by_canonical_key(
        flag_places(load_yaml(recipe.path).data), loaded.normaliser.policy.aliases.canonical
    )
    tokens = [t for found in places.values() for p in found for t in p.tokens]
    gpus = {
        hw: profile.gpu_count
        for hw, profile in (root.taxonomy.hardware_profiles or {}).items()
        if profile is not None and profile.gpu_count
    }
    relative = recipe.path.resolve().relative_to(resolved.recipes_root.resolve()).as_posix()
    hardware_of = variant_hardware(baseline)
    choices = RecipeChoices(places, recipe.spec.opt_in_features or (), _reaches(root))
    with Prover(
        resolved.recipes_root,
        recipe.path,
        resolved.ledger,
        resolved.evidence,
        request.filters,
        shared,
        baseline,
        reachable_points(loaded.graph, gpus),
        choices,
    ) as prover:
        say("re-auditing the edits that reach validated evidence")
        proven, tried = _reach(
            baseline, recipe, root, loaded.graph, gpus, places, tokens, text, prover, choices
        )
        say("re-auditing the edits that scope flags to the hardware evidence backs")
        scoped, inexpressible, tried_scope = _scope(
            baseline, recipe, root, places, hardware_of, text, prover
        )
        kept = _unsuperseded([*proven, *scoped])
        say("combining the proven edits and re-auditing the combination")
        chosen, conflicts, combined = _combine([i for i in kept if i.proof.free], text, prover)
    priced = sorted(
        (item for item in kept if item.proof.clean and item.proof.cost),
        key=lambda i: (-i.proof.gained, -i.proof.better, i.edit.size),
    )[:MAX_PRICED]
    costly = sorted(
        (item for item in kept if item.kind == "reach" and not item.proof.clean),
        key=lambda i: (-(i.proof.gained - i.proof.lost), i.proof.worse, i.edit.size),
    )[:MAX_COSTLY]
    graph = loaded.graph

    def suggestion(ident: str, item: _Proven, against: tuple[int, ...] = ()) -> Suggestion:
        return _suggestion(
            ident, item, text, relative, graph, tuple(f"S{at + 1}" for at in against)
        )

    shown: list[tuple[_Proven, tuple[int, ...]]] = [(item, ()) for item in chosen]
    shown += conflicts
    shown += [(item, ()) for item in (*priced, *costly)]
    suggestions = tuple(
        suggestion(f"S{index}", item, against) for index, (item, against) in enumerate(shown, 1)
    )
    combined_suggestion = None
    if combined is not None and len(chosen) > 1:
        combined_suggestion = suggestion("all", combined)
    return SuggestReport(
        recipe=recipe.hf_id,
        recipe_file=relative,
        combinations=baseline.summary.combinations,
        recommended=baseline.summary.recommended,
        candidates_proven=tried + tried_scope,
        suggestions=suggestions,
        combined=combined_suggestion,
        inexpressible=tuple(inexpressible),
        evidence_needed=tuple(_evidence_needed(baseline, recipe, root, chosen)),
    )


def _suggestion(
    ident: str,
    item: _Proven,
    text: str,
    relative: str,
    graph: EvidenceIndex,
    conflicts_with: tuple[str, ...] = (),
) -> Suggestion:
    edited = apply_edit(text, item.edit)
    aimed = (item.target.record,) if item.target is not None else ()
    return Suggestion(
        id=ident,
        kind="reach" if item.kind == "reach" else "scope",
        title=item.title,
        group=item.group,
        target=item.target,
        ops=item.edit.ops,
        changes=tuple(item.edit.describe()),
        proof=item.proof,
        scoped_instead_of=item.scoped_instead_of,
        simulated_acceptance=simulated_acceptance(graph, (*aimed, *item.proof.backed_by)),
        conflicts_with=conflicts_with,
        diff=unified_diff(text, edited, relative),
    )


def _reaches(root: RecipesRoot) -> Callable[[FlagPlace, tuple[object, ...], str], bool]:
    """Whether a recipe place reaches a combination (keyed as :mod:`.proof` keys it)."""
    views: dict[str, HardwareView] = {}

    def reaches(place: FlagPlace, combo: tuple[object, ...], role: str) -> bool:
        variant, hardware, strategy = (str(part or "") for part in combo[:3])
        features, modes = combo[6], combo[7]
        view = views.get(hardware)
        if view is None:
            view = views[hardware] = hardware_view(root.taxonomy, hardware)
        cell = Cell(
            variant,
            hardware,
            strategy,
            tuple(str(f) for f in features) if isinstance(features, tuple) else (),
            tuple((str(k), str(v)) for k, v in modes if v) if isinstance(modes, tuple) else (),
        )
        return applies(place, cell, role, view)

    return reaches


def _cost_ids(item: _Proven) -> frozenset[tuple[str, str, str]]:
    return frozenset((c.kind, c.flag, c.value) for c in item.proof.cost)


def _unsuperseded(items: Sequence[_Proven]) -> list[_Proven]:
    """``items`` without each costed edit that another edit to the same evidence point
    supersedes: one that gains too and costs strictly less (its costs a proper subset,
    and, when it is clean, so is the broader one or worse). The narrower edit keeps the
    costs it avoids, to say why it is the one shown."""
    kept: dict[int, _Proven] = dict(enumerate(items))
    for at, item in enumerate(items):
        costs = _cost_ids(item)
        if not costs or item.target is None:
            continue
        for other_at, other in enumerate(items):
            if (
                other_at == at
                or other.target is None
                or other.target.record != item.target.record
                or other.proof.gained == 0
                or not other.proof.clean >= item.proof.clean
                or not _cost_ids(other) < costs
            ):
                continue
            avoided = tuple(
                c for c in item.proof.cost if (c.kind, c.flag, c.value) not in _cost_ids(other)
            )
            narrower = kept[other_at]
            known = {(c.kind, c.flag, c.value) for c in narrower.scoped_instead_of}
            extra = tuple(c for c in avoided if (c.kind, c.flag, c.value) not in known)
            if extra:
                kept[other_at] = narrower.model_copy(
                    update={"scoped_instead_of": (*narrower.scoped_instead_of, *extra)}
                )
            kept.pop(at, None)
            break
    return list(kept.values())


def _prove(edit: Edit, text: str, prover: Prover) -> Proof | None:
    """The proof of ``edit``, or None when the edited recipe does not load or render."""
    try:
        edited = apply_edit(text, edit)
        if edited == text:
            return None
        proof, _ = prover.prove(edited, edit.touched_variants())
    except ProvenanceError:
        return None
    return proof


def _reach(
    baseline: AuditReport,
    recipe: Recipe,
    root: RecipesRoot,
    graph: EvidenceIndex,
    gpus: Mapping[str, int],
    places: Mapping[str, list[FlagPlace]],
    tokens: Sequence[str],
    text: str,
    prover: Prover,
    choices: RecipeChoices,
) -> tuple[list[_Proven], int]:
    found = targets(baseline, recipe, root, graph, gpus)
    found.sort(key=lambda t: (t.size, -t.entry.combinations, t.record.id))
    hardware_of = variant_hardware(baseline)
    seen: dict[Edit, Target] = {}
    for target in found:
        for edit in candidate_edits(target, places, root, hardware_of, tokens, choices):
            seen.setdefault(edit, target)
        if len(seen) >= MAX_CANDIDATES:
            break
    proven = []
    for edit, target in seen.items():
        proof = _prove(edit, text, prover)
        if proof is None or proof.gained == 0:
            continue
        record = target.record
        proven.append(
            _Proven(
                kind="reach",
                edit=edit,
                proof=proof,
                group=target.cell.label,
                title=f"match {record.config_key} ({', '.join(record.prs) or 'no PR'})",
                target=TargetRef(record=record.id, config_key=record.config_key, prs=record.prs),
            )
        )
    return proven, len(seen)


#: A strategy's standing on one hardware for a flag: its own in-scope evidence sets the
#: flag (True), has in-scope evidence none of which sets it (False), has none (None).
Standing = bool | None


def _cell_backing(
    baseline: AuditReport,
    variant: str,
    key: str,
    value: str,
    others: Sequence[FlagPlace],
    view: Callable[[str], HardwareView],
    cells: Callable[[VerdictEntry], list[Cell]] = cells_of,
) -> dict[str, dict[str, Standing]]:
    """hardware -> strategy -> :data:`Standing` of ``key=value``, read from the
    baseline audit's flag provenance: the evidence of each combination's own scope
    (checkpoint, hardware, deployment kind) in the role that runs the flag. Only the
    combinations of ``variant`` that take the flag from the variant's list alone count:
    one another recipe layer (``others``) also gives it to is left out, since moving
    the variant's flag changes nothing there (the pd_cluster override writes the FP8
    indexer for Blackwell)."""
    found: dict[str, dict[str, Standing]] = {}
    for entry in baseline.verdicts:
        roles = [
            (EVIDENCE_ROLE.get(role.role, role.role), bool(flag.evidence))
            for role in entry.roles
            for flag in role.flags
            if flag.key == key and flag.value == value
        ]
        if not roles:
            continue
        evidenced = not any(r.code is ReasonCode.NO_EVIDENCE for r in entry.reasons)
        for cell in cells(entry):
            if cell.variant != variant:
                continue
            hw = view(cell.hardware)
            for role, backed in roles:
                if any(applies(other, cell, role, hw) for other in others):
                    continue
                here: Standing = True if backed else (False if evidenced else None)
                strategies = found.setdefault(cell.hardware, {})
                held = strategies.get(cell.strategy)
                if cell.strategy not in strategies or held is None or here is True:
                    strategies[cell.strategy] = here
    return found


def _scope(
    baseline: AuditReport,
    recipe: Recipe,
    root: RecipesRoot,
    places: Mapping[str, list[FlagPlace]],
    hardware_of: Mapping[str, list[str]],
    text: str,
    prover: Prover,
) -> tuple[list[_Proven], list[Inexpressible], int]:
    """Scope each flag a variant writes for all its hardware to the hardware where the
    evidence of some combination's own scope sets it (:func:`_cell_backing`), each
    spelling of that scope proven in turn (the generation block, then exact ids), the
    first proven kept. Where a kept hardware has strategies whose evidence does not set
    the flag, no layer can follow: said when the scope edit is proposed, or, without
    one, when some strategy's evidence runs without the flag."""
    proven: list[_Proven] = []
    inexpressible: list[Inexpressible] = []
    tried = 0
    views: dict[str, HardwareView] = {}

    cells: dict[int, list[Cell]] = {}

    def view(hardware: str) -> HardwareView:
        found = views.get(hardware)
        if found is None:
            found = views[hardware] = hardware_view(root.taxonomy, hardware)
        return found

    def cells_once(entry: VerdictEntry) -> list[Cell]:
        found = cells.get(id(entry))
        if found is None:
            found = cells[id(entry)] = cells_of(entry)
        return found

    for key, found in places.items():
        for place in found:
            container = place.container
            if len(container) != 3 or container[0] != "variants":
                continue
            variant, section = str(container[1]), str(container[2])
            if section not in ("extra_args", "extra_env"):
                continue
            hws = hardware_of.get(variant, [])
            if len(hws) < 2 or place.value is None:
                continue
            others = [other for other in found if other is not place]
            backing = _cell_backing(baseline, variant, key, place.value, others, view, cells_once)
            if not backing:
                continue  # no combination takes it from this list alone (or not major)
            backed = [hw for hw in hws if any(backing.get(hw, {}).values())]
            unbacked = [hw for hw in hws if hw not in backed]
            split = {hw: backing[hw] for hw in backed if not all(backing[hw].values())}
            scoped = None
            edits = _scoping_edits(place, variant, section, backed, hws, root) if unbacked else []
            for edit in edits:
                tried += 1
                proof = _prove(edit, text, prover)
                if proof is None or not proof.clean:
                    continue
                if not (proof.better or proof.gained or proof.scoped):
                    continue
                where = ", ".join(backed) if backed else "nowhere"
                scoped = _Proven(
                    kind="scope",
                    edit=edit,
                    proof=proof,
                    group=f"{variant} · {key}={place.value}",
                    title=f"scope {key}={place.value} to where evidence sets it ({where})",
                )
                proven.append(scoped)
                break  # the same scope in another spelling adds nothing
            contradicted = any(
                standing is False
                for strategies in split.values()
                for standing in strategies.values()
            )
            if split and (scoped is not None or contradicted):
                dropped = unbacked if scoped is not None else []
                inexpressible.append(_strategy_split(variant, key, place.value, split, dropped))
            elif not unbacked:
                why = _split_within_hardware(baseline, recipe, variant, key)
                if why:
                    inexpressible.append(
                        Inexpressible(
                            variant=variant,
                            flag=key,
                            value=place.value,
                            backed=tuple(backed),
                            unbacked=(),
                            why=why,
                        )
                    )
    return proven, inexpressible, tried


def _strategy_split(
    variant: str,
    key: str,
    value: str,
    split: Mapping[str, Mapping[str, Standing]],
    dropped: Sequence[str],
) -> Inexpressible:
    """The part of a scoping no layer can express: on each hardware of ``split`` the
    evidence of some strategies sets the flag and that of others does not (or there is
    none)."""
    #: (strategies that set it, that run without it, that have no evidence) -> hardware
    alike: dict[tuple[tuple[str, ...], ...], list[str]] = {}
    for hw, strategies in split.items():
        sides = tuple(
            tuple(sorted(s for s, standing in strategies.items() if standing is side))
            for side in (True, False, None)
        )
        alike.setdefault(sides, []).append(hw)
    parts = []
    for (sets, lacks, none), hws in alike.items():
        part = f"on {_listed(hws)} the evidence of {_listed(sets)} sets it"
        if lacks:
            part += f", that of {_listed(lacks)} runs without it"
        if none:
            part += f", {_listed(none)} {'has' if len(none) == 1 else 'have'} no evidence"
        parts.append(part)
    kept = _listed(list(split))
    outcome = (
        f"the scope edit drops it from {_listed(dropped)} and keeps it for every strategy of {kept}"
        if dropped
        else f"it stays for every strategy of {kept}"
    )
    return Inexpressible(
        variant=variant,
        flag=key,
        value=value,
        backed=tuple(
            f"{hw} · {s}" for hw, strategies in split.items() for s, b in strategies.items() if b
        ),
        unbacked=tuple(
            f"{hw} · {s}"
            for hw, strategies in split.items()
            for s, b in strategies.items()
            if not b
        ),
        why=(
            "; ".join(parts) + ". A variant's hardware override reaches every strategy of its "
            "hardware (recipes-builder-spec §3.2 step 2b), while strategy_overrides apply to "
            "every variant and can only add args (steps 4-7): no layer gives this variant's "
            f"flag to some strategies of one hardware alone, so {outcome}"
        ),
    )


def _scoping_edits(
    place: FlagPlace,
    variant: str,
    section: str,
    backed: Sequence[str],
    hardware: Sequence[str],
    root: RecipesRoot,
) -> list[Edit]:
    """Move the flag at ``place`` to the ``backed`` hardware: exact-id blocks, and the
    generation block when ``backed`` is exactly the variant's hardware of one generation."""
    remove = RemoveFlag(path=place.container, flag=place.tokens[0].split("=", 1)[0])
    tokens = place.tokens if not place.is_env else (place.tokens[0], place.value or "")

    def add(block: str) -> AddFlag:
        path = ("variants", variant, "hardware_overrides", block, section)
        return AddFlag(path=path, tokens=tuple(tokens), env=place.is_env)

    edits = [Edit(ops=(remove, *(add(hw) for hw in backed)))]
    generations = {hw: hardware_view(root.taxonomy, hw).generation for hw in hardware}
    gens = {generations[hw] for hw in backed}
    if backed and len(gens) == 1:
        (gen,) = gens
        if gen and {hw for hw in hardware if generations[hw] == gen} == set(backed):
            edits.insert(0, Edit(ops=(remove, add(gen))))
    return edits


def _split_within_hardware(
    baseline: AuditReport, recipe: Recipe, variant: str, key: str
) -> str | None:
    """Why evidence that backs ``key`` on every hardware of ``variant`` still cannot be
    followed: on some hardware the nearest evidence of some groups has it and of others
    lacks it, and what separates them (strategy, features) is no scope a variant's flag
    can be given."""
    optional = set(recipe.spec.opt_in_features or ())
    #: hardware -> strategy -> lacking? -> optional features of each cell
    split: dict[str, dict[str, dict[bool, list[frozenset[str]]]]] = {}
    for entry in baseline.verdicts:
        # the nearest point of all, validated or not (as the proof measures distance)
        nearest = entry.nearest_overall or entry.nearest
        if entry.verdict is VerdictKind.RECOMMENDED or not nearest:
            continue
        if not any(f.key == key for role in entry.roles for f in role.flags):
            continue
        lacking = any(key in n.only_recipe for n in nearest)
        for cell in cells_of(entry):
            if cell.variant != variant:
                continue
            sides = split.setdefault(cell.hardware, {}).setdefault(
                cell.strategy, {True: [], False: []}
            )
            sides[lacking].append(frozenset(f for f in cell.features if f in optional))
    parts = []
    for hw, strategies in sorted(split.items()):
        has: list[str] = []
        lacks: list[str] = []
        for strategy, sides in sorted(strategies.items()):
            if sides[True] and sides[False]:
                only = sorted(set().union(*sides[True]) - set().union(*sides[False]))
                lacks.append(f"{strategy} with {'+'.join(only)}" if only else f"some {strategy}")
                has.append(f"{strategy} without {'+'.join(only)}" if only else f"some {strategy}")
            elif sides[True]:
                lacks.append(strategy)
            else:
                has.append(strategy)
        if has and lacks and not any(label.startswith("some ") for label in (*has, *lacks)):
            parts.append(
                f"on {hw} the nearest evidence sets it for {_listed(has)} and lacks it for "
                f"{_listed(lacks)}"
            )
    if not parts:
        return None
    return (
        "; ".join(parts) + ". A variant's args reach every strategy and feature of a hardware "
        "(recipes-builder-spec §3.2 steps 2a/2b), while strategy_overrides and features "
        "apply to every variant and can only add args (steps 4-7): no layer of the schema "
        "drops this variant's flag for some strategies or features of one hardware alone"
    )


def _listed(labels: Sequence[str], most: int = 6) -> str:
    shown = list(dict.fromkeys(labels))
    text = ", ".join(shown[:most])
    return text + (f" (+{len(shown) - most} more)" if len(shown) > most else "")


def _combine(
    items: Sequence[_Proven], text: str, prover: Prover
) -> tuple[list[_Proven], list[tuple[_Proven, tuple[int, ...]]], _Proven | None]:
    """The clean suggestions combined greedily, most gain first, the combination proven
    again after each addition (:func:`merge_edits`: two edits moving the same flag are
    merged, each value scoped to its hardware). An edit is kept when the combination stays
    clean, keeps every combination the edits before it made recommended, and gains more
    (or brings more closer, or scopes a flag away from more combinations); one that
    would make the combination worse or cancel an earlier edit's gain is left out, with
    the indices (into the chosen list) of the edits it conflicts with."""
    ranked = sorted(
        (i for i in items if i.proof.clean),
        key=lambda i: (-i.proof.gained, -i.proof.better, -_scoped(i.proof), i.edit.size),
    )
    chosen: list[_Proven] = []
    conflicts: list[tuple[_Proven, tuple[int, ...]]] = []
    combined: _Proven | None = None
    for item in ranked:
        if len(chosen) >= MAX_SUGGESTIONS:
            break
        if combined is None:
            chosen.append(item)
            combined = item
            continue
        edit = merge_edits([*(c.edit for c in chosen), item.edit])
        proof = _prove(edit, text, prover)
        before = combined.proof
        cancelled = _cancelled(before, proof)
        if proof is not None and proof.clean and not cancelled:
            if (proof.gained, proof.better, _scoped(proof)) > (
                before.gained,
                before.better,
                _scoped(before),
            ):
                chosen.append(item)
                combined = _Proven(
                    kind="reach",
                    edit=edit,
                    proof=proof,
                    group="all suggestions",
                    title="all together",
                )
            continue  # adds nothing the others do not already do
        conflicts.append((item, _conflicting(item, chosen, cancelled)))
    return chosen, conflicts, combined


def _scoped(proof: Proof) -> int:
    """The combinations a proof's scoping drops reach (summed over the flags dropped)."""
    return sum(flag.combinations for flag in proof.scoped)


def _cancelled(before: Proof, after: Proof | None) -> set[tuple[str, str, str]]:
    """The cells with fewer recommended combinations in ``after`` than in ``before``."""
    if after is None:
        return set()
    now = {(c.variant, c.hardware, c.strategy): c.combinations for c in after.gained_cells}
    return {
        (c.variant, c.hardware, c.strategy)
        for c in before.gained_cells
        if now.get((c.variant, c.hardware, c.strategy), 0) < c.combinations
    }


def _conflicting(
    item: _Proven, chosen: Sequence[_Proven], cancelled: set[tuple[str, str, str]]
) -> tuple[int, ...]:
    """The chosen edits ``item`` conflicts with: those whose gain it cancels, else those
    writing the same lists or maps, else all of them (their combination is what it
    makes worse)."""
    found = [
        at
        for at, other in enumerate(chosen)
        if any((c.variant, c.hardware, c.strategy) in cancelled for c in other.proof.gained_cells)
    ]
    if not found:
        paths = {op.path for op in item.edit.ops}
        found = [
            at for at, other in enumerate(chosen) if paths & {op.path for op in other.edit.ops}
        ]
    return tuple(found or range(len(chosen)))


def _evidence_needed(
    baseline: AuditReport, recipe: Recipe, root: RecipesRoot, chosen: Sequence[_Proven]
) -> list[EvidenceNeed]:
    """One line per variant × hardware × strategy no evidence reaches: the benchmark
    (checkpoint, deployment, major flags of its plainest combination) it would take."""
    reached = {
        (c.variant, c.hardware, c.strategy) for item in chosen for c in item.proof.gained_cells
    }
    cells: dict[tuple[str, str, str], tuple[int, VerdictEntry, str]] = {}
    counts: Counter[tuple[str, str, str]] = Counter()
    for entry in baseline.verdicts:
        if entry.verdict is VerdictKind.RECOMMENDED:
            continue
        codes = {r.code for r in entry.reasons}
        why = _need_reason(codes)
        if why is None:
            continue
        for cell in cells_of(entry):
            key = (cell.variant, cell.hardware, cell.strategy)
            if key in reached:
                continue
            weight = len(cell.features)
            held = cells.get(key)
            if held is None or weight < held[0]:
                cells[key] = (weight, entry, why)
        for selections in entry.selections:
            counts[(selections.variant, selections.hardware, selections.strategy or "")] += (
                selections.count
            )
    needs = []
    for (variant, hardware, strategy), (_, entry, why) in sorted(cells.items()):
        deploy = root.deploy_type(strategy) or "single_node"
        roles = [r.role for r in entry.roles]
        needs.append(
            EvidenceNeed(
                variant=variant,
                hardware=hardware,
                strategy=strategy,
                checkpoint=model_id_of(recipe, variant),
                deployment=deployment_kind(deploy, roles),
                combinations=counts[(variant, hardware, strategy)],
                why=why,
                flags={
                    role.role: tuple(f"{f.key}={f.value}" for f in role.flags)
                    for role in entry.roles
                },
            )
        )
    return needs


def _need_reason(codes: set[ReasonCode]) -> str | None:
    if ReasonCode.NO_EVIDENCE in codes:
        return "no evidence point in scope"
    unreachable = getattr(ReasonCode, "UNREACHABLE", None)
    if unreachable is not None and unreachable in codes:
        return "every evidence point in scope has a shape the recipe cannot render"
    return None
