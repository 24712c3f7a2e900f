"""The selection-by-selection diff (``provenance.diff/v1``'s algorithm), kept as the reference
that :func:`provenance.review.diff.diff_reports` must agree with.

Every combination of both audits is expanded to a :class:`Selection`, the two sides are
matched by selection, and one :class:`CombinationChange` is built per changed combination
and one lens occurrence per (combination, role) in which an added or changed flag appears.
Slow (it is what the grouped diff replaces), but obviously per combination. It uses only
the diff's public models, never its private helpers: the flag comparisons below are
restated here, so a fault in the subject's cannot hide in its own oracle.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator

from provenance.audit.verdicts import AuditReport, EvidenceRef, RoleFlags, VerdictEntry
from provenance.model.combination import Selection
from provenance.model.reasons import ReasonCode, VerdictKind
from provenance.review.diff import CombinationChange, DiffReport, FlagChanges

_Key = tuple[str, Selection]
#: (key, value) -> (recipe, selection, role, verdict, evidence) per occurrence
Lens = dict[tuple[str, str], list[tuple[str, Selection, str, VerdictKind, tuple[EvidenceRef, ...]]]]


RoleMajors = dict[str, dict[str, str]]


def _role_flags(roles: tuple[RoleFlags, ...]) -> RoleMajors:
    """Major flags per role, from the role's lowest node rank (a role rendered on
    several nodes counts once)."""
    lowest: dict[str, RoleFlags] = {}
    for role in roles:
        held = lowest.get(role.role)
        if held is None or (role.node_rank or 0) < (held.node_rank or 0):
            lowest[role.role] = role
    return {name: {f.key: f.value for f in lowest[name].flags} for name in sorted(lowest)}


def _flag_changes(base: RoleMajors, head: RoleMajors) -> FlagChanges:
    added: RoleMajors = {}
    changed: dict[str, dict[str, tuple[str, str]]] = {}
    removed: RoleMajors = {}
    for role in sorted(base.keys() | head.keys()):
        old, new = base.get(role, {}), head.get(role, {})
        for key in sorted(old.keys() | new.keys()):
            if key not in old:
                added.setdefault(role, {})[key] = new[key]
            elif key not in new:
                removed.setdefault(role, {})[key] = old[key]
            elif old[key] != new[key]:
                changed.setdefault(role, {})[key] = (old[key], new[key])
    return FlagChanges(added=added, changed=changed, removed=removed)


def _role_flag_values(roles: tuple[RoleFlags, ...], *, unevidenced: bool) -> set[tuple[str, ...]]:
    """(role, key, value) of every flag of every node (only those without evidence if asked)."""
    return {
        (r.role, f.key, f.value) for r in roles for f in r.flags if not (unevidenced and f.evidence)
    }


def _expand(report: AuditReport | None) -> Iterator[tuple[_Key, VerdictEntry]]:
    if report is None:
        return
    for entry in report.verdicts:
        for selection in entry.iter_selections():
            yield (entry.recipe, selection), entry


def _in_scope(entry: VerdictEntry) -> bool:
    """The gate's test, restated: some in-scope evidence point exists for the entry
    (it is recommended, has a reason only in-scope evidence gives, or a flag an in-scope
    record sets); a change in a cell without any is *unbenchmarked* and never blocks."""
    return (
        entry.verdict is VerdictKind.RECOMMENDED
        or any(r.code is not ReasonCode.NO_EVIDENCE for r in entry.reasons)
        or any(f.evidence for role in entry.roles for f in role.flags)
    )


def _unreachable(entry: VerdictEntry) -> bool:
    """The entry's evidence exists only in shapes the recipe cannot express: no change in
    it blocks (restated)."""
    return ReasonCode.UNREACHABLE in {r.code for r in entry.reasons}


def _worse_flags(before: VerdictEntry | None, entry: VerdictEntry) -> bool:
    """``entry`` carries an unevidenced (role, key, value) that ``before`` (None: a new
    combination) did not carry, and ``before`` did not already set that key in that role
    to an unevidenced value (one unbacked value for another is no worse)."""
    old_roles = before.roles if before is not None else ()
    carried = _role_flag_values(old_roles, unevidenced=False)
    unbacked_keys = {t[:2] for t in _role_flag_values(old_roles, unevidenced=True)}
    fresh = _role_flag_values(entry.roles, unevidenced=True) - carried
    return any(t[:2] not in unbacked_keys for t in fresh)


def per_selection_diff(
    base: AuditReport | None, head: AuditReport | None
) -> tuple[list[CombinationChange], Lens, int, int]:
    """Changes, lens occurrences, base and head combination counts."""
    base_map = dict(_expand(base))
    head_map = dict(_expand(head))
    changes: list[CombinationChange] = []
    lens_keys: set[tuple[str, str, str]] = set()  # (recipe, key, value)
    new_keys: set[tuple[str, str, str]] = set()
    for key, entry in head_map.items():
        recipe, selection = key
        before = base_map.get(key)
        head_flags = _role_flags(entry.roles)
        guide_only = entry.verdict is VerdictKind.GUIDE_ONLY
        if before is None:
            for role_flags in head_flags.values():
                new_keys.update((recipe, k, v) for k, v in role_flags.items())
            undeclared = guide_only and entry.declared_by is None
            evidenced = undeclared and _in_scope(entry)
            blocking = evidenced and not _unreachable(entry) and _worse_flags(None, entry)
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
                    unbenchmarked=undeclared and not evidenced,
                )
            )
            continue
        flags = _flag_changes(_role_flags(before.roles), head_flags)
        for role_flags in flags.added.values():
            lens_keys.update((recipe, k, v) for k, v in role_flags.items())
        for role_changes in flags.changed.values():
            lens_keys.update((recipe, k, new) for k, (_old, new) in role_changes.items())
        verdict_changed = before.verdict is not entry.verdict
        if not verdict_changed and flags.empty:
            continue
        block_reason: str | None = None
        unbenchmarked = False
        if guide_only and entry.declared_by is None:
            if before.verdict is VerdictKind.RECOMMENDED:
                block_reason = "regressed-verdict"
            elif not (_in_scope(before) or _in_scope(entry)):
                unbenchmarked = True
            elif not _unreachable(entry) and _worse_flags(before, entry):
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
                unbenchmarked=unbenchmarked,
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
    # a new combination's flag is in the lens when no base combination of its recipe sets it
    in_base = {
        (recipe, f.key, f.value)
        for (recipe, _), e in base_map.items()
        for r in e.roles
        for f in r.flags
    }
    lens_keys |= new_keys - in_base
    lens: Lens = {}
    for (recipe, selection), entry in head_map.items():
        seen_roles: set[tuple[str, str, str]] = set()
        for role in entry.roles:
            for flag in role.flags:
                marker = (role.role, flag.key, flag.value)
                if (recipe, flag.key, flag.value) in lens_keys and marker not in seen_roles:
                    seen_roles.add(marker)
                    lens.setdefault((flag.key, flag.value), []).append(
                        (recipe, selection, role.role, entry.verdict, flag.evidence)
                    )
    return changes, lens, len(base_map), len(head_map)


def assert_same_as_per_selection(
    diff: DiffReport, base: AuditReport | None, head: AuditReport | None
) -> int:
    """Every field of every changed combination, the lens, the summary and the gate."""
    changes, lens, base_count, head_count = per_selection_diff(base, head)
    expected = {(c.recipe, c.selection): c for c in changes}
    got = {}
    for change in diff.iter_changes():
        key = (change.recipe, change.selection)
        assert key not in got, f"{key} listed twice"
        got[key] = change
    assert got.keys() == expected.keys()
    for key, change in expected.items():
        assert got[key] == change, key
    for group in diff.changes:
        assert group.combinations == sum(s.count for s in group.selections) > 0
    kinds = Counter(c.kind for c in changes)
    summary = diff.summary
    assert (summary.base_combinations, summary.head_combinations) == (base_count, head_count)
    assert (summary.new, summary.removed, summary.verdict_changed, summary.flags_changed) == (
        kinds["new"],
        kinds["removed"],
        kinds["verdict-changed"],
        kinds["flags-changed"],
    )
    blocking = sum(1 for c in changes if c.blocking)
    declared = sum(1 for c in changes if c.declared_by and c.head_verdict is VerdictKind.GUIDE_ONLY)
    # the gate passes when nothing blocks and no new `verified` claim is unbacked (claims
    # are decided per recipe, not per combination: counted here, not restated)
    assert (diff.gate.blocking, diff.gate.declared, diff.gate.passed) == (
        blocking,
        declared,
        blocking == 0 and diff.gate.claims == 0,
    ), (diff.gate, blocking, declared)
    assert [(e.key, e.value) for e in diff.lens] == sorted(lens)
    for entry in diff.lens:
        occurrences = Counter(
            (o.recipe, selection, role.role, o.verdict, role.evidence)
            for o in entry.occurrences
            for selection in o.iter_selections()
            for role in o.roles
        )
        assert occurrences == Counter(lens[(entry.key, entry.value)])
        evidenced = sum(1 for *_, evidence in lens[(entry.key, entry.value)] if evidence)
        assert (entry.evidenced, entry.unevidenced) == (
            evidenced,
            len(lens[(entry.key, entry.value)]) - evidenced,
        )
    return len(changes)
