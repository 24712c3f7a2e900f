"""The audit pipeline: resolve the inputs, load recipes, ledger and evidence, run the walks.

The last step of the audit's flow (keys → judge → tally → walks → pipeline).
:func:`audit` runs one walk per recipe into a :class:`~provenance.audit.tally.Tally`
and assembles the report (verdict entries, reverse direction, claims, summary); the
rest is wiring (the default inputs — no RECIPE given, no ``--ledger``/``--evidence`` —
are resolved by :func:`default_inputs` alone). The decisions live in
:mod:`provenance.audit.judge`.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Collection, Generator, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, ParamSpec

from pydantic import BaseModel, ConfigDict

from provenance import __version__
from provenance.audit.claims import ClaimInputs, Coverage, claims_of, kv_connectors
from provenance.audit.declarations import REPO_DECLARATIONS_FILE, DeclarationMatcher, merged
from provenance.audit.index import EvidenceIndex
from provenance.audit.judge import ClassifyFn, Judge
from provenance.audit.normaliser import PolicyNormaliser, RoleNormaliser
from provenance.audit.reverse import reverse_entries
from provenance.audit.summary import cited_records, record_table, summarise
from provenance.audit.tally import Tally
from provenance.audit.verdicts import (
    AuditReport,
    Claim,
    RecipeError,
    ReverseEntry,
    VerdictEntry,
)
from provenance.audit.walks.cells import CellWalk, audit_cells
from provenance.audit.walks.selections import SelectionWalk
from provenance.errors import InputError, IntegrityError, UsageError
from provenance.model.combination import RenderResult, Selection
from provenance.model.ledger import Declarations, LedgerEntry, LedgerIdentity
from provenance.model.recipes_source import RecipesChoice
from provenance.normalise.policy import Policy, default_policy, load_policy
from provenance.recipes.enumerate.selections import EnumerationOptions, ShapeCell
from provenance.recipes.load.loader import Recipe, RecipesRoot

if TYPE_CHECKING:
    from provenance.recipes.render.synthesis import Renderer
    from provenance.store.evidence import EvidenceStore
    from provenance.store.ledger import Ledger


@dataclass(frozen=True)
class CellSource:
    """A recipe's cross-product, audited shape cell by shape cell (the fast path)."""

    recipe: Recipe
    root: RecipesRoot
    options: EnumerationOptions


@dataclass(frozen=True)
class RecipeInput:
    """One recipe to audit: identity, file, claims and its combinations.

    Either ``combinations`` (any iterable of rendered selections, judged one at a
    time) or ``cells`` (the recipe and enumeration options: rendered and judged by
    factors, see :mod:`provenance.audit.walks.cells`); both give the same report.
    """

    ref: str
    combinations: Iterable[tuple[Selection, RenderResult]] = ()
    cells: CellSource | None = None
    path: str | None = None
    verified_hardware: tuple[str, ...] = ()
    #: ``kv_offload_support`` keys the recipe marks ``verified``
    verified_kv: tuple[str, ...] = ()
    #: KV offload key -> the KV connector its ``--kv-transfer-config`` names
    kv_connectors: Mapping[str, str] = field(default_factory=dict)
    #: the checkpoints the recipe can select (:func:`recipe_model_ids`): the universe its
    #: claims are judged in (empty: every claim is in coverage)
    model_ids: frozenset[str] = frozenset()
    hardware_filter: tuple[str, ...] | None = None
    #: True when the enumeration was narrowed (variant, strategy, features, …): a verified
    #: hardware with no audited combination is then not reported as a claim.
    filtered: bool = False
    gpus_per_node: Mapping[str, int] = field(default_factory=dict)


#: An audit run one recipe at a time: it yields each recipe once audited, and returns
#: the report
AuditSteps = Generator[RecipeInput, None, AuditReport]


def finished(steps: AuditSteps) -> AuditReport:
    """Run ``steps`` to the end; their report."""
    while True:
        try:
            next(steps)
        except StopIteration as done:
            report: AuditReport = done.value
            return report


_P = ParamSpec("_P")


def _at_once(steps: Callable[_P, AuditSteps]) -> Callable[_P, AuditReport]:
    """An audit run one recipe at a time, as one call that returns the report."""

    def run(*args: _P.args, **kwargs: _P.kwargs) -> AuditReport:
        return finished(steps(*args, **kwargs))

    run.__doc__ = steps.__doc__
    return run


def audit_steps(
    recipes: Sequence[RecipeInput],
    graph: EvidenceIndex,
    normaliser: RoleNormaliser,
    declarations: Declarations | None = None,
    *,
    ledger: str | None = None,
    ledger_source: LedgerIdentity | None = None,
    notices: Sequence[str] = (),
    errors: Sequence[RecipeError] = (),
    classify: ClassifyFn | None = None,
    judges: dict[str, Judge] | None = None,
    is_classified: Callable[[str], bool] | None = None,
    shared: AuditMemos | None = None,
) -> AuditSteps:
    """Audit every combination of every recipe against ``graph``, one recipe at a time:
    yields each recipe once it is audited, returns the report (:func:`audit`: at once).
    Two audits sharing ``judges`` can so go recipe by recipe side by side (the PR
    audit's base and head), each recipe's judge and renderers freed as soon as both
    sides are done with it.

    ``judges`` (recipe ref -> :class:`Judge`) lets several audits against the same
    ``graph``, normaliser and ``classify`` share each recipe's judgement memos (the
    base and head of a pull request): missing judges are created and added to it.
    ``is_classified`` (the policy's) lets the summary list the unclassified environment
    variables that decided verdicts. ``shared`` (:class:`AuditMemos`) keeps what later
    passes over the same recipes reuse, and says when a judge is used for the last time.
    """
    matcher = DeclarationMatcher(declarations or Declarations())
    verdicts: list[VerdictEntry] = []
    reverse: list[ReverseEntry] = []
    claims: list[Claim] = []
    recipe_files: dict[str, str] = {}
    cited: set[str] = set()
    count = 0
    for recipe in recipes:
        # one Judge per recipe: recipes share no checkpoint scope worth memoising across,
        # and its memos are freed as soon as the recipe is done (unless ``judges`` keeps it).
        judge = judges.get(recipe.ref) if judges is not None else None
        if judge is None:
            judge = Judge(graph, classify or normaliser.classify, recipe.gpus_per_node)
            if judges is not None:
                judges[recipe.ref] = judge
        tally = Tally(recipe.ref, judge, matcher)
        walk: CellWalk | SelectionWalk = SelectionWalk(tally, normaliser)
        if recipe.cells is not None:
            cells = recipe.cells
            walk = audit_cells(tally, normaliser, cells.recipe, cells.root, cells.options)
            if shared is not None and isinstance(walk, CellWalk):
                shared.renderers[id(cells.recipe)] = (
                    cells.recipe,
                    KeptWalk(walk.renderer, cells.options, tuple(walk.cells)),
                )
        one_by_one = walk if isinstance(walk, SelectionWalk) else SelectionWalk(tally, normaliser)
        for selection, result in recipe.combinations:
            one_by_one.add(selection, result)
        count += tally.count
        verdicts.extend(tally.entries())
        cited |= cited_records(tally)
        reverse.extend(
            sorted(
                reverse_entries(tally, graph, recipe.gpus_per_node),
                key=lambda e: (e.config_key, e.record),
            )
        )
        claims.extend(
            claims_of(
                recipe.ref,
                ClaimInputs(recipe.verified_hardware, recipe.verified_kv, recipe.kv_connectors),
                tally,
                recipe.hardware_filter,
                recipe.filtered,
                _coverage(graph, recipe.model_ids, shared) if recipe.model_ids else None,
                matcher,
            )
        )
        if recipe.path:
            recipe_files[recipe.ref] = recipe.path
        if judges is not None and shared is not None and shared.last_use:
            judges.pop(recipe.ref, None)  # its last audit: free its memos now
        yield recipe
    return AuditReport(
        tool_version=__version__,
        recipes=tuple(r.ref for r in recipes),
        recipe_files=recipe_files,
        ledger=ledger,
        ledger_source=ledger_source,
        notices=tuple(notices),
        errors=tuple(errors),
        summary=summarise(verdicts, count, is_classified),
        records=record_table(cited, graph),
        verdicts=tuple(verdicts),
        reverse=tuple(reverse),
        claims=tuple(claims),
    )


#: :func:`audit_steps` at once: the report
audit = _at_once(audit_steps)


@dataclass(frozen=True, slots=True)
class KeptWalk:
    """A recipe's cell walk as an audit kept it: its renderer (its memos hold every
    process it rendered) and the cells it walked, enumerated with ``options``."""

    renderer: Renderer
    options: EnumerationOptions
    cells: tuple[ShapeCell, ...]


@dataclass
class AuditMemos:
    """What audits of the same recipes share beyond the evidence (the base and head of a
    pull request): each recipe's renderer, kept for a later pass over the same recipe
    objects (the PR audit's tuning comparison renders the same processes again), and
    each checkpoint set's :class:`Coverage` (a pure function of the graph and the
    checkpoints, the same for a recipe on both sides). ``last_use``: the audit is the
    judges' last (the head's), so each recipe's judge is dropped once it is audited."""

    #: id(recipe) -> the recipe (kept alive, so the id stays its) and its walk's renderer
    #: and cells
    renderers: dict[int, tuple[Recipe, KeptWalk]] = field(default_factory=dict)
    coverages: dict[tuple[int, frozenset[str]], tuple[EvidenceIndex, Coverage]] = field(
        default_factory=dict
    )
    last_use: bool = False

    def take(self, recipe: Recipe) -> KeptWalk | None:
        """What an audit kept for this very recipe object, if anything, no longer kept."""
        held = self.renderers.get(id(recipe))
        if held is None or held[0] is not recipe:
            return None
        del self.renderers[id(recipe)]
        return held[1]


def _coverage(
    graph: EvidenceIndex, model_ids: frozenset[str], shared: AuditMemos | None
) -> Coverage:
    """:meth:`Coverage.of`, once per graph and checkpoint set when ``shared``."""
    if shared is None:
        return Coverage.of(graph, model_ids)
    key = (id(graph), model_ids)
    held = shared.coverages.get(key)
    if held is None or held[0] is not graph:
        held = shared.coverages[key] = (graph, Coverage.of(graph, model_ids))
    return held[1]


class LoadedRecipes:
    """Recipes roots and recipes loaded once for every pass that reads the same files
    (the PR audit: scope checks, both audits and the tuning comparison), by the root's
    path as given and the recipe's ref. A file that does not load is not kept: the next
    caller loads it again and gets the same error."""

    def __init__(self) -> None:
        self._roots: dict[Path, RecipesRoot] = {}
        self._recipes: dict[tuple[Path, str], Recipe] = {}

    def root(self, path: Path) -> RecipesRoot:
        from provenance.recipes.load.loader import load_recipes_root

        found = self._roots.get(path)
        if found is None:
            found = self._roots[path] = load_recipes_root(path)
        return found

    def recipe(self, root: RecipesRoot, ref: str) -> Recipe:
        """``load_recipe(root, ref)``, once per root path and ref."""
        from provenance.recipes.load.loader import load_recipe

        key = (root.path, ref)
        found = self._recipes.get(key)
        if found is None or self._roots.get(root.path) is not root:
            found = load_recipe(root, ref)
            if self._roots.get(root.path) is root:
                self._recipes[key] = found
        return found


class AuditInputs(BaseModel):
    """Where the recipes, the ledger and the evidence store are."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    recipes: tuple[str, ...] = ()
    recipes_root: Path | None = None
    ledger: Path | None = None
    evidence: Path | None = None
    #: Report an invalid named RECIPE and audit the rest, as an audit of every recipe
    #: does (the PR audit: each changed recipe is audited on its own)
    report_invalid: bool = False
    #: Refuse filter names nothing can select (:func:`check_filter_names`); the PR audit
    #: checks them over both sides at once instead (a variant the PR adds is not a typo)
    check_filters: bool = True
    #: Per recipe (as named in ``recipes``), filters that replace the audit's: the PR audit
    #: narrows the recipes it does not touch to what a shared-file change can affect
    recipe_filters: dict[str, AuditFilters] = {}


class AuditFilters(BaseModel):
    """The enumeration filters of ``provenance combos`` (same meaning)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    variants: tuple[str, ...] | None = None
    hardware: tuple[str, ...] | None = None
    strategies: tuple[str, ...] | None = None
    features: str = "all"
    pd_nodes: str = "1,2,default"
    pd_pairing: str = "joint"
    kv: str = "off"


class ResolvedInputs(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    recipes: tuple[str, ...]
    recipes_root: Path
    #: how ``recipes_root`` was chosen (``--recipes-root``, the recipes checkout at or
    #: around the current directory, or the embedded one)
    recipes_how: RecipesChoice = "--recipes-root"
    ledger: Path
    evidence: Path
    #: True when no RECIPE was named (every recipe of the root) or the caller asked
    #: (``AuditInputs.report_invalid``): an invalid recipe is then reported and skipped
    #: instead of stopping the audit
    report_invalid: bool = False
    check_filters: bool = True
    recipe_filters: dict[str, AuditFilters] = {}


def default_inputs(inputs: AuditInputs) -> ResolvedInputs:
    """Fill in what the command line left out (the one place defaults are decided).

    Recipes root: ``--recipes-root``, else the recipes checkout at or around the current
    directory, else the embedded one (``provenance.recipes.source.default_recipes``); a
    named RECIPE the embedded root lacks is a usage error. Ledger and evidence:
    ``provenance.store.paths.default_dirs()`` (embedded too). With no RECIPE, every
    ``models/**/*.yaml`` of the recipes root is audited.
    """
    how: RecipesChoice = "--recipes-root"
    if inputs.recipes_root is not None:
        root = inputs.recipes_root
    else:
        from provenance.recipes.source import default_recipes, missing_recipe
        from provenance.store.paths import display_path

        found, how = default_recipes()
        root = display_path(found)
        for ref in inputs.recipes if how == "embedded" else ():
            error = missing_recipe(root, ref)
            if error is not None:
                raise error
    if not (root / "taxonomy.yaml").is_file():
        raise UsageError(
            f"no recipes root at {root} (taxonomy.yaml missing)",
            hint="pass --recipes-root DIR (a vllm-project/recipes checkout)",
        )
    recipes = inputs.recipes
    if not recipes:
        models = root / "models"
        recipes = tuple(
            str(p.relative_to(root))
            for p in sorted(models.glob("*/*.yaml"))
            if p.is_file() or p.is_symlink()
        )
        if not recipes:
            raise UsageError(f"no recipe given and none under {models}")
    ledger, evidence = ledger_dirs(inputs)
    return ResolvedInputs(
        recipes=recipes,
        recipes_root=root,
        recipes_how=how,
        ledger=ledger,
        evidence=evidence,
        report_invalid=not inputs.recipes or inputs.report_invalid,
        check_filters=inputs.check_filters,
        recipe_filters=inputs.recipe_filters,
    )


def ledger_dirs(inputs: AuditInputs) -> tuple[Path, Path]:
    """``--ledger`` and ``--evidence``, defaulting to ``default_dirs()``; both must exist."""
    from provenance.store.paths import default_dirs

    defaults = default_dirs()
    ledger = inputs.ledger or defaults.ledger
    if not ledger.is_dir():
        raise UsageError(f"--ledger {ledger} is not a directory", hint="pass --ledger DIR")
    evidence = inputs.evidence or defaults.evidence
    if not evidence.is_dir():
        raise UsageError(
            f"evidence directory {evidence} is missing (the evidence store of ledger {ledger})",
            hint="pass --evidence DIR, the evidence store the ledger was ingested with",
        )
    return ledger, evidence


def load_graph(
    ledger: Path,
    evidence: Path,
    normaliser: RoleNormaliser,
    model_ids: Collection[str] | None = None,
) -> tuple[EvidenceIndex, Declarations]:
    """The evidence index of the ledger and store, and the declarations.

    With ``model_ids``, only the records whose checkpoint one of them can select are
    loaded (through the store's checkpoint index, :mod:`provenance.store.record_index`);
    without, every record. Either way an entry citing a record the store lacks stops
    the audit (exit 4).
    """
    graph, declarations, _ = _load_graph(ledger, evidence, normaliser, model_ids)
    return graph, declarations


def _load_graph(
    ledger: Path,
    evidence: Path,
    normaliser: RoleNormaliser,
    model_ids: Collection[str] | None,
) -> tuple[EvidenceIndex, Declarations, int]:
    """:func:`load_graph`, and how many records the store holds."""
    from provenance.store.entry_cache import ParsedEntries
    from provenance.store.evidence import EvidenceStore
    from provenance.store.ledger import Ledger
    from provenance.store.record_index import load_scoped
    from provenance.store.verified import VerifiedRecords

    book = Ledger(ledger)
    store = EvidenceStore(evidence)
    # Dangling citations first: a deleted record is named with the entry citing it,
    # before the index (which would then also be stale) is checked.
    entries = book.entries(ParsedEntries.open())
    present = frozenset(store.ids())
    _refuse_dangling(book, store, entries, present)
    if model_ids is None:
        records = store.load_all(VerifiedRecords.open())
    else:
        records = load_scoped(store, model_ids, VerifiedRecords.open(), present).records
    versions = normaliser.versions if isinstance(normaliser, PolicyNormaliser) else None
    graph = EvidenceIndex.build(records.values(), entries, normaliser.role_major, versions)
    return graph, book.declarations(), len(present)


def recipe_model_ids(recipes: Iterable[Recipe]) -> frozenset[str]:
    """Every checkpoint the recipes can select: each ``model_id`` anywhere in them (the
    model's, each variant's, each omni task's and override's), and the renderer's
    fallbacks for a recipe that names none."""
    found: set[str] = {"unknown", "model"}

    def walk(value: object) -> None:
        if isinstance(value, dict):
            for key, item in value.items():
                if key == "model_id" and isinstance(item, str):
                    found.add(item)
                else:
                    walk(item)
        elif isinstance(value, list | tuple):
            for item in value:
                walk(item)

    for recipe in recipes:
        walk(recipe.spec.model_dump(mode="python"))
    return frozenset(found)


def _refuse_dangling(
    book: Ledger, store: EvidenceStore, entries: list[LedgerEntry], records: Collection[str]
) -> None:
    """An entry citing a record the store does not hold stops the audit (exit 4).

    Auditing without it would silently drop evidence the ledger says exists,
    as ``verify`` reports it ``dangling``. But a ledger read with a store that is not its
    own (``--ledger`` without its evidence directory) is a usage error (exit 2) that says
    so: :func:`provenance.store.embedded.foreign_evidence`.
    """
    from provenance.store.embedded import foreign_evidence

    for entry in entries:
        for record_id in entry.records:
            if record_id not in records:
                foreign = foreign_evidence(book.root, store.root, record_id, bool(records))
                if foreign is not None:
                    raise foreign
                raise IntegrityError(
                    f"{book.path_of(entry.pr)}: {entry.pr} cites evidence record {record_id}, "
                    f"which is missing from {store.root}",
                    hint="run `provenance verify`; re-ingest the PR to restore the record",
                )


def enumeration_options(filters: AuditFilters) -> EnumerationOptions:
    from provenance.recipes.enumerate.selections import EnumerationOptions

    return EnumerationOptions.model_validate(
        {
            "variants": filters.variants,
            "hardware": filters.hardware,
            "strategies": filters.strategies,
            "features": filters.features,
            "pd_nodes": filters.pd_nodes,
            "pd_pairing": filters.pd_pairing,
            "kv": filters.kv,
        }
    )


def gpus_per_node(root: RecipesRoot) -> dict[str, int]:
    """Hardware id -> GPUs per node, from the recipes taxonomy's hardware profiles."""
    return {
        hw_id: profile.gpu_count
        for hw_id, profile in (root.taxonomy.hardware_profiles or {}).items()
        if profile is not None and profile.gpu_count
    }


def recipe_error(exc: InputError) -> RecipeError:
    """An invalid recipe's :class:`InputError` as the report's located error."""
    where = exc.location
    if where is None:
        return RecipeError(path="", message=exc.message)
    return RecipeError(
        path=where.path, line=where.line, key_path=where.key_path, message=exc.message
    )


def check_filter_names(root: RecipesRoot, recipes: Iterable[Recipe], filters: AuditFilters) -> None:
    """Refuse a ``--variant``, ``--hardware`` or ``--strategy`` name that nothing can
    select: no variant of ``recipes``, no hardware profile of the taxonomy, no strategy.
    A typo would otherwise audit nothing and pass (exit 2, with the nearest names)."""
    known = {
        "variant": {name for r in recipes for name in (r.spec.variants or {})},
        "hardware": set(root.taxonomy.hardware_profiles or {}),
        "strategy": set(root.strategies),
    }
    given = {
        "variant": filters.variants,
        "hardware": filters.hardware,
        "strategy": filters.strategies,
    }
    for what, names in given.items():
        for name in names or ():
            if name in known[what]:
                continue
            near = difflib.get_close_matches(name, sorted(known[what]), n=3)
            raise UsageError(
                f"--{what} {name!r}: no such {what} "
                f"{'in the audited recipes' if what == 'variant' else 'in the recipes root'}",
                hint=(
                    f"did you mean {', '.join(repr(n) for n in near)}?"
                    if near
                    else f"choose from: {', '.join(sorted(known[what])) or 'none'}"
                ),
            )


def recipe_inputs(
    resolved: ResolvedInputs,
    filters: AuditFilters,
    errors: list[RecipeError] | None = None,
    loaded_recipes: LoadedRecipes | None = None,
) -> list[RecipeInput]:
    """The recipes to audit.

    Each recipe loads on its own: given ``errors`` and auditing every recipe or asked to
    (``report_invalid``), an invalid one is appended to ``errors`` as a
    :class:`RecipeError` and the rest are audited. Otherwise an invalid recipe (a
    named RECIPE fails fast) and always an invalid shared file (taxonomy, strategies,
    kv_store) raise the :class:`InputError` at once.
    """
    cache = loaded_recipes or LoadedRecipes()
    root = cache.root(resolved.recipes_root)
    options = enumeration_options(filters)
    gpus = gpus_per_node(root)
    inputs = []
    loaded = []
    for ref in resolved.recipes:
        try:
            loaded.append((cache.recipe(root, ref), resolved.recipe_filters.get(ref, filters)))
        except InputError as exc:
            if errors is None or not resolved.report_invalid:
                raise
            errors.append(recipe_error(exc))
    if resolved.check_filters and loaded:
        check_filter_names(root, [recipe for recipe, _ in loaded], filters)
    kv_of = kv_connectors(root.taxonomy.kv_offload or {})
    # one EnumerationOptions per distinct filters object (the audit's, or a recipe's own)
    options_of: dict[int, tuple[AuditFilters, EnumerationOptions]] = {
        id(filters): (filters, options)
    }
    for recipe, own in loaded:
        known = options_of.get(id(own))
        if known is None or known[0] is not own:
            known = options_of[id(own)] = (own, enumeration_options(own))
        options = known[1]
        meta_hardware = (recipe.spec.meta.hardware if recipe.spec.meta else None) or {}
        inputs.append(
            RecipeInput(
                ref=recipe.hf_id,
                cells=CellSource(recipe=recipe, root=root, options=options),
                path=str(recipe.path),
                verified_hardware=tuple(
                    hw for hw, claim in meta_hardware.items() if claim == "verified"
                ),
                verified_kv=tuple(
                    key
                    for key, claim in (recipe.spec.kv_offload_support or {}).items()
                    if claim == "verified"
                ),
                kv_connectors=kv_of,
                model_ids=recipe_model_ids((recipe,)),
                hardware_filter=own.hardware,
                # KV offload only adds combinations: it narrows nothing
                filtered=own.model_copy(update={"kv": "off"})
                != AuditFilters(hardware=own.hardware),
                gpus_per_node=gpus,
            )
        )
    return inputs


@dataclass
class LoadedEvidence:
    """A ledger and evidence store loaded once, with the normaliser and judges that go with
    them: audits sharing it (the base and head of a pull request) load the graph once and
    reuse the normaliser's and each recipe's judge memos."""

    ledger: Path
    evidence: Path
    normaliser: PolicyNormaliser
    graph: EvidenceIndex
    declarations: Declarations
    #: the checkpoints whose records ``graph`` holds
    model_ids: frozenset[str] = frozenset()
    #: how many records the store holds (in scope or not)
    stored: int = 0
    judges: dict[str, Judge] = field(default_factory=dict)
    memos: AuditMemos = field(default_factory=AuditMemos)


class EvidenceCache:
    """Loads the evidence graph on first use and hands it to every later audit of the same
    ``--ledger``/``--evidence`` whose checkpoints it holds (another pair of directories,
    or a recipe selecting another checkpoint, loads it afresh)."""

    def __init__(self) -> None:
        self._loaded: LoadedEvidence | None = None

    def load(
        self,
        ledger: Path,
        evidence: Path,
        model_ids: Collection[str],
        policy: Policy | None = None,
    ) -> LoadedEvidence:
        """The graph of ``ledger``/``evidence`` normalised under ``policy`` (the default
        policy when None); cached by the directories and the policy's digest."""
        policy = policy or default_policy()
        found = self._loaded
        wanted = frozenset(model_ids)
        if found is None or (found.ledger, found.evidence, found.normaliser.policy.digest) != (
            ledger,
            evidence,
            policy.digest,
        ):
            found = None
        elif not wanted <= found.model_ids:
            wanted |= found.model_ids
            found = None
        if found is None:
            normaliser = PolicyNormaliser(policy)
            graph, declarations, stored = _load_graph(ledger, evidence, normaliser, wanted)
            found = self._loaded = LoadedEvidence(
                ledger, evidence, normaliser, graph, declarations, wanted, stored
            )
        return found

    def normaliser(self) -> PolicyNormaliser:
        """The normaliser (and so the policy) of the loaded audits; a fresh one if none ran."""
        return self._loaded.normaliser if self._loaded is not None else PolicyNormaliser()

    def memos(self) -> AuditMemos:
        """What the loaded audits kept for later passes (:class:`AuditMemos`); empty if none
        ran."""
        return self._loaded.memos if self._loaded is not None else AuditMemos()


def run_audit_steps(
    inputs: AuditInputs,
    filters: AuditFilters,
    shared: EvidenceCache | None = None,
    *,
    loaded_recipes: LoadedRecipes | None = None,
    last_use: bool = False,
) -> AuditSteps:
    """Load everything, audit every combination, return the report, one recipe at a time
    (:func:`audit_steps`; :func:`run_audit`: at once): the inputs are read and the
    evidence loaded on the first step.

    With ``shared``, the evidence graph, normaliser, judges and :class:`AuditMemos` come
    from (and stay in) it; ``last_use``: this audit is their last, each recipe's judge is
    dropped once it is audited. ``loaded_recipes`` loads each recipe once for every
    pass that reads it.
    """
    from provenance.store.ledger import ledger_identity

    resolved = default_inputs(inputs)
    errors: list[RecipeError] = []
    recipes = recipe_inputs(resolved, filters, errors, loaded_recipes)
    model_ids = recipe_model_ids(r.cells.recipe for r in recipes if r.cells is not None)
    policy = load_policy(resolved.recipes_root)
    loaded = (shared or EvidenceCache()).load(resolved.ledger, resolved.evidence, model_ids, policy)
    declarations = loaded.declarations
    in_repo = resolved.recipes_root / REPO_DECLARATIONS_FILE
    if in_repo.is_file():
        from provenance.store.ledger import load_declarations

        declarations = merged(declarations, load_declarations(in_repo))
    notices = []
    if not loaded.stored:
        notices.append(f"no evidence records in {resolved.evidence}: nothing can be recommended")
    report = yield from audit_steps(
        recipes,
        loaded.graph,
        loaded.normaliser,
        declarations,
        ledger=str(resolved.ledger),
        ledger_source=ledger_identity(resolved.ledger),
        notices=notices,
        errors=errors,
        judges=loaded.judges,
        is_classified=loaded.normaliser.is_classified,
        # the same memo tables, with this audit's ``last_use``
        shared=replace(loaded.memos, last_use=last_use) if shared is not None else None,
    )
    from provenance.recipes.source import recipes_source

    source = recipes_source(resolved.recipes_root, resolved.recipes_how)
    return report.model_copy(update={"recipes_source": source})


#: :func:`run_audit_steps` at once: the report
run_audit = _at_once(run_audit_steps)


class SelectionSpec(BaseModel):
    """What ``provenance explain`` was told about the selection (unset = not constrained).

    ``features`` lists ``name`` or ``name=mode``; the selection must enable exactly
    these features (none when the list is empty). Unset pools prefer the builder's
    default pools; an unset node count prefers the smallest.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    recipe: str
    variant: str | None = None
    hardware: str | None = None
    strategy: str | None = None
    features: tuple[str, ...] = ()
    nodes: int | None = None
    prefill: tuple[int, str] | None = None
    decode: tuple[int, str] | None = None
    kv: str | None = None


def _wanted_features(spec: SelectionSpec) -> tuple[tuple[str, ...], dict[str, str]]:
    names: list[str] = []
    modes: dict[str, str] = {}
    for item in spec.features:
        name, _, mode = item.partition("=")
        names.append(name.strip())
        if mode.strip():
            modes[name.strip()] = mode.strip()
    return tuple(names), modes


def resolve_selection(recipe: object, root: object, spec: SelectionSpec) -> Selection:
    """The one reachable selection matching ``spec`` (UsageError when none or ambiguous)."""
    from provenance.recipes.enumerate.selections import EnumerationOptions, enumerate_with_ui
    from provenance.recipes.load.loader import Recipe, RecipesRoot

    assert isinstance(recipe, Recipe) and isinstance(root, RecipesRoot)
    names, modes = _wanted_features(spec)
    pd_nodes = {"1", "2", "default"}
    for pool in (spec.prefill, spec.decode):
        if pool is not None:
            pd_nodes.add(str(pool[0]))
    options = EnumerationOptions(
        variants=(spec.variant,) if spec.variant else None,
        hardware=(spec.hardware,) if spec.hardware else None,
        strategies=(spec.strategy,) if spec.strategy else None,
        features="all" if names else "none",
        pd_nodes=",".join(sorted(pd_nodes)),
        kv=spec.kv or "off",
    )
    matches = []
    for item in enumerate_with_ui(recipe, root, options):
        selection = item.selection
        if set(selection.features) != set(names):
            continue
        if any(selection.feature_modes.get(f) != m for f, m in modes.items()):
            continue
        if spec.nodes is not None and selection.pd is None and selection.node_count != spec.nodes:
            continue
        if spec.kv is not None and (selection.kv_offload or "off") != spec.kv:
            continue
        if selection.pd is not None:
            pools = ((spec.prefill, selection.pd.prefill), (spec.decode, selection.pd.decode))
            if any(
                want is not None and (have.nodes, have.parallelism) != want for want, have in pools
            ):
                continue
        matches.append(item)
    if not matches:
        raise UsageError(
            f"no reachable selection of {spec.recipe} matches the options",
            hint="check --variant/--hardware/--strategy/--feature against `provenance combos`",
        )
    shapes = {(m.selection.variant, m.selection.hardware, m.selection.strategy) for m in matches}
    if len(shapes) > 1:
        listed = ", ".join(" · ".join(str(p) for p in s) for s in sorted(shapes, key=str)[:6])
        raise UsageError(
            f"{len(shapes)} variant/hardware/strategy choices match: {listed}",
            hint="add --variant, --hardware and --strategy",
        )

    def preference(item: object) -> tuple[int, int, int]:
        from provenance.recipes.enumerate.selections import EnumeratedSelection

        assert isinstance(item, EnumeratedSelection)
        selection = item.selection
        return (
            0 if tuple(selection.features) == names else 1,
            0 if (selection.pd is None or item.ui.pd_default_pools) else 1,
            selection.node_count or 0,
        )

    return min(matches, key=preference).selection


def run_explain(inputs: AuditInputs, spec: SelectionSpec) -> object:
    """Resolve, render and explain one selection; returns an ``Explanation``."""
    from provenance.audit.explain import explain
    from provenance.recipes.load.loader import load_recipe, load_recipes_root
    from provenance.recipes.render.synthesis import render

    resolved = default_inputs(inputs.model_copy(update={"recipes": (spec.recipe,)}))
    root = load_recipes_root(resolved.recipes_root)
    recipe = load_recipe(root, spec.recipe)
    selection = resolve_selection(recipe, root, spec)
    result = render(recipe, root, selection)
    normaliser = PolicyNormaliser(load_policy(resolved.recipes_root))
    graph, declarations = load_graph(
        resolved.ledger, resolved.evidence, normaliser, recipe_model_ids([recipe])
    )
    return explain(
        recipe.hf_id,
        selection,
        result,
        graph,
        normaliser,
        declarations,
        gpus_per_node=gpus_per_node(root),
    )
