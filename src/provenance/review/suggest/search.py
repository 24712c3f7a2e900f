"""Candidate edits: from a guide-only group and a validated evidence point to a recipe edit.

For every guide-only verdict group the audit produced, each validated, fully extracted
evidence point in its scope whose deployment shape the schema can express is a
*target*. The per-role difference between the group's major flags and the target's
(flags only the recipe sets, flags only the evidence sets, values that differ) is
turned into the smallest edit the recipe schema offers for that cell:

* a flag only the recipe sets is dropped from every recipe list that writes it for
  this cell; when that list is a variant's ``extra_args`` (it reaches every hardware
  and strategy of the variant) a second candidate *moves* it instead: dropped there
  and written again into ``variants.<v>.hardware_overrides.<hw>`` for the variant's
  other hardware;
* a flag only the evidence sets is added at the narrowest layer that reaches the cell
  (``variants.<v>.hardware_overrides.<hw>`` for one process, the pd_cluster role's
  hardware override for one PD role);
* a different value is changed where it is written, or, for the single-node TP size,
  pinned with ``variants.<v>.tp.<hw>``.

A flag only the evidence sets that one of the recipe's opt-in features writes (the
evidence ran ``--language-model-only``, which ``text_only`` writes) is not only added:
added to a cell that did not select the feature it forces the feature on every user of
the cell (:mod:`.cost`). So each such edit comes with its scoped form first, the same
edit without that addition, which reaches the evidence through the combinations that
select the feature.

Placement flags the builder emits itself (pool sizes, DP ranks) are the user's
selection, not the recipe's: a target that needs them changed belongs to another
combination of the same recipe. Candidates are only proposals: :mod:`.proof` decides.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from provenance.audit.index import EvidenceIndex, IndexedRecord
from provenance.audit.judge.reachability import expressibility_problems
from provenance.audit.judge.roles import with_compared_defaults
from provenance.audit.verdicts import AuditReport, VerdictEntry
from provenance.model.flags import FlagSet
from provenance.model.reasons import ReasonCode, VerdictKind
from provenance.model.scope import EVIDENCE_ROLE, Scope, checkpoint_key, deployment_kind
from provenance.recipes.enumerate.hardware import HardwareView, hardware_view
from provenance.recipes.load.loader import Recipe, RecipesRoot
from provenance.recipes.locate import FlagPlace
from provenance.recipes.render.synthesis import model_id_of
from provenance.review.suggest.cost import RecipeChoices
from provenance.review.suggest.edits import AddFlag, Edit, EditOp, RemoveFlag, SetTp, flag_spelling

__all__ = [
    "Cell",
    "Target",
    "applies",
    "by_canonical_key",
    "candidate_edits",
    "cells_of",
    "targets",
    "variant_hardware",
]

#: Flags the parallelism emitter writes from the pool or node selection: a user's pick.
PLACEMENT = frozenset(
    {
        "tensor_parallel_size",
        "data_parallel_size",
        "pipeline_parallel_size",
        "enable_expert_parallel",
        "data_parallel_size_local",
        "data_parallel_start_rank",
        "nnodes",
        "node_rank",
    }
)
#: Most flag differences a target may have (a larger edit is no longer a suggestion).
MAX_DIFF = 6
#: Targets kept per group (nearest first).
TARGETS_PER_GROUP = 3


@dataclass(frozen=True)
class Cell:
    """The part of a selection that picks recipe layers: where a flag comes from."""

    variant: str
    hardware: str
    strategy: str
    features: tuple[str, ...]
    modes: tuple[tuple[str, str], ...]

    @property
    def label(self) -> str:
        extra = "".join(f" · +{f}" for f in self.features)
        return f"{self.variant} · {self.hardware} · {self.strategy}{extra}"


@dataclass(frozen=True)
class Target:
    """A guide-only group and a validated evidence point it could match after an edit."""

    entry: VerdictEntry
    cell: Cell
    record: IndexedRecord
    #: evidence role -> (only recipe, only evidence, changed: recipe value, evidence value)
    diff: tuple[tuple[str, dict[str, str], dict[str, str], dict[str, tuple[str, str]]], ...]
    size: int


@dataclass
class _Group:
    entries: list[VerdictEntry] = field(default_factory=list)


def cells_of(entry: VerdictEntry) -> list[Cell]:
    """The distinct cells of an entry's selections."""
    found: dict[Cell, None] = {}
    for selections in entry.selections:
        for choice in selections.features:
            modes = tuple(sorted((k, v) for k, v in choice.feature_modes.items() if v))
            found.setdefault(
                Cell(
                    selections.variant,
                    selections.hardware,
                    selections.strategy or "",
                    tuple(choice.features),
                    modes,
                ),
                None,
            )
    return list(found)


def by_canonical_key(
    places: Mapping[str, list[FlagPlace]], canonical: Callable[[str], str]
) -> dict[str, list[FlagPlace]]:
    """The recipe's flag places under the key the audit compares them by
    (``Policy.aliases.canonical``): a verdict's flags are in policy-effective terms, so an
    aliased knob the recipe spells ``env:X`` is found, dropped and changed as the one
    canonical flag its verdict names."""
    found: dict[str, list[FlagPlace]] = defaultdict(list)
    for key, listed in places.items():
        found[canonical(key)].extend(listed)
    return dict(found)


def _role_flags(entry: VerdictEntry) -> dict[str, FlagSet]:
    """Each evidence role's flags as the audit compared them (``Policy.effective``: the
    verdict's role flags are the combination key's, in context)."""
    roles: dict[str, FlagSet] = {}
    for role in entry.roles:
        name = EVIDENCE_ROLE.get(role.role, role.role)
        roles[name] = FlagSet({f.key: f.value for f in role.flags})
    return roles


def targets(
    report: AuditReport,
    recipe: Recipe,
    root: RecipesRoot,
    graph: EvidenceIndex,
    gpus_per_node: Mapping[str, int],
) -> list[Target]:
    """Every (guide-only group, usable evidence point) pair an edit could join."""
    found: list[Target] = []
    for entry in report.verdicts:
        if entry.verdict is VerdictKind.RECOMMENDED or entry.recipe != recipe.hf_id:
            continue
        if any(r.code is ReasonCode.NO_EVIDENCE for r in entry.reasons):
            continue
        cells = cells_of(entry)
        if not cells:
            continue
        cell = cells[0]
        roles = _role_flags(entry)
        deploy_type = root.deploy_type(cell.strategy) or "single_node"
        kind = deployment_kind(deploy_type, roles)
        model_id = model_id_of(recipe, cell.variant)
        scope = Scope(checkpoint_key(model_id), cell.hardware.lower(), kind)
        ranked: list[Target] = []
        for record in graph.in_scope(scope, model_id):
            if not record.validated or record.record.is_partial:
                continue
            if not set(roles) <= set(record.major):
                continue
            if expressibility_problems(record.record.topology, gpus_per_node.get(cell.hardware)):
                continue
            diff = []
            size = 0
            for role, flags in roles.items():
                only_recipe, only_evidence, changed = with_compared_defaults(
                    *flags.diff_parts(record.major[role])
                )
                if cell.strategy != "single_node_tp" and "tensor_parallel_size" in changed:
                    break
                if (set(only_recipe) | set(only_evidence) | set(changed)) & (
                    PLACEMENT - {"tensor_parallel_size"}
                ):
                    break
                size += len(only_recipe) + len(only_evidence) + len(changed)
                diff.append((role, only_recipe, only_evidence, changed))
            else:
                if 0 < size <= MAX_DIFF:
                    ranked.append(Target(entry, cell, record, tuple(diff), size))
        ranked.sort(key=lambda t: (t.size, t.record.id))
        found.extend(ranked[:TARGETS_PER_GROUP])
    return found


# --------------------------------------------------------------------------- layers


def _hardware_keys(hw: HardwareView) -> set[str]:
    keys = {hw.id}
    if hw.generation:
        keys.add(hw.generation)
    if hw.is_nvidia:
        keys.add("nvidia")
    brand = hw.brand_key
    if brand:
        keys.add(brand)
    keys.add("default")
    return keys


def applies(place: FlagPlace, cell: Cell, role: str, hw: HardwareView) -> bool:
    """Whether the list or map at ``place`` can reach ``cell``'s process of ``role``
    (an over-approximation: the proof re-renders)."""
    path = place.container
    if not path:
        return False
    keys = _hardware_keys(hw)
    if "hardware_overrides" in path:
        at = path.index("hardware_overrides")
        if at + 1 >= len(path) or path[at + 1] not in keys:
            return False
    head = path[0]
    if head == "model":
        return True
    if head == "hardware_overrides":
        return True
    if head == "variants":
        return len(path) > 1 and path[1] == cell.variant
    if head == "strategy_overrides":
        if len(path) < 2 or path[1] != cell.strategy:
            return False
        for pd_role in ("prefill", "decode"):
            if pd_role in path[2:3] and role != pd_role:
                return False
        return True
    if head == "features":
        if len(path) < 2 or path[1] not in cell.features:
            return False
        if "modes" in path:
            at = path.index("modes")
            mode = path[at + 1] if at + 1 < len(path) else None
            return (str(path[1]), str(mode)) in cell.modes
        return True
    return False


def _token_of(place: FlagPlace) -> str:
    return place.tokens[0].split("=", 1)[0] if not place.is_env else place.tokens[0]


def _removals(
    key: str, cell: Cell, role: str, hw: HardwareView, places: Mapping[str, list[FlagPlace]]
) -> list[tuple[FlagPlace, RemoveFlag]]:
    found = []
    for place in places.get(key, ()):
        if applies(place, cell, role, hw):
            found.append((place, RemoveFlag(path=place.container, flag=_token_of(place))))
    return found


def _add(
    key: str,
    value: str,
    cell: Cell,
    role: str,
    places: Mapping[str, list[FlagPlace]],
    all_tokens: Sequence[str],
) -> EditOp:
    if key.startswith("env:"):
        name = key[4:]
        if role in ("prefill", "decode"):
            path: tuple[str, ...] = (
                "strategy_overrides",
                cell.strategy,
                role,
                "hardware_overrides",
                cell.hardware,
                "extra_env",
            )
        else:
            path = ("variants", cell.variant, "hardware_overrides", cell.hardware, "extra_env")
        return AddFlag(path=path, tokens=(name, value), env=True)
    tokens = flag_spelling(key, all_tokens)
    if value == "true" and "." not in key:
        pass
    elif value == "false" and "." not in key:
        tokens = [tokens[0].replace("--", "--no-", 1)]
    else:
        tokens.append(value)
    if role in ("prefill", "decode"):
        path = ("strategy_overrides", cell.strategy, role, "hardware_overrides", cell.hardware)
        path = (*path, "extra_args")
    else:
        path = ("variants", cell.variant, "hardware_overrides", cell.hardware, "extra_args")
    return AddFlag(path=path, tokens=tuple(tokens))


def candidate_edits(
    target: Target,
    places: Mapping[str, list[FlagPlace]],
    root: RecipesRoot,
    variant_hardware: Mapping[str, Sequence[str]],
    all_tokens: Sequence[str],
    choices: RecipeChoices | None = None,
) -> list[Edit]:
    """The edits that would give ``target``'s cell the target's flags (one or two, each
    preceded by its scoped form when it forces a feature the cell did not select)."""
    cell = target.cell
    hw = hardware_view(root.taxonomy, cell.hardware)
    plain: list[EditOp] = []
    moved: list[EditOp] = []
    broad: list[tuple[FlagPlace, str]] = []
    forcing: set[EditOp] = set()
    for role, only_recipe, only_evidence, changed in target.diff:
        for key in only_recipe:
            removals = _removals(key, cell, role, hw, places)
            if not removals:
                return []  # emitted by the builder itself (or not written anywhere)
            for place, removal in removals:
                plain.append(removal)
                if place.container[:1] == ("variants",) and len(place.container) == 3:
                    broad.append((place, key))
        for key, value in only_evidence.items():
            op = _add(key, value, cell, role, places, all_tokens)
            if choices is not None and choices.forced_features(key, value, cell.features):
                forcing.add(op)
            plain.append(op)
        for key, (_, value) in changed.items():
            if key == "tensor_parallel_size":
                plain.append(SetTp(variant=cell.variant, hardware=cell.hardware, tp=int(value)))
                continue
            removals = _removals(key, cell, role, hw, places)
            if not removals:
                return []
            plain.extend(op for _, op in removals)
            plain.append(_add(key, value, cell, role, places, all_tokens))
    edits = [Edit(ops=_unique(plain))]
    others = [h for h in variant_hardware.get(cell.variant, ()) if h != cell.hardware]
    if broad and others:
        for op in plain:
            moved.append(op)
        for place, _ in broad:
            for other in others:
                moved.append(
                    AddFlag(
                        path=(
                            "variants",
                            cell.variant,
                            "hardware_overrides",
                            other,
                            place.container[2],
                        ),
                        tokens=place.tokens
                        if not place.is_env
                        else (place.tokens[0], place.value or ""),
                        env=place.is_env,
                    )
                )
        edits.append(Edit(ops=_unique(moved)))
    if not forcing:
        return edits
    scoped: list[Edit] = []
    for edit in edits:
        kept = tuple(op for op in edit.ops if op not in forcing)
        if kept and len(kept) < len(edit.ops):
            scoped.append(Edit(ops=kept))
        scoped.append(edit)
    return scoped


def _unique(ops: Iterable[EditOp]) -> tuple[EditOp, ...]:
    return tuple(dict.fromkeys(ops))


def variant_hardware(report: AuditReport) -> dict[str, list[str]]:
    """The hardware each variant was audited on, in first-seen order."""
    found: dict[str, dict[str, None]] = defaultdict(dict)
    for entry in report.verdicts:
        for selections in entry.selections:
            found[selections.variant].setdefault(selections.hardware, None)
    return {variant: list(hws) for variant, hws in found.items()}
