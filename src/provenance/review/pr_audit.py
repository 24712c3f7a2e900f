"""The diff-aware audit of a recipes pull request: base and head, read from git.

:func:`run_pr_audit` resolves both revisions, finds the recipes the PR touches
(all of them when ``taxonomy.yaml``, ``strategies/`` or ``kv_store/`` change),
writes the files each side needs into private temporary directories (from git
blobs — the user's work tree is never touched), audits both sides with the same
ledger and evidence (loaded once, with one normaliser and one judge per recipe
for both sides), and diffs the two audits. The two sides are audited recipe by recipe
(:func:`_side_by_side`): each recipe's file is loaded once per side, its base and head
are audited one after the other with one judge, the tuning comparison reads the
processes the two audits rendered, and the judge and renderers are freed before the
next recipe; ``tests/review/test_side_by_side.py`` checks the result equal to two
plain audits on real recipes PRs. When the PR changes only the contents
of some variants of one recipe, the base audits just those variants
(:func:`variant_change` says when the others cannot differ).

Each changed recipe is audited on its own on each side: one that does not load becomes
a located :class:`~provenance.audit.verdicts.RecipeError` naming ``<commit>:<path>``
and the others are audited and diffed as usual (the diff treats it as missing on that
side). A recipe invalid in the head blocks only when the PR touches it or breaks it (it
loaded in the base); one invalid on both sides that the PR does not touch is a notice.
An invalid shared file (taxonomy, strategies, kv_store) in the base is a notice (the
base is audited as empty); in the head it stops the PR audit, naming the revision.

The policy, aliases, context rules and declarations that judge both sides are the
base's (:data:`~provenance.review.revisions.JUDGING_FILES`): a PR cannot relax its own
gate. The head's changes to them are listed in the diff (``judging_changes``).
"""

from __future__ import annotations

import gc
import tempfile
from collections.abc import Callable, Generator, Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Generic, TypeVar

from pydantic import BaseModel, ConfigDict

from provenance.audit.pipeline import (
    AuditFilters,
    AuditInputs,
    EvidenceCache,
    LoadedRecipes,
    RecipeInput,
    check_filter_names,
    enumeration_options,
    recipe_error,
    run_audit_steps,
)
from provenance.audit.verdicts import AuditReport, RecipeError
from provenance.errors import InputError
from provenance.model.ledger import LedgerIdentity
from provenance.recipes.source import recipes_source
from provenance.review.diff import DiffReport, diff_reports
from provenance.review.introduced import recipes_without_evidence
from provenance.review.revisions import (
    SHARED_PREFIXES,
    ChangedRecipes,
    changed_recipes,
    judging_changes,
    materialise,
    model_paths,
)
from provenance.review.tuning import TuningChange, TuningComparison

if TYPE_CHECKING:
    from provenance.recipes.load.loader import Recipe, RecipesRoot

from provenance.sources.git import (
    Commit,
    Repo,
    changed_paths_between,
    open_repo,
    resolve_commit,
)


class PrAuditRequest(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    repo: Path
    base: str
    head: str
    ledger: Path | None = None
    evidence: Path | None = None
    filters: AuditFilters = AuditFilters()


class VariantChange(BaseModel):
    """A PR whose one recipe changes only inside some of its variants."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    recipe: str
    changed: frozenset[str]
    unchanged: frozenset[str]


class PrAuditResult(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    changed: ChangedRecipes
    #: The base audit. When the PR changes only some variants of one recipe (``narrowed``),
    #: it covers just those: the others are the head's (see :func:`variant_change`).
    base_report: AuditReport | None
    head_report: AuditReport | None
    narrowed: VariantChange | None = None
    diff: DiffReport


#: one side's audit, one recipe at a time: yields each recipe once audited, returns the
#: report (None: no recipe to audit)
_SideSteps = Generator[RecipeInput, None, AuditReport | None]
#: the base's, which returns its report and the error of an invalid shared file
_BaseSteps = Generator[RecipeInput, None, tuple[AuditReport | None, tuple[RecipeError, ...]]]


def _audit_side(
    present: list[str],
    commit: object,
    request: PrAuditRequest,
    filters: AuditFilters,
    workdir: Path,
    shared: EvidenceCache,
    recipe_filters: dict[str, AuditFilters] | None = None,
    loaded: LoadedRecipes | None = None,
    last_use: bool = False,
) -> _SideSteps:
    """Audit the model files ``present`` (materialised in ``workdir``) of ``commit``, one
    recipe at a time; an invalid one is in the report's ``errors``, named
    ``<commit>:<path>``."""
    assert isinstance(commit, Commit)
    if not present:
        return None
    try:
        report = yield from run_audit_steps(
            AuditInputs(
                recipes=tuple(present),
                recipes_root=workdir,
                ledger=request.ledger,
                evidence=request.evidence,
                report_invalid=True,
                check_filters=False,
                recipe_filters=recipe_filters or {},
            ),
            filters,
            shared,
            loaded_recipes=loaded,
            last_use=last_use,
        )
    except InputError as exc:
        if exc.location is not None:
            exc.location = replace(
                exc.location, path=_in_revision(exc.location.path, commit, workdir)
            )
        raise
    errors = tuple(
        error.model_copy(update={"path": _in_revision(error.path, commit, workdir)})
        for error in report.errors
    )
    source = recipes_source(request.repo, "--repo", commit=commit.hexsha)
    return _repo_relative(
        report.model_copy(update={"errors": errors, "recipes_source": source}), workdir
    )


def _audit_base(
    present: list[str],
    commit: Commit,
    request: PrAuditRequest,
    filters: AuditFilters,
    workdir: Path,
    shared: EvidenceCache,
    recipe_filters: dict[str, AuditFilters] | None = None,
    loaded: LoadedRecipes | None = None,
) -> _BaseSteps:
    """The base audit, one recipe at a time; an invalid shared file of the base (the PR may
    fix it) is a notice, not a failure: the base is then audited as empty, its error
    returned."""
    try:
        report = yield from _audit_side(
            present, commit, request, filters, workdir, shared, recipe_filters, loaded
        )
        return report, ()
    except InputError as exc:
        error = recipe_error(exc)
        if not error.path:
            error = error.model_copy(update={"path": f"{commit.hexsha[:12]}:"})
        return None, (error,)


def _scope_text(scope: SharedChange | None, prose: frozenset[str]) -> str | None:
    """What the report says about what was audited, when less than everything."""
    parts = [scope.describe()] if scope is not None else []
    if prose:
        parts.append(
            f"{len(prose)} changed recipe(s) differ in prose only (meta description, dates, "
            "title…; comments, layout): none of their combinations or claims can change, "
            "so they are not audited as changed"
        )
    return "; ".join(parts) or None


def _check_filters(filters: AuditFilters, sides: list[tuple[Path, list[str]]]) -> None:
    """:func:`check_filter_names` over both sides at once: a name either side can select
    is no typo (a variant the PR adds or removes). Costs a load only when a
    ``--variant``/``--hardware``/``--strategy`` filter is given."""
    from provenance.errors import ProvenanceError
    from provenance.recipes.load.loader import load_recipe, load_recipes_root

    if filters.variants is None and filters.hardware is None and filters.strategies is None:
        return
    roots = []
    recipes = []
    for root_dir, present in sides:
        try:
            root = load_recipes_root(root_dir)
        except ProvenanceError:
            continue  # the audit itself reports it, naming the revision
        roots.append(root)
        for model in present:
            try:
                recipes.append(load_recipe(root, model))
            except ProvenanceError:
                continue  # an invalid recipe: the audit reports it
    if not roots:
        return
    union = replace(
        roots[0],
        taxonomy=roots[0].taxonomy.model_copy(
            update={
                "hardware_profiles": {
                    name: profile
                    for root in roots
                    for name, profile in (root.taxonomy.hardware_profiles or {}).items()
                }
            }
        ),
        strategies={name: s for root in roots for name, s in root.strategies.items()},
    )
    if not recipes:  # no recipe to filter: only the names the roots know are checked
        filters = filters.model_copy(update={"variants": None})
    check_filter_names(union, recipes, filters)


def _untouched_invalid(
    base_report: AuditReport | None, changed: ChangedRecipes, label: str
) -> frozenset[str]:
    """Repository paths of the recipes invalid in the base that the PR does not touch:
    still invalid in the head, they are not this PR's doing (a notice, not a block)."""
    if base_report is None:
        return frozenset()
    prefix = f"{label}:"
    return frozenset(
        error.path.removeprefix(prefix)
        for error in base_report.errors
        if error.path.startswith(prefix) and error.path.removeprefix(prefix) not in changed.models
    )


def _in_revision(path: str, commit: Commit, workdir: Path) -> str:
    """A file of the private copy in ``workdir`` named ``<commit>:<path>`` (the copy is
    gone once the audit returns); any other path as it is."""
    if not path.startswith(str(workdir)):
        return path
    rel = path[len(str(workdir)) :].lstrip("/")
    return f"{commit.hexsha[:12]}:{rel}"


def _ledger_source(request: PrAuditRequest, report: AuditReport | None) -> LedgerIdentity:
    """Which ledger the PR was audited against (also when no recipe changed)."""
    if report is not None and report.ledger_source is not None:
        return report.ledger_source
    from provenance.store.ledger import ledger_identity
    from provenance.store.paths import default_dirs

    return ledger_identity(request.ledger or default_dirs().ledger)


def _repo_relative(report: AuditReport, workdir: Path) -> AuditReport:
    """The report with each recipe file named by its path in the repository (the private
    copy in ``workdir`` is gone once the audit returns) and its text kept in
    ``recipe_texts`` for the outputs that point at lines (SARIF)."""
    files: dict[str, str] = {}
    texts: dict[str, str] = {}
    for recipe, path in report.recipe_files.items():
        copy = Path(path)
        try:
            files[recipe] = copy.resolve().relative_to(workdir.resolve()).as_posix()
        except ValueError:
            files[recipe] = path
            continue
        texts[recipe] = copy.read_text(encoding="utf-8")
    return report.model_copy(update={"recipe_files": files, "recipe_texts": texts})


def variant_change(base_root: Path, head_root: Path, model: str) -> VariantChange | None:
    """Which variants of ``model`` differ between the two materialised recipes roots, when
    nothing else can differ for the other variants; None when the whole recipe must be
    audited on both sides.

    The combinations of a variant depend on the recipe's other variants only through
    ``some_variant_runs`` (is a hardware offered at all) and the ``default`` variant
    (the fallback of a missing one). So when the two recipe files are equal apart from
    the contents of some variants (same variant names, in the same order; ``default``
    unchanged) and the shared files are the same (the caller checks), and every
    hardware is offered by some variant on both sides alike, the other variants'
    combinations render, judge and declare identically on both sides.
    ``tests/review/test_pr_narrowing.py`` checks the diff equal to the full one.
    """
    from provenance.errors import ProvenanceError
    from provenance.recipes.enumerate.hardware import hardware_view
    from provenance.recipes.enumerate.rules import some_variant_runs
    from provenance.recipes.load.loader import load_recipe, load_recipes_root

    try:
        loaded = load_recipes_root(base_root)
        # the shared files are the same on both sides (the caller's condition)
        roots = loaded, replace(loaded, path=head_root)
        base, head = load_recipe(roots[0], model), load_recipe(roots[1], model)
    except ProvenanceError:
        return None  # the audit itself reports it, naming the revision
    before, after = base.spec.variants or {}, head.spec.variants or {}
    if base.hf_id != head.hf_id or list(before) != list(after):
        return None
    if base.spec.model_copy(update={"variants": None}) != head.spec.model_copy(
        update={"variants": None}
    ):
        return None
    changed = frozenset(name for name in before if before[name] != after[name])
    if "default" in changed or not changed:
        return None
    taxonomy = roots[0].taxonomy
    for hardware in taxonomy.hardware_profiles:
        view = hardware_view(taxonomy, hardware)
        if some_variant_runs(roots[0], base.spec, view) != some_variant_runs(
            roots[1], head.spec, view
        ):
            return None
    return VariantChange(recipe=base.hf_id, changed=changed, unchanged=frozenset(before) - changed)


class SharedChange(BaseModel):
    """What a PR's change to the shared files can affect, when that is less than every
    combination: the hardware profiles of ``taxonomy.yaml`` it changes (the rest of the
    taxonomy, ``strategies/`` and ``kv_store/`` equal), or the strategies it changes in
    ``strategies/`` or in the taxonomy's ``strategies`` list (the rest of the taxonomy and
    ``kv_store/`` equal)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    hardware: frozenset[str] | None = None
    strategies: frozenset[str] | None = None
    #: the KV offload options (taxonomy ``kv_offload``, through ``kv_offload_groups``)
    #: and ``kv_store/`` ids it changes: only combinations with one of them can change
    kv: frozenset[str] | None = None

    def narrow(self, filters: AuditFilters) -> AuditFilters:
        """``filters`` limited to what the change can affect."""
        update: dict[str, object] = {}
        if self.kv is not None:
            ids = set(self.kv)
            if filters.kv == "off":
                ids = set()
            elif filters.kv != "all":
                ids &= {k.strip() for k in filters.kv.split(",")}
            update["kv"] = "only:" + ",".join(sorted(ids))
        if self.hardware is not None:
            wanted = filters.hardware
            update["hardware"] = tuple(
                sorted(h for h in self.hardware if wanted is None or h in wanted)
            )
        if self.strategies is not None:
            wanted = filters.strategies
            update["strategies"] = tuple(
                sorted(s for s in self.strategies if wanted is None or s in wanted)
            )
        return filters.model_copy(update=update)

    def describe(self) -> str:
        names: frozenset[str] | None
        if self.kv is not None:
            what, names, how = "the shared files change KV offload options", self.kv, "on"
            where = "combinations with those"
        elif self.hardware is not None:
            what, names, how = "taxonomy.yaml changes hardware profiles", self.hardware, "on"
            where = "those profiles"
        else:
            what, names, how = "the shared files change strategies", self.strategies, "with"
            where = "those strategies"
        listed = ", ".join(sorted(names or ())) or "none"
        return (
            f"{what} only ({listed}): the recipes this PR does not touch are audited {how} "
            f"{where} only (no other combination can change)"
        )


def _kv_change(base: RecipesRoot, head: RecipesRoot) -> SharedChange | None:
    """The KV offload ids a change limited to the taxonomy's ``kv_offload`` and
    ``kv_offload_groups`` and to ``kv_store/`` touches; None when anything else changed
    (or nothing KV did)."""
    kv_fields = ("kv_offload", "kv_offload_groups")
    others = [f for f in type(base.taxonomy).model_fields if f not in kv_fields]
    if any(getattr(base.taxonomy, f) != getattr(head.taxonomy, f) for f in others):
        return None
    if base.strategies != head.strategies:
        return None
    before, after = base.taxonomy.kv_offload or {}, head.taxonomy.kv_offload or {}
    changed = {k for k in before.keys() | after.keys() if before.get(k) != after.get(k)}
    groups_before = base.taxonomy.kv_offload_groups or {}
    groups_after = head.taxonomy.kv_offload_groups or {}
    for group in groups_before.keys() | groups_after.keys():
        if groups_before.get(group) != groups_after.get(group):
            changed |= {
                k
                for k, option in (*before.items(), *after.items())
                if option is not None and option.group == group
            }
    stores = {
        k
        for k in base.kv_store.keys() | head.kv_store.keys()
        if base.kv_store.get(k) != head.kv_store.get(k)
    }
    if not changed and not stores:
        return None
    return SharedChange(kv=frozenset(changed | stores))


def _listed_strategy_change(
    before: list[str] | None, after: list[str] | None
) -> frozenset[str] | None:
    """The strategies added to or removed from the taxonomy's ``strategies`` list; None
    when the names both sides list changed order (that may change more than they)."""
    before, after = before or [], after or []
    kept = set(before) & set(after)
    if [s for s in before if s in kept] != [s for s in after if s in kept]:
        return None
    return frozenset(set(before) ^ set(after))


def shared_change(
    base_root: Path, head_root: Path, loaded: LoadedRecipes | None = None
) -> SharedChange | None:
    """What the shared-file change between the two materialised roots can affect, when it
    is limited to some hardware profiles or to some strategies; None when it may affect
    any combination (or a side does not load: the audit reports it).

    A combination on hardware H renders from H's profile and never another's, and one of
    strategy S from S's file and never another's: ``tests/review/test_shared_narrowing.py``
    checks the narrowed diff equal to the full one on the real recipes history."""
    from provenance.errors import ProvenanceError

    cache = loaded or LoadedRecipes()
    try:
        base, head = cache.root(base_root), cache.root(head_root)
    except ProvenanceError:
        return None
    kv = _kv_change(base, head)
    if kv is not None:
        return kv
    if base.kv_store != head.kv_store:
        return None
    before = base.taxonomy.hardware_profiles or {}
    after = head.taxonomy.hardware_profiles or {}
    profiles = frozenset(h for h in before.keys() | after.keys() if before.get(h) != after.get(h))
    strategies = frozenset(
        name
        for name in base.strategies.keys() | head.strategies.keys()
        if base.strategies.get(name) != head.strategies.get(name)
    )
    # The taxonomy's ``strategies`` list names strategies; only theirs can change.
    listed = _listed_strategy_change(base.taxonomy.strategies, head.taxonomy.strategies)
    if listed is None:
        return None
    strategies |= listed
    blank: dict[str, object] = {"hardware_profiles": {}, "strategies": None}
    rest_equal = base.taxonomy.model_copy(update=blank) == head.taxonomy.model_copy(update=blank)
    if not rest_equal or (profiles and strategies):
        return None
    if strategies:
        return SharedChange(strategies=strategies)
    return SharedChange(hardware=profiles)


#: ``meta`` fields the recipes site shows as prose, never in a command or a claim
DOCUMENTATION_META = (
    "title",
    "slug",
    "provider",
    "description",
    "date_added",
    "date_updated",
    "difficulty",
    "performance_headline",
    "related_recipes",
)


def documentation_only(
    base_root: Path, head_root: Path, models: list[str], loaded: LoadedRecipes | None = None
) -> frozenset[str]:
    """The ``models`` that differ between the two materialised roots only in their prose
    (:data:`DOCUMENTATION_META`, comments, formatting): none of their combinations,
    verdicts or claims can change. A recipe either side cannot load is not among them (the
    audit reports it); nor is any when a root does not load."""
    from provenance.errors import ProvenanceError

    if not models:
        return frozenset()
    cache = loaded or LoadedRecipes()
    try:
        roots = cache.root(base_root), cache.root(head_root)
    except ProvenanceError:
        return frozenset()

    def audited(recipe: Recipe) -> object:
        spec = recipe.spec
        if spec.meta is None:
            return spec
        blank = dict.fromkeys(DOCUMENTATION_META)
        return spec.model_copy(update={"meta": spec.meta.model_copy(update=blank)})

    found = set()
    for model in models:
        try:
            base, head = cache.recipe(roots[0], model), cache.recipe(roots[1], model)
        except ProvenanceError:
            continue
        if base.hf_id == head.hf_id and audited(base) == audited(head):
            found.add(model)
    return frozenset(found)


def declared_kv_offload(
    root: Path, models: list[str], loaded: LoadedRecipes | None = None
) -> set[str]:
    """The KV offload keys the recipes ``models`` (materialised in ``root``) declare in
    ``kv_offload_support`` (any value but ``unsupported``)."""
    from provenance.errors import ProvenanceError

    if not models:
        return set()
    cache = loaded or LoadedRecipes()
    try:
        recipes_root = cache.root(root)
    except ProvenanceError:
        return set()  # the audit itself reports it, naming the revision
    specs = []
    for model in models:
        try:
            specs.append(cache.recipe(recipes_root, model).spec)
        except ProvenanceError:
            continue  # an invalid recipe: the audit reports it, the others count
    return {
        key
        for spec in specs
        for key, support in (spec.kv_offload_support or {}).items()
        if support != "unsupported"
    }


def _with_kv(filters: AuditFilters, declared: set[str]) -> AuditFilters:
    """``filters`` enumerating the declared KV offload choices too, when the request left
    KV offload at its default (off): a PR that declares KV offload support exposes those
    combinations, so both sides must audit them."""
    if not declared or filters.kv != "off":
        return filters
    return filters.model_copy(update={"kv": ",".join(sorted(declared))})


def _loaded(report: AuditReport | None) -> set[str]:
    """The recipe files (repository paths) the side's audit loaded: not the invalid ones."""
    return set(report.recipe_files.values()) if report is not None else set()


class _Tuning:
    """The tuning comparison (``review/tuning.py``) run while both sides are audited: each
    recipe valid on both sides is compared as soon as its head is audited, with the
    renderers both audits kept for it (its processes are rendered once per side, for the
    audit and the comparison alike), which are then freed. With the audit's policy; only
    in the variants that can differ when the PR is ``narrowed``."""

    def __init__(
        self,
        filters: AuditFilters,
        narrowed: VariantChange | None,
        shared: EvidenceCache,
        recipe_filters: dict[str, AuditFilters],
    ) -> None:
        self.filters = filters
        self.narrowed = narrowed
        self.shared = shared
        self.recipe_filters = recipe_filters
        self.comparison: TuningComparison | None = None

    def __call__(self, base: RecipeInput, head: RecipeInput) -> None:
        """Compare a recipe audited on both sides."""
        if base.cells is None or head.cells is None:
            return
        if self.comparison is None:  # the evidence is loaded: its normaliser is the audit's
            narrowed = self.narrowed
            self.comparison = TuningComparison(
                enumeration_options(self.filters),
                self.shared.normaliser(),
                {narrowed.recipe: narrowed.changed} if narrowed is not None else None,
                {model: enumeration_options(f) for model, f in self.recipe_filters.items()},
            )
        memos = self.shared.memos()
        before, after = base.cells, head.cells
        self.comparison.add(
            (before.recipe, before.root),
            (after.recipe, after.root),
            (memos.take(before.recipe), memos.take(after.recipe)),
        )

    def changes(self) -> tuple[TuningChange, ...]:
        return self.comparison.changes() if self.comparison is not None else ()


_T = TypeVar("_T")


class _Steps(Generic[_T]):
    """A side's audit steps, with the recipe it audited last and, once done, its result."""

    def __init__(self, steps: Generator[RecipeInput, None, _T]) -> None:
        self.steps = steps
        self.current: RecipeInput | None = None
        self.result: _T | None = None
        self.done = False

    def advance(self) -> None:
        try:
            self.current = next(self.steps)
        except StopIteration as stop:
            self.current, self.result, self.done = None, stop.value, True

    def key(self) -> str | None:
        """The recipe file audited last, relative to its recipes root."""
        cells = self.current.cells if self.current is not None else None
        if cells is None:
            return None
        return cells.recipe.path.relative_to(cells.root.path).as_posix()


def _side_by_side(
    base: _Steps[_T],
    head: _Steps[AuditReport | None],
    both: Callable[[RecipeInput, RecipeInput], None],
) -> None:
    """Run both audits recipe by recipe, each recipe on the base first, then on the head,
    and tell ``both`` each recipe audited on both sides as soon as it is: a recipe's judge
    serves both sides and is then dropped, and its renderers serve the tuning comparison
    and are then dropped, instead of every recipe's staying in memory until the head is
    done (recipes #828: 350 MB). Both sides list their recipe files sorted, so a merge
    by file keeps each side's order and meets each recipe of both sides once."""
    base.advance()
    head.advance()
    while not (base.done and head.done):
        before, after = base.key(), head.key()
        if before is not None and before == after:
            assert base.current is not None and head.current is not None
            both(base.current, head.current)
            base.advance()
            head.advance()
        elif head.done or (
            not base.done and (before is None or (after is not None and before < after))
        ):
            base.advance()  # a recipe the head lacks (or not yet reached)
        else:
            head.advance()  # a recipe the base lacks


def _reading(repo: Repo, base: Commit, head: Commit, changed: ChangedRecipes, models: int) -> str:
    """The progress line that says what the PR audit reads, and why every recipe when a
    shared file changed."""
    if not changed.shared_changed:
        return f"auditing {len(changed.models)} changed recipe(s) on both sides"
    shared = sorted(
        path if path == "taxonomy.yaml" else path.split("/", 1)[0] + "/"
        for path in changed_paths_between(repo, base, head)
        if path.startswith(SHARED_PREFIXES)
    )
    return (
        f"{', '.join(dict.fromkeys(shared))} changed: auditing all {models} recipes on both sides"
    )


@contextmanager
def _long_lived_objects() -> Iterator[None]:
    """No full (oldest-generation) garbage collection while the PR audit runs; young
    collections go on, and the thresholds are restored after.

    The audit builds millions of objects that live until it returns (both reports, the
    evidence graph, the judges' memos) and makes next to no cyclic garbage. Each full
    collection walks all of them again: on recipes #828 (every recipe re-audited on both
    sides) 22 full collections were 40% of the CPU, and disabling them left the peak RSS
    the same (docs/performance.md, "Replay of the recipes history")."""
    thresholds = gc.get_threshold()
    gc.set_threshold(thresholds[0], thresholds[1], 1_000_000)
    try:
        yield
    finally:
        gc.set_threshold(*thresholds)


def run_pr_audit(
    request: PrAuditRequest, progress: Callable[[str], None] | None = None
) -> PrAuditResult:
    """Audit both sides of the pull request and diff them; ``progress`` (the CLI's
    progress line) is told each phase, first what is read and why."""
    repo = open_repo(request.repo)
    base = resolve_commit(repo, request.base)
    head = resolve_commit(repo, request.head)
    changed = changed_recipes(repo, base.hexsha, head.hexsha)
    if changed.shared_changed:
        base_models, head_models = model_paths(base), model_paths(head)
    else:
        base_models = head_models = list(changed.models)
    if progress is not None:
        progress(_reading(repo, base, head, changed, len({*base_models, *head_models})))
    # One evidence graph, normaliser and set of judges for both sides: the head's
    # combinations are mostly the base's, so its judgements are memo hits. Each side's
    # recipes are loaded once, for the scope checks, the audit and the tuning comparison.
    shared = EvidenceCache()
    loaded = LoadedRecipes()
    with (
        _long_lived_objects(),
        tempfile.TemporaryDirectory(prefix="provenance-base-") as base_dir,
        tempfile.TemporaryDirectory(prefix="provenance-head-") as head_dir,
    ):
        base_present = materialise(base, base_models, Path(base_dir)) if base_models else []
        head_present = (
            materialise(head, head_models, Path(head_dir), judging=base) if head_models else []
        )
        # Recipes whose change is prose only: nothing of theirs can change.
        prose = documentation_only(
            Path(base_dir),
            Path(head_dir),
            [m for m in changed.models if m in base_present and m in head_present],
            loaded,
        )
        touched = frozenset(changed.models) - prose
        if prose and not changed.shared_changed:
            base_present = [m for m in base_present if m not in prose]
            head_present = [m for m in head_present if m not in prose]
        # One recipe changed inside some variants only: the base audits just those.
        narrowed = None
        models = sorted(touched)
        if (
            not changed.shared_changed
            and len(models) == 1
            and base_present == head_present == models
        ):
            narrowed = variant_change(Path(base_dir), Path(head_dir), base_present[0])
        declared = declared_kv_offload(Path(base_dir), base_present, loaded) | declared_kv_offload(
            Path(head_dir), head_present, loaded
        )
        head_filters = _with_kv(request.filters, declared)
        base_filters = head_filters
        if narrowed is not None:
            wanted = head_filters.variants
            base_filters = base_filters.model_copy(
                update={
                    "variants": tuple(
                        sorted(narrowed.changed)
                        if wanted is None
                        else [v for v in wanted if v in narrowed.changed]
                    )
                }
            )
        _check_filters(
            request.filters, [(Path(base_dir), base_present), (Path(head_dir), head_present)]
        )
        scope = (
            shared_change(Path(base_dir), Path(head_dir), loaded)
            if changed.shared_changed
            else None
        )
        untouched: dict[str, AuditFilters] = {}
        if scope is not None:
            untouched = {
                m: scope.narrow(head_filters)
                for m in {*base_present, *head_present}
                if m not in touched
            }
        if progress is not None:
            progress(
                f"auditing the base and the head recipe by recipe ({len(base_present)} and "
                f"{len(head_present)} recipe(s))"
            )
        base_steps = _Steps(
            _audit_base(
                sorted(base_present),
                base,
                request,
                base_filters,
                Path(base_dir),
                shared,
                untouched,
                loaded,
            )
        )
        # the judges' last use: each recipe's is dropped once its head is audited
        head_steps = _Steps(
            _audit_side(
                sorted(head_present),
                head,
                request,
                head_filters,
                Path(head_dir),
                shared,
                untouched,
                loaded,
                last_use=True,
            )
        )
        compare = _Tuning(head_filters, narrowed, shared, untouched)
        _side_by_side(base_steps, head_steps, compare)
        base_report, base_broken = base_steps.result or (None, ())
        head_report = head_steps.result
        # a base that did not load compares nothing (as if no recipe were on both sides)
        tuning = compare.changes() if base_report is not None else ()
        del shared, loaded, compare, base_steps, head_steps  # the diff needs none of them
    if progress is not None:
        progress("comparing the two audits")
    diff = diff_reports(
        base_report,
        head_report,
        base_label=base.hexsha[:12],
        head_label=head.hexsha[:12],
        base_as_head={narrowed.recipe: narrowed.unchanged} if narrowed is not None else None,
        untouched_invalid=_untouched_invalid(base_report, changed, base.hexsha[:12]),
        touched={
            recipe
            for report in (base_report, head_report)
            if report is not None
            for recipe, path in report.recipe_files.items()
            if path in touched
        },
    )
    diff = diff.model_copy(
        update={
            "ledger_source": _ledger_source(request, head_report),
            "recipes_source": recipes_source(request.repo, "--repo", commit=head.hexsha),
            "tuning": tuning,
            "no_evidence": recipes_without_evidence(head_report) if head_report else (),
            "judging_changes": judging_changes(base, head),
            "audit_scope": _scope_text(scope, prose),
            "base_errors": (*base_broken, *diff.base_errors),
        }
    )
    return PrAuditResult(
        changed=changed,
        base_report=base_report,
        head_report=head_report,
        narrowed=narrowed,
        diff=diff,
    )
