"""The validator: every combination of a recipe → recommended or guide-only, with reasons.

Pipeline per combination (``docs/audit.md``):

1. per process (:class:`~provenance.recipes.combination.RoleCommand`), the major
   FlagSet: normalise argv + env, then ``Policy.major`` — memoised on the
   command's content, so each distinct role is normalised once;
2. the combination key: checkpoint, hardware, deployment kind, node count and
   the per-evidence-role major FlagSets;
3. the :class:`~provenance.audit.judge.Outcome` of that key, memoised in
   :class:`~provenance.audit.judge.Judge`;
4. declarations for guide-only outcomes;
5. grouping: combinations with the same outcome and declaration share one
   :class:`~provenance.audit.model.VerdictEntry` (``selections`` list).

Then the reverse direction (every in-scope evidence point → the combinations
that reproduce it, or why none can) and the claims (``meta.hardware: verified``
without a recommended combination).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from provenance import __version__
from provenance.audit.declarations import DeclarationMatcher
from provenance.audit.judge import ClassifyFn, CombinationKey, Judge, Outcome, RoleKey
from provenance.audit.model import (
    AuditReport,
    AuditSummary,
    Claim,
    ReverseEntry,
    VerdictEntry,
    VerdictKind,
)
from provenance.audit.reverse import reverse_entries
from provenance.audit.scope import EVIDENCE_ROLE, ROLE_ORDER, deployment_kind
from provenance.flags.model import FlagSet
from provenance.graph import EvidenceGraph
from provenance.ledger.model import Declarations
from provenance.recipes.combination import RenderResult, RoleCommand, Selection


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


class PolicyNormaliser:
    """The production :class:`RoleNormaliser`: ``normalise_argv`` then ``Policy.major``."""

    def __init__(self, policy: object | None = None) -> None:
        from provenance.flags.policy import Policy, default_policy

        self._policy: Policy = policy if isinstance(policy, Policy) else default_policy()

    def command_major(self, argv: Sequence[str], env: Mapping[str, object]) -> FlagSet:
        from provenance.flags.normalise import normalise_argv

        return self._policy.major(normalise_argv(list(argv), env).flags)

    def major(self, flags: FlagSet) -> FlagSet:
        return self._policy.major(flags)

    def classify(self, key: str) -> str:
        return str(self._policy.classify(key))


@dataclass(frozen=True)
class RecipeInput:
    """One recipe to audit: identity, file, claims and its combinations (any iterable)."""

    ref: str
    combinations: Iterable[tuple[Selection, RenderResult]]
    path: str | None = None
    verified_hardware: tuple[str, ...] = ()
    hardware_filter: tuple[str, ...] | None = None
    gpus_per_node: Mapping[str, int] = field(default_factory=dict)


@dataclass
class _Group:
    outcome: Outcome
    declared_by: str | None
    selections: list[Selection] = field(default_factory=list)


@dataclass
class _Seen:
    """Per combination key: how many combinations, one example (for the reverse direction)."""

    count: int = 0
    example: Selection | None = None
    pd_modes: set[str] = field(default_factory=set)


class RecipeAuditor:
    """Audits one recipe's combinations as they stream in."""

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
        self.seen: dict[CombinationKey, _Seen] = {}
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
        per_role: dict[str, list[FlagSet]] = defaultdict(list)
        for command in result.roles:
            if command.argv is None:
                continue
            role = EVIDENCE_ROLE.get(command.role, command.role)
            major = self.role_major(command)
            if major not in per_role[role]:
                per_role[role].append(major)
        roles: tuple[RoleKey, ...] = tuple(
            (role, tuple(flagsets))
            for role, flagsets in sorted(per_role.items(), key=lambda kv: ROLE_ORDER.get(kv[0], 9))
        )
        kind = deployment_kind(result.deploy_type, (c.role for c in result.roles))
        node_count = selection.node_count if kind == "aggregated_multi_node" else None
        return CombinationKey(
            model_id=result.model_id,
            hardware=selection.hardware,
            kind=kind,
            node_count=node_count,
            roles=roles,
        )

    # Per combination -------------------------------------------------------
    def add(self, selection: Selection, result: RenderResult) -> Outcome:
        key = self.key_of(selection, result)
        outcome = self.judge.outcome(key)
        self.count += 1
        self.hardware_seen.add(selection.hardware)
        self.model_ids[result.model_id].add(selection.hardware)
        seen = self.seen.get(key)
        if seen is None:
            seen = self.seen[key] = _Seen(example=selection)
        seen.count += 1
        if selection.pd is not None:
            seen.pd_modes.add(selection.pd.prefill.parallelism)
            seen.pd_modes.add(selection.pd.decode.parallelism)
        declared: str | None = None
        if outcome.verdict is VerdictKind.RECOMMENDED:
            self.recommended_by_hardware[selection.hardware] += 1
        else:
            declared = self.declarations.declared_by(self.recipe, selection, outcome.reason_codes)
        outcome_id = self._outcome_ids.setdefault(id(outcome), len(self._outcome_ids))
        group_key = (outcome_id, declared)
        group = self._groups.get(group_key)
        if group is None:
            group = self._groups[group_key] = _Group(outcome=outcome, declared_by=declared)
        group.selections.append(selection)
        return outcome

    def entries(self) -> list[VerdictEntry]:
        entries = []
        for group in self._groups.values():
            outcome = group.outcome
            single = len(group.selections) == 1
            entries.append(
                VerdictEntry(
                    recipe=self.recipe,
                    selection=group.selections[0] if single else None,
                    selections=None if single else tuple(group.selections),
                    verdict=outcome.verdict,
                    roles=outcome.roles,
                    reasons=outcome.reasons,
                    nearest=outcome.nearest,
                    evidence=outcome.evidence,
                    declared_by=group.declared_by,
                )
            )
        return entries


def claims_of(
    recipe: str,
    verified_hardware: Sequence[str],
    auditor: RecipeAuditor,
    hardware_filter: Sequence[str] | None,
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
    graph: EvidenceGraph,
    normaliser: RoleNormaliser,
    declarations: Declarations | None = None,
    *,
    ledger: str | None = None,
    notices: Sequence[str] = (),
    classify: ClassifyFn | None = None,
) -> AuditReport:
    """Audit every combination of every recipe against ``graph``."""
    judge = Judge(graph, classify or normaliser.classify)
    matcher = DeclarationMatcher(declarations or Declarations())
    verdicts: list[VerdictEntry] = []
    reverse: list[ReverseEntry] = []
    claims: list[Claim] = []
    recipe_files: dict[str, str] = {}
    count = 0
    for recipe in recipes:
        auditor = RecipeAuditor(recipe.ref, judge, normaliser, matcher)
        for selection, result in recipe.combinations:
            auditor.add(selection, result)
        count += auditor.count
        verdicts.extend(auditor.entries())
        reverse.extend(reverse_entries(auditor, graph, recipe.gpus_per_node))
        claims.extend(
            claims_of(recipe.ref, recipe.verified_hardware, auditor, recipe.hardware_filter)
        )
        if recipe.path:
            recipe_files[recipe.ref] = recipe.path
    return AuditReport(
        tool_version=__version__,
        recipes=tuple(r.ref for r in recipes),
        recipe_files=recipe_files,
        ledger=ledger,
        notices=tuple(notices),
        summary=summarise(verdicts, count),
        verdicts=tuple(verdicts),
        reverse=tuple(reverse),
        claims=tuple(claims),
    )


def summarise(verdicts: Sequence[VerdictEntry], count: int) -> AuditSummary:
    recommended = guide_only = declared = 0
    by_reason: Counter[str] = Counter()
    for entry in verdicts:
        size = selection_count(entry)
        if entry.verdict is VerdictKind.RECOMMENDED:
            recommended += size
            continue
        guide_only += size
        if entry.declared_by:
            declared += size
        for code in dict.fromkeys(str(r.code) for r in entry.reasons):
            by_reason[code] += size
    return AuditSummary(
        combinations=count,
        recommended=recommended,
        guide_only=guide_only,
        declared=declared,
        undeclared_guide_only=guide_only - declared,
        by_reason=dict(sorted(by_reason.items())),
    )


def selection_count(entry: VerdictEntry) -> int:
    if entry.selections is not None:
        return len(entry.selections)
    return 1 if entry.selection is not None else 0


def entry_selections(entry: VerdictEntry) -> tuple[Selection, ...]:
    if entry.selections is not None:
        return entry.selections
    return (entry.selection,) if entry.selection is not None else ()
