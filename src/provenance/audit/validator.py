"""The validator: every combination of a recipe → recommended or guide-only, with reasons.

Pipeline per combination (``docs/audit.md``):

1. per process (:class:`~provenance.model.combination.RoleCommand`), the major
   FlagSet: normalise argv + env, then ``Policy.major`` — memoised on the
   command's content, so each distinct role is normalised once;
2. the combination key: checkpoint, hardware, deployment kind, node count and
   the per-evidence-role major FlagSets;
3. the :class:`~provenance.audit.judge.Outcome` of that key, memoised in
   :class:`~provenance.audit.judge.Judge`;
4. declarations for guide-only outcomes;
5. grouping: combinations with the same outcome and declaration share one
   :class:`~provenance.audit.verdicts.VerdictEntry` (``selections`` list).

Then the reverse direction (every in-scope evidence point → the combinations
that reproduce it, or why none can) and the claims (``meta.hardware: verified``
without a recommended combination).
"""

from __future__ import annotations

import gc
import operator
import re
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, NamedTuple, Protocol

from provenance import __version__
from provenance.audit.declarations import DeclarationMatcher
from provenance.audit.index import EvidenceIndex
from provenance.audit.judge import ClassifyFn, CombinationKey, Judge, Outcome, RoleKey
from provenance.audit.reverse import reverse_entries
from provenance.audit.verdicts import (
    AuditReport,
    AuditSummary,
    Claim,
    RecordSummary,
    ReverseEntry,
    SelectionSet,
    VerdictEntry,
)
from provenance.errors import ProvenanceError
from provenance.model.combination import RenderResult, RoleCommand, Selection, construct
from provenance.model.flags import FlagSet
from provenance.model.ledger import Declarations
from provenance.model.reasons import VerdictKind
from provenance.model.scope import EVIDENCE_ROLE, ROLE_ORDER, DeploymentKind, deployment_kind
from provenance.recipes.enumerate.selections import EnumerationOptions
from provenance.recipes.load.loader import Recipe, RecipesRoot

if TYPE_CHECKING:
    from provenance.audit.factored import CellAuditor


class RoleNormaliser(Protocol):
    """What the validator needs from the flags layer (normaliser + policy)."""

    def command_major(self, argv: Sequence[str], env: Mapping[str, object]) -> FlagSet:
        """Major flags of one rendered command (argv + env)."""
        ...

    def major(self, flags: FlagSet) -> FlagSet:
        """Major subset of an already normalised FlagSet (evidence records)."""
        ...

    def classify(self, key: str) -> str:
        """Policy class of a key, as text."""
        ...

    def unit_facts(self, unit: tuple[str, ...]) -> UnitFacts:
        """What one argv unit (``--flag [value]``) can do to a command's major flags."""
        ...

    def units_major(
        self, head: tuple[str, ...], units: Sequence[tuple[str, ...]], env: Mapping[str, object]
    ) -> FlagSet:
        """``command_major`` of ``head`` + ``units`` already split into units (no negative
        number among the tokens: then both splits agree)."""
        ...


class UnitFacts(NamedTuple):
    """One argv unit's effect: ``alone`` = normalised alone it yields no major key;
    ``mergeable`` = it writes a JSON/dotted config (configs merge, so it may replace or
    complete another unit's); ``base`` = the config name it writes; ``names`` = every
    flag or config name it may touch (spellings, negation and the keys it normalises
    to), or None when it does not normalise alone."""

    alone: bool
    mergeable: bool
    base: str
    names: frozenset[str] | None = None


class PolicyNormaliser:
    """The production :class:`RoleNormaliser`: ``normalise_argv`` then ``Policy.major``.

    Memoised on the command with its *inert* argv units removed. A unit (a flag
    token and its value, split as the recipes builder splits them) is inert when
    normalising it alone succeeds and yields no major key (``--port 8001``,
    ``--tool-call-parser x``, ``--enable-auto-tool-choice``). A unit whose flag
    is dotted or whose value is a JSON object is inert only when no other unit
    writes the same config (JSON configs merge and may replace each other).
    Dropping inert units cannot change the major flags, and it lets the many
    commands that differ only in functional features share one normalisation.
    """

    def __init__(self, policy: object | None = None) -> None:
        from provenance.normalise.policy import Policy, default_policy

        self._policy: Policy = policy if isinstance(policy, Policy) else default_policy()
        self._units: dict[tuple[str, ...], UnitFacts] = {}
        self._memo: dict[tuple[object, ...], FlagSet] = {}
        self._classes: dict[str, str] = {}

    def unit_facts(self, unit: tuple[str, ...]) -> UnitFacts:
        found = self._units.get(unit)
        if found is not None:
            return found
        from provenance.normalise.canonical import normalise_argv

        head = unit[0].split("=", 1)[0].lstrip("-")
        base = head.split(".", 1)[0].replace("-", "_")
        value = unit[1] if len(unit) > 1 else unit[0].partition("=")[2]
        mergeable = "." in head or value.lstrip().startswith("{")
        if not unit[0].startswith("--"):  # a positional or short/negative token: never dropped
            found = UnitFacts(False, mergeable, base)
            self._units[unit] = found
            return found
        names: frozenset[str] | None
        try:
            flags = normalise_argv(["vllm", "serve", *unit]).flags
            alone = all(self._policy.classify(k) is not _major() for k in flags)
            names = frozenset(
                {base, base.removeprefix("no_"), *(k.split(".", 1)[0] for k in flags)}
            )
        except ProvenanceError:
            alone = False
            names = None
        found = UnitFacts(alone, mergeable, base, names)
        self._units[unit] = found
        return found

    def command_major(self, argv: Sequence[str], env: Mapping[str, object]) -> FlagSet:
        tokens = list(argv)
        head = tokens[:3] if tokens[:2] == ["vllm", "serve"] else []
        return self.units_major(tuple(head), _split_units(tokens[len(head) :]), env)

    def units_major(
        self, head: tuple[str, ...], units: Sequence[tuple[str, ...]], env: Mapping[str, object]
    ) -> FlagSet:
        facts = [self.unit_facts(u) for u in units]
        bases = [fact.base for fact in facts]
        kept = tuple(
            token
            for unit, (alone, mergeable, base, _) in zip(units, facts, strict=True)
            if not (alone and (not mergeable or bases.count(base) == 1))
            for token in unit
        )
        key = (head, kept, tuple(env.items()))
        major = self._memo.get(key)
        if major is None:
            from provenance.normalise.canonical import normalise_argv

            major = self._policy.major(normalise_argv([*head, *kept], env).flags)
            self._memo[key] = major
        return major

    def major(self, flags: FlagSet) -> FlagSet:
        return self._policy.major(flags)

    def classify(self, key: str) -> str:
        found = self._classes.get(key)
        if found is None:
            found = self._classes[key] = str(self._policy.classify(key))
        return found


def _major() -> object:
    from provenance.model.flags import FlagClass

    return FlagClass.MAJOR


_NEGATIVE_NUMBER = re.compile(r"-(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")


def _split_units(tokens: Sequence[str]) -> list[tuple[str, ...]]:
    """A flag token and its value (the next token, unless it is another flag).

    A negative number is a value, as the flags normaliser reads it.
    """
    units: list[tuple[str, ...]] = []
    index = 0
    while index < len(tokens):
        token = tokens[index]
        if token.startswith("-") and index + 1 < len(tokens):
            following = tokens[index + 1]
            if not following.startswith("-") or _NEGATIVE_NUMBER.fullmatch(following):
                units.append((token, following))
                index += 2
                continue
        units.append((token,))
        index += 1
    return units


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
    factors, see :mod:`provenance.audit.factored`); both give the same report.
    """

    ref: str
    combinations: Iterable[tuple[Selection, RenderResult]] = ()
    cells: CellSource | None = None
    path: str | None = None
    verified_hardware: tuple[str, ...] = ()
    hardware_filter: tuple[str, ...] | None = None
    #: True when the enumeration was narrowed (variant, strategy, features, …): a verified
    #: hardware with no audited combination is then not reported as a claim.
    filtered: bool = False
    gpus_per_node: Mapping[str, int] = field(default_factory=dict)


@dataclass(slots=True)
class _Group:
    outcome: Outcome
    declared_by: str | None
    sets: list[SelectionSet] = field(default_factory=list)
    count: int = 0


@dataclass(slots=True)
class _Seen:
    """Per combination key: how many combinations, one example (for the reverse direction).

    The example may be given as a function that builds it: few are ever read.
    """

    count: int = 0
    example_of: Selection | Callable[[], Selection] | None = None
    pd_modes: set[str] = field(default_factory=set)

    @property
    def example(self) -> Selection | None:
        found = self.example_of
        if found is None or isinstance(found, Selection):
            return found
        self.example_of = found = found()
        return found


@dataclass(slots=True, kw_only=True)
class _KeyState(_Seen):
    """Everything a combination needs per combination key, looked up once per key: its
    outcome, its groups (by declaration) and its tallies (:class:`_Seen`)."""

    outcome: Outcome
    groups: dict[str | None, _Group] = field(default_factory=dict)


#: Raw role list of a deployment: (recipe role, major FlagSet) per process, in role order.
RawRoles = tuple[tuple[str, FlagSet], ...]


class RecipeAuditor:
    """Audits one recipe's combinations: one at a time (:meth:`add`) or as a
    cross-product of selections with one outcome (:meth:`add_set`, used by
    :class:`provenance.audit.factored.CellAuditor`)."""

    def __init__(
        self,
        recipe: str,
        judge: Judge,
        normaliser: RoleNormaliser,
        declarations: DeclarationMatcher,
    ) -> None:
        self.recipe = recipe
        self.judge = judge
        self.normaliser = normaliser
        self.declarations = declarations
        self._major_memo: dict[tuple[object, ...], FlagSet] = {}
        self._rc_memo: dict[int, tuple[RoleCommand, FlagSet]] = {}
        self._groups: dict[tuple[int, str | None], _Group] = {}
        self._outcome_ids: dict[int, int] = {}
        self._states: dict[CombinationKey, _KeyState] = {}
        #: per combination key, its tallies (the key states themselves)
        self.seen: Mapping[CombinationKey, _Seen] = self._states
        self._keys: dict[tuple[object, ...], CombinationKey] = {}
        self.recommended_by_hardware: Counter[str] = Counter()
        self.hardware_seen: set[str] = set()
        self.model_ids: dict[str, set[str]] = defaultdict(set)
        self.count = 0

    # Per process ---------------------------------------------------------
    def role_major(self, command: RoleCommand) -> FlagSet:
        cached = self._rc_memo.get(id(command))
        if cached is not None and cached[0] is command:
            return cached[1]
        key = (command.argv, tuple(command.env.items()))
        major = self._major_memo.get(key)
        if major is None:
            major = self.normaliser.command_major(command.argv or (), command.env)
            self._major_memo[key] = major
        self._rc_memo[id(command)] = (command, major)
        return major

    def key_of(self, selection: Selection, result: RenderResult) -> CombinationKey:
        raw = tuple(
            (command.role, self.role_major(command))
            for command in result.roles
            if command.argv is not None
        )
        return self.key_for(
            result.model_id, selection.hardware, result.deploy_type, selection.node_count, raw
        )

    def key_for(
        self,
        model_id: str,
        hardware: str,
        deploy_type: str,
        node_count: int | None,
        raw: RawRoles,
    ) -> CombinationKey:
        """The combination key of a deployment from its processes' major flags."""
        memo_key = (model_id, hardware, deploy_type, node_count, raw)
        key = self._keys.get(memo_key)
        if key is None:
            key = self._keys[memo_key] = combination_key(
                model_id, hardware, deploy_type, node_count, raw
            )
        return key

    def state(self, key: CombinationKey, model_id: str) -> _KeyState:
        """The outcome and tallies of ``key`` (judged on first use)."""
        state = self._states.get(key)
        if state is None:
            state = self._states[key] = _KeyState(outcome=self.judge.outcome(key))
            self.model_ids[model_id].add(key.hardware)
        return state

    # Per combination -------------------------------------------------------
    def add(self, selection: Selection, result: RenderResult) -> Outcome:
        key = self.key_of(selection, result)
        state = self.state(key, result.model_id)
        pd_modes: tuple[str, ...] = ()
        if selection.pd is not None:
            pd_modes = (selection.pd.prefill.parallelism, selection.pd.decode.parallelism)
        declared = self.declared(selection, state.outcome)
        self.add_set(state, SelectionSet.of(selection), 1, declared, selection, pd_modes)
        return state.outcome

    def declared(self, selection: Selection, outcome: Outcome) -> str | None:
        """The declaration covering a guide-only ``selection``, if any."""
        if outcome.verdict is VerdictKind.RECOMMENDED or not self.declarations:
            return None
        return self.declarations.declared_by(self.recipe, selection, outcome.reason_codes)

    def add_set(
        self,
        state: _KeyState,
        selections: SelectionSet,
        count: int,
        declared: str | None,
        example: Selection | Callable[[], Selection] | None,
        pd_modes: Iterable[str],
    ) -> None:
        """Tally ``count`` combinations (``selections``) that share ``state``'s key."""
        outcome = state.outcome
        hardware = selections.hardware
        self.count += count
        self.hardware_seen.add(hardware)
        state.count += count
        if state.example_of is None:
            state.example_of = example
        state.pd_modes.update(pd_modes)
        if outcome.verdict is VerdictKind.RECOMMENDED:
            self.recommended_by_hardware[hardware] += count
        group = state.groups.get(declared)
        if group is None:
            outcome_id = self._outcome_ids.setdefault(id(outcome), len(self._outcome_ids))
            group_key = (outcome_id, declared)
            group = self._groups.get(group_key)
            if group is None:
                group = self._groups[group_key] = _Group(outcome=outcome, declared_by=declared)
            state.groups[declared] = group
        group.sets.append(selections)
        group.count += count

    def entries(self) -> list[VerdictEntry]:
        entries = []
        for group in self._groups.values():
            outcome = group.outcome
            entries.append(
                construct(
                    VerdictEntry,
                    {
                        "recipe": self.recipe,
                        "combinations": group.count,
                        "selections": tuple(group.sets),
                        "verdict": outcome.verdict,
                        "roles": outcome.roles,
                        "reasons": outcome.reasons,
                        "nearest": outcome.nearest,
                        "evidence": outcome.evidence,
                        "declared_by": group.declared_by,
                    },
                )
            )
        return entries


def combination_key(
    model_id: str,
    hardware: str,
    deploy_type: str,
    node_count: int | None,
    raw: RawRoles,
    roles: tuple[RoleKey, ...] | None = None,
) -> CombinationKey:
    """The combination key of a deployment from its processes' major flags (no memo:
    :meth:`RecipeAuditor.key_for` memoises it for callers that repeat keys).

    ``roles``, when given, is ``evidence_roles(raw)`` computed by the caller."""
    if roles is None:
        roles = evidence_roles(raw)
    kind = _KINDS.get(deploy_type) or deployment_kind(
        deploy_type, [r for r, _ in raw] or [name for name, _ in roles]
    )
    return CombinationKey(
        model_id, hardware, kind, node_count if kind == "aggregated_multi_node" else None, roles
    )


def evidence_roles(raw: RawRoles) -> tuple[RoleKey, ...]:
    """Each evidence role of ``raw`` with its distinct major FlagSets (in process order),
    roles in :data:`ROLE_ORDER`."""
    per_role: dict[str, list[FlagSet]] = {}
    names: list[str] = []
    for recipe_role, major in raw:
        role = EVIDENCE_ROLE.get(recipe_role, recipe_role)
        flagsets = per_role.get(role)
        if flagsets is None:
            per_role[role] = [major]
            names.append(role)
        elif major not in flagsets:
            flagsets.append(major)
    if len(names) > 1:
        names.sort(key=lambda name: ROLE_ORDER.get(name, 9))
    return tuple([(name, tuple(per_role[name])) for name in names])


def joined_roles(
    first: tuple[RoleKey, ...], second: tuple[RoleKey, ...]
) -> tuple[RoleKey, ...] | None:
    """``evidence_roles(a + b)`` from ``evidence_roles(a)`` and ``evidence_roles(b)``, when
    every role of ``a`` comes before every role of ``b`` (a PD pool pair: prefill, then
    decode); None otherwise."""
    if not first or not second:
        return None
    if ROLE_ORDER.get(first[-1][0], 9) < ROLE_ORDER.get(second[0][0], 9):
        return first + second
    return None


#: The deployment kind of the deploy types that name it (the others depend on their roles).
_KINDS: dict[str, DeploymentKind] = {
    deploy_type: deployment_kind(deploy_type, ())
    for deploy_type in ("pd_cluster", "multi_node", "single_node")
}


def claims_of(
    recipe: str,
    verified_hardware: Sequence[str],
    auditor: RecipeAuditor,
    hardware_filter: Sequence[str] | None,
    filtered: bool = False,
) -> list[Claim]:
    """``meta.hardware.<hw>: verified`` with no recommended combination audited on it."""
    claims = []
    for hardware in verified_hardware:
        if hardware_filter is not None and hardware not in hardware_filter:
            continue
        recommended = auditor.recommended_by_hardware.get(hardware, 0)
        if recommended:
            continue
        audited = hardware in auditor.hardware_seen
        if not audited and filtered:
            continue
        claims.append(
            Claim(
                recipe=recipe,
                hardware=hardware,
                claim="verified",
                recommended=0,
                detail=(
                    "marked verified in meta.hardware, but no audited combination on it "
                    "is recommended"
                    if audited
                    else "marked verified in meta.hardware, but no combination on it was audited"
                ),
            )
        )
    return claims


def audit(
    recipes: Sequence[RecipeInput],
    graph: EvidenceIndex,
    normaliser: RoleNormaliser,
    declarations: Declarations | None = None,
    *,
    ledger: str | None = None,
    notices: Sequence[str] = (),
    classify: ClassifyFn | None = None,
    judges: dict[str, Judge] | None = None,
    keep: list[object] | None = None,
) -> AuditReport:
    """Audit every combination of every recipe against ``graph``.

    ``judges`` (recipe ref -> :class:`Judge`) lets several audits against the same
    ``graph``, normaliser and ``classify`` share each recipe's judgement memos (the
    base and head of a pull request): missing judges are created and added to it.

    ``keep`` is for a caller that ends the process soon after without freeing memory
    (the console script, see :mod:`provenance.cli.lifetime`): the last recipe's auditor,
    with its render, normalisation and tally memos, is appended to it instead of being
    freed on the way out. Freeing those objects one by one gives nothing back to such a
    process and costs about 0.015 s after a MiniMax-M3 audit. The earlier recipes'
    auditors are freed as each recipe is done, as without ``keep``: keeping them all
    would double the peak memory of an audit of every recipe.
    """
    with gc_paused():
        return _audit(
            recipes, graph, normaliser, declarations, ledger, notices, classify, judges, keep
        )


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector: the audit allocates many long-lived objects and
    no cycles, and repeated full collections over them cost more than the audit itself.

    On the way out, everything allocated meanwhile (millions of objects, all still in
    the youngest generation) is moved to the oldest one before collection resumes
    (freeze, enable, unfreeze): otherwise the first allocation after ``gc.enable()``
    scans all of them at once, about 10% of a MiniMax-M3 audit. Nothing is lost:
    the oldest generation is still collected, later, as usual.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.freeze()
            gc.enable()
            gc.unfreeze()


def _audit(
    recipes: Sequence[RecipeInput],
    graph: EvidenceIndex,
    normaliser: RoleNormaliser,
    declarations: Declarations | None,
    ledger: str | None,
    notices: Sequence[str],
    classify: ClassifyFn | None,
    judges: dict[str, Judge] | None,
    keep: list[object] | None,
) -> AuditReport:
    matcher = DeclarationMatcher(declarations or Declarations())
    verdicts: list[VerdictEntry] = []
    reverse: list[ReverseEntry] = []
    claims: list[Claim] = []
    recipe_files: dict[str, str] = {}
    count = 0
    last: tuple[RecipeAuditor, CellAuditor | None] | None = None
    for recipe in recipes:
        cells: CellAuditor | None = None
        # one Judge per recipe: recipes share no checkpoint scope worth memoising across,
        # and its memos are freed as soon as the recipe is done (unless ``judges`` keeps it).
        judge = judges.get(recipe.ref) if judges is not None else None
        if judge is None:
            judge = Judge(graph, classify or normaliser.classify)
            if judges is not None:
                judges[recipe.ref] = judge
        auditor = RecipeAuditor(recipe.ref, judge, normaliser, matcher)
        if recipe.cells is not None:
            from provenance.audit.factored import audit_cells

            cells = audit_cells(
                auditor, recipe.cells.recipe, recipe.cells.root, recipe.cells.options
            )
        for selection, result in recipe.combinations:
            auditor.add(selection, result)
        count += auditor.count
        verdicts.extend(auditor.entries())
        reverse.extend(
            sorted(
                reverse_entries(auditor, graph, recipe.gpus_per_node),
                key=lambda e: (e.config_key, e.record),
            )
        )
        claims.extend(
            claims_of(
                recipe.ref,
                recipe.verified_hardware,
                auditor,
                recipe.hardware_filter,
                recipe.filtered,
            )
        )
        if recipe.path:
            recipe_files[recipe.ref] = recipe.path
        last = (auditor, cells)
    if keep is not None:
        keep.append(last)
    return AuditReport(
        tool_version=__version__,
        recipes=tuple(r.ref for r in recipes),
        recipe_files=recipe_files,
        ledger=ledger,
        notices=tuple(notices),
        summary=summarise(verdicts, count),
        records=referenced_records(verdicts, graph),
        verdicts=tuple(verdicts),
        reverse=tuple(reverse),
        claims=tuple(claims),
    )


_RECORD_OF = operator.attrgetter("record")


def referenced_records(
    verdicts: Sequence[VerdictEntry], graph: EvidenceIndex
) -> tuple[RecordSummary, ...]:
    """Every record a flag of ``verdicts`` cites, sorted by id (the JSON ``records`` table)."""
    ids: set[str] = set()
    # roles and evidence tuples are shared by many entries: each is read once
    roles = {id(role): role for entry in verdicts for role in entry.roles}
    evidence = {id(f.evidence): f.evidence for role in roles.values() for f in role.flags}
    for refs in evidence.values():
        ids.update(map(_RECORD_OF, refs))
    out = []
    for record_id in sorted(ids):
        indexed = graph.records.get(record_id)
        out.append(
            construct(
                RecordSummary,
                {
                    "record": record_id,
                    "config_key": indexed.config_key if indexed is not None else "",
                    "prs": indexed.prs if indexed is not None else (),
                },
            )
        )
    return tuple(out)


def summarise(verdicts: Sequence[VerdictEntry], count: int) -> AuditSummary:
    recommended = guide_only = declared = 0
    by_reason: Counter[str] = Counter()
    recommended_kind = VerdictKind.RECOMMENDED
    for entry in verdicts:
        size = entry.combinations
        if entry.verdict is recommended_kind:
            recommended += size
            continue
        guide_only += size
        if entry.declared_by:
            declared += size
        counted: set[str] = set()  # each code once per entry
        for reason in entry.reasons:
            code = reason.code
            if code not in counted:
                counted.add(code)
                by_reason[code] += size
    return AuditSummary(
        combinations=count,
        recommended=recommended,
        guide_only=guide_only,
        declared=declared,
        undeclared_guide_only=guide_only - declared,
        by_reason={str(code): size for code, size in sorted(by_reason.items())},
    )
