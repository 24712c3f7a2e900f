"""What a pull request changes in the exposed combinations (base audit vs head audit).

Pure functions over two :class:`~provenance.audit.model.AuditReport` objects:

* per combination: newly exposed, removed, verdict changed, major flags added /
  changed / removed per role;
* the *flag lens*: for every major ``key=value`` the PR adds or changes in any
  role, every head combination in which it now appears, each with its evidence
  or its absence — a flag added to a variant applies on every hardware that
  variant runs on, which is where unverified cross-products hide;
* the *gate*: head guide-only combinations that are new or regressed relative to
  the base and not covered by a declaration. Regressed means: recommended in the
  base and guide-only now, or guide-only in both but now carrying a major flag
  (or value) that no evidence in scope sets — a PR must not hide a new
  unverified flag behind combinations that were unverified for other reasons.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from provenance.audit.model import (
    AuditReport,
    EvidenceRef,
    NearestEvidence,
    Reason,
    RoleFlags,
    VerdictEntry,
    VerdictKind,
)
from provenance.recipes.combination import Selection

DIFF_SCHEMA: Literal["provenance.diff/v1"] = "provenance.diff/v1"

ChangeKind = Literal["new", "removed", "verdict-changed", "flags-changed"]

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


class CombinationChange(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    recipe: str
    selection: Selection
    kind: ChangeKind
    base_verdict: VerdictKind | None = None
    head_verdict: VerdictKind | None = None
    flags: FlagChanges = Field(default_factory=FlagChanges)
    reasons: tuple[Reason, ...] = ()
    nearest: tuple[NearestEvidence, ...] = ()
    declared_by: str | None = None
    blocking: bool = False
    #: Why the gate blocks it: ``new-guide-only``, ``regressed-verdict`` or
    #: ``new-unevidenced-flag``.
    block_reason: str | None = None


class LensOccurrence(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    recipe: str
    selection: Selection
    role: str
    verdict: VerdictKind
    evidence: tuple[EvidenceRef, ...] = ()


class LensEntry(BaseModel):
    """One major ``key=value`` the PR adds or changes, and everywhere it now appears."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    key: str
    value: str
    evidenced: int
    unevidenced: int
    occurrences: tuple[LensOccurrence, ...]


class GateResult(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    passed: bool
    blocking: int
    declared: int


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

    schema_: Literal["provenance.diff/v1"] = Field(default=DIFF_SCHEMA, alias="schema")
    base: str
    head: str
    recipes: tuple[str, ...]
    summary: DiffSummary
    changes: tuple[CombinationChange, ...]
    lens: tuple[LensEntry, ...]
    gate: GateResult


_Key = tuple[str, Selection]


def _expand(report: AuditReport | None) -> Iterator[tuple[_Key, VerdictEntry]]:
    if report is None:
        return
    for entry in report.verdicts:
        for selection in entry.iter_selections():
            yield (entry.recipe, selection), entry


def _role_flags(roles: tuple[RoleFlags, ...]) -> RoleFlagMap:
    """Major flags per role; a role rendered on several nodes counts once (rank 0 first)."""
    out: RoleFlagMap = {}
    for role in sorted(roles, key=lambda r: (r.role, r.node_rank or 0)):
        out.setdefault(role.role, {f.key: f.value for f in role.flags})
    return out


def _unevidenced(roles: tuple[RoleFlags, ...]) -> set[tuple[str, str, str]]:
    return {(r.role, f.key, f.value) for r in roles for f in r.flags if not f.evidence}


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


def diff_reports(
    base: AuditReport | None,
    head: AuditReport | None,
    *,
    base_label: str,
    head_label: str,
) -> DiffReport:
    """Compare two audits of the same recipes; ``base`` None means the recipes are new."""
    base_map = dict(_expand(base))
    head_map = dict(_expand(head))
    changes: list[CombinationChange] = []
    lens_keys: set[tuple[str, str]] = set()

    for key, entry in head_map.items():
        recipe, selection = key
        before = base_map.get(key)
        head_flags = _role_flags(entry.roles)
        guide_only = entry.verdict is VerdictKind.GUIDE_ONLY
        if before is None:
            for role_flags in head_flags.values():
                lens_keys.update(role_flags.items())
            blocking = guide_only and entry.declared_by is None
            changes.append(
                CombinationChange(
                    recipe=recipe,
                    selection=selection,
                    kind="new",
                    head_verdict=entry.verdict,
                    flags=FlagChanges(added=head_flags),
                    reasons=entry.reasons,
                    nearest=entry.nearest,
                    declared_by=entry.declared_by,
                    blocking=blocking,
                    block_reason="new-guide-only" if blocking else None,
                )
            )
            continue
        flags = _flag_changes(_role_flags(before.roles), head_flags)
        for role_flags in flags.added.values():
            lens_keys.update(role_flags.items())
        for role_changes in flags.changed.values():
            lens_keys.update((k, new) for k, (_old, new) in role_changes.items())
        verdict_changed = before.verdict is not entry.verdict
        if not verdict_changed and flags.empty:
            continue
        block_reason: str | None = None
        if guide_only and entry.declared_by is None:
            if before.verdict is VerdictKind.RECOMMENDED:
                block_reason = "regressed-verdict"
            elif _unevidenced(entry.roles) - _carried(before):
                block_reason = "new-unevidenced-flag"
        changes.append(
            CombinationChange(
                recipe=recipe,
                selection=selection,
                kind="verdict-changed" if verdict_changed else "flags-changed",
                base_verdict=before.verdict,
                head_verdict=entry.verdict,
                flags=flags,
                reasons=entry.reasons,
                nearest=entry.nearest,
                declared_by=entry.declared_by,
                blocking=block_reason is not None,
                block_reason=block_reason,
            )
        )

    for key, entry in base_map.items():
        if key not in head_map:
            recipe, selection = key
            changes.append(
                CombinationChange(
                    recipe=recipe,
                    selection=selection,
                    kind="removed",
                    base_verdict=entry.verdict,
                    flags=FlagChanges(removed=_role_flags(entry.roles)),
                )
            )

    lens = _lens(head_map, lens_keys)
    blocked = sum(1 for c in changes if c.blocking)
    declared = sum(1 for c in changes if c.declared_by and c.head_verdict is VerdictKind.GUIDE_ONLY)
    counts: defaultdict[str, int] = defaultdict(int)
    for change in changes:
        counts[change.kind] += 1
    recipes = sorted({r for r, _ in head_map} | {r for r, _ in base_map})
    return DiffReport(
        base=base_label,
        head=head_label,
        recipes=tuple(recipes),
        summary=DiffSummary(
            base_combinations=len(base_map),
            head_combinations=len(head_map),
            new=counts["new"],
            removed=counts["removed"],
            verdict_changed=counts["verdict-changed"],
            flags_changed=counts["flags-changed"],
        ),
        changes=tuple(sorted(changes, key=_change_order)),
        lens=lens,
        gate=GateResult(passed=blocked == 0, blocking=blocked, declared=declared),
    )


def _carried(before: VerdictEntry) -> set[tuple[str, str, str]]:
    """Flags the base already carried (evidenced or not): not new to this PR."""
    return {(r.role, f.key, f.value) for r in before.roles for f in r.flags}


def _change_order(change: CombinationChange) -> tuple[bool, str, str, str]:
    return (not change.blocking, change.kind, change.recipe, change.selection.label())


def _lens(
    head_map: dict[_Key, VerdictEntry], lens_keys: set[tuple[str, str]]
) -> tuple[LensEntry, ...]:
    if not lens_keys:
        return ()
    found: dict[tuple[str, str], list[LensOccurrence]] = defaultdict(list)
    for (recipe, selection), entry in head_map.items():
        seen_roles: set[tuple[str, str, str]] = set()
        for role in entry.roles:
            for flag in role.flags:
                marker = (role.role, flag.key, flag.value)
                if (flag.key, flag.value) in lens_keys and marker not in seen_roles:
                    seen_roles.add(marker)
                    found[(flag.key, flag.value)].append(
                        LensOccurrence(
                            recipe=recipe,
                            selection=selection,
                            role=role.role,
                            verdict=entry.verdict,
                            evidence=flag.evidence,
                        )
                    )
    entries = []
    for (key, value), occurrences in sorted(found.items()):
        evidenced = sum(1 for o in occurrences if o.evidence)
        entries.append(
            LensEntry(
                key=key,
                value=value,
                evidenced=evidenced,
                unevidenced=len(occurrences) - evidenced,
                occurrences=tuple(occurrences),
            )
        )
    return tuple(entries)
