"""Writers for the diff-aware audit: text (terminal), markdown (PR comment / job summary), json.

Everything is grouped so that tens of thousands of changed combinations stay
readable: blocking combinations by (recipe, variant, hardware, strategy, why),
the flag lens by (flag, variant, hardware, strategy, role).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TextIO

from provenance.escaping import markdown_cell_code as cell_code
from provenance.escaping import markdown_code, markdown_inline, terminal
from provenance.report.grouping import reason_label
from provenance.review.diff import ChangeGroup, DiffReport, LensEntry

MAX_GROUPS = 60
MAX_LENS_ROWS = 80
#: rows of the "every change" table (by kind × recipe × variant × hardware × strategy)
MAX_CHANGE_ROWS = 40

BLOCK_TEXT = {
    "new-guide-only": "newly exposed, guide-only",
    "regressed-verdict": "was recommended, now guide-only",
    "new-unevidenced-flag": "now carries a major flag with no evidence in scope",
}


@dataclass
class _Group:
    count: int = 0
    reasons: Counter[str] = field(default_factory=Counter)
    nearest: Counter[str] = field(default_factory=Counter)
    added: Counter[str] = field(default_factory=Counter)


def blocking_groups(
    changes: Iterable[ChangeGroup],
) -> list[tuple[tuple[str, str, str, str, str], _Group]]:
    """Blocking combinations by (recipe, variant, hardware, strategy, why); every count
    is a number of combinations (a group's reasons count once per combination)."""
    groups: dict[tuple[str, str, str, str, str], _Group] = defaultdict(_Group)
    for change in changes:
        if not change.blocking:
            continue
        reasons = [reason_label(r) for r in change.reasons]
        nearest = [
            f"{pr} ({near.config_key}, {near.distance} flag(s) apart)"
            for near in change.nearest
            for pr in near.prs
        ]
        added = [
            f"{role}: {k}={v}"
            for role, flags in change.flags.added.items()
            for k, v in flags.items()
        ]
        added += [
            f"{role}: {k}={new} (was {old})"
            for role, moved in change.flags.changed.items()
            for k, (old, new) in moved.items()
        ]
        for selections in change.selections:
            count = selections.count
            if not count:
                continue
            key = (
                change.recipe,
                selections.variant,
                selections.hardware,
                selections.strategy or "omni",
                change.block_reason or "",
            )
            group = groups[key]
            group.count += count
            for counter, labels in (
                (group.reasons, reasons),
                (group.nearest, nearest),
                (group.added, added),
            ):
                for label in labels:
                    counter[label] += count
    return sorted(groups.items(), key=lambda kv: (-kv[1].count, kv[0]))


def change_rows(changes: Iterable[ChangeGroup]) -> list[tuple[tuple[str, str, str, str, str], int]]:
    """Every changed combination, counted by (kind, recipe, variant, hardware, strategy)."""
    rows: Counter[tuple[str, str, str, str, str]] = Counter()
    for change in changes:
        for selections in change.selections:
            key = (
                change.kind,
                change.recipe,
                selections.variant,
                selections.hardware,
                selections.strategy or "omni",
            )
            rows[key] += selections.count
    return sorted((kv for kv in rows.items() if kv[1]), key=lambda kv: (kv[0][0], -kv[1], kv[0]))


@dataclass
class _LensRow:
    evidenced: int = 0
    unevidenced: int = 0
    prs: set[str] = field(default_factory=set)


def lens_rows(entry: LensEntry) -> list[tuple[tuple[str, str, str, str], _LensRow]]:
    """One row per (variant, hardware, strategy, role) in which the flag now appears;
    counts are combinations."""
    rows: dict[tuple[str, str, str, str], _LensRow] = defaultdict(_LensRow)
    for occ in entry.occurrences:
        for selections in occ.selections:
            count = selections.count
            if not count:
                continue
            strategy = selections.strategy or "omni"
            for role in occ.roles:
                row = rows[(selections.variant, selections.hardware, strategy, role.role)]
                if role.evidence:
                    row.evidenced += count
                    row.prs.update(pr for ref in role.evidence for pr in ref.prs)
                else:
                    row.unevidenced += count
    return sorted(rows.items())


def write_json(diff: DiffReport, out: TextIO) -> None:
    # pydantic's serialiser is several times faster than json.dump on a large diff.
    out.write(diff.model_dump_json(by_alias=True))
    out.write("\n")


def _gate_line(diff: DiffReport) -> str:
    gate = diff.gate
    unbenchmarked = (
        f"; {gate.unbenchmarked} changed combination(s) unbenchmarked (no in-scope evidence "
        "before or after): reported, not blocking"
        if gate.unbenchmarked
        else ""
    )
    if gate.passed:
        declared = f"; {gate.declared} declared guide-only" if gate.declared else ""
        return (
            "gate: PASS — the PR makes no benchmarked combination worse and adds no unbacked "
            f"claim{declared}{unbenchmarked}"
        )
    parts = []
    if gate.blocking:
        parts.append(f"{gate.blocking} combination(s) made worse or newly unbacked")
    if gate.claims:
        parts.append(f"{gate.claims} new verified claim(s) no recommended combination backs")
    return f"gate: FAIL — {' and '.join(parts)}, not covered by a declaration{unbenchmarked}"


def write_markdown(diff: DiffReport, out: TextIO) -> None:
    s = diff.summary
    w = out.write
    w(f"### provenance: PR audit {markdown_code(diff.base)} → {markdown_code(diff.head)}\n\n")
    w(f"**{markdown_inline(_gate_line(diff))}**\n\n")
    recipes = ", ".join(markdown_code(r) for r in diff.recipes) or "none"
    w(f"Recipes audited: {recipes}\n\n")
    w("| combinations (base → head) | new | removed | verdict changed | flags changed |\n")
    w("|---|---|---|---|---|\n")
    w(
        f"| {s.base_combinations} → {s.head_combinations} | {s.new} | {s.removed} | "
        f"{s.verdict_changed} | {s.flags_changed} |\n\n"
    )
    groups = blocking_groups(diff.changes)
    if groups:
        w("#### Blocking (new or regressed, undeclared)\n\n")
        w("| recipe | variant | hardware | strategy | why | combinations | top reasons ")
        w("| nearest |\n")
        w("|---|---|---|---|---|---|---|---|\n")
        for (recipe, variant, hardware, strategy, why), g in groups[:MAX_GROUPS]:
            reasons = "<br>".join(f"{cell_code(r)} ×{n}" for r, n in g.reasons.most_common(3))
            nearest = "<br>".join(markdown_inline(n) for n, _ in g.nearest.most_common(2))
            w(
                f"| {cell_code(recipe)} | {cell_code(variant)} | {cell_code(hardware)} "
                f"| {cell_code(strategy)} | {markdown_inline(BLOCK_TEXT.get(why, why))} "
                f"| {g.count} | {reasons} | {nearest or '—'} |\n"
            )
        if len(groups) > MAX_GROUPS:
            w(f"\n… {len(groups) - MAX_GROUPS} more groups in the JSON output.\n")
        w("\n")
    rows = change_rows(diff.changes)
    if rows:
        w("#### Changed combinations\n\n")
        w("| change | recipe | variant | hardware | strategy | combinations |\n")
        w("|---|---|---|---|---|---|\n")
        for (kind, recipe, variant, hardware, strategy), count in rows[:MAX_CHANGE_ROWS]:
            w(
                f"| {cell_code(kind)} | {cell_code(recipe)} | {cell_code(variant)} "
                f"| {cell_code(hardware)} | {cell_code(strategy)} | {count} |\n"
            )
        if len(rows) > MAX_CHANGE_ROWS:
            w(f"\n… {len(rows) - MAX_CHANGE_ROWS} more rows in the JSON output.\n")
        w("\n")
    if diff.lens:
        w("#### Flag lens: every combination where an added or changed major flag appears\n\n")
        w("| flag | variant | hardware | strategy | role | with evidence | without | PRs |\n")
        w("|---|---|---|---|---|---|---|---|\n")
        shown = total = 0
        for entry in diff.lens:
            rows_of_entry = lens_rows(entry)
            total += len(rows_of_entry)
            for (variant, hardware, strategy, role), row in rows_of_entry:
                if shown >= MAX_LENS_ROWS:
                    break
                shown += 1
                prs = ", ".join(markdown_inline(p) for p in sorted(row.prs)) or "—"
                w(
                    f"| {cell_code(f'{entry.key}={entry.value}')} | {cell_code(variant)} "
                    f"| {cell_code(hardware)} | {cell_code(strategy)} | "
                    f"{cell_code(role)} | {row.evidenced} | {row.unevidenced} | {prs} |\n"
                )
        if total > shown:
            w(f"\n… {total - shown} more rows in the JSON output.\n")


def write_text(diff: DiffReport, out: TextIO) -> None:
    s = diff.summary
    w = out.write
    w(f"PR audit {terminal(diff.base)} -> {terminal(diff.head)}\n")
    w(f"recipes: {', '.join(terminal(r) for r in diff.recipes) or 'none changed'}\n")
    w(
        f"combinations: {s.base_combinations} -> {s.head_combinations}; new {s.new}, "
        f"removed {s.removed}, verdict changed {s.verdict_changed}, "
        f"flags changed {s.flags_changed}\n"
    )
    w(_gate_line(diff) + "\n")
    for (recipe, variant, hardware, strategy, why), g in blocking_groups(diff.changes)[:MAX_GROUPS]:
        w(
            f"\n  BLOCK {terminal(recipe)} · {terminal(variant)} · {terminal(hardware)} · "
            f"{terminal(strategy)}: {g.count} combination(s) {BLOCK_TEXT.get(why, why)}\n"
        )
        for flag, n in g.added.most_common(4):
            w(f"      + {terminal(flag)} ({n})\n")
        for reason, n in g.reasons.most_common(3):
            w(f"      reason: {terminal(reason)} ({n})\n")
        for near, _n in g.nearest.most_common(2):
            w(f"      nearest: {terminal(near)}\n")
    rows = change_rows(diff.changes)
    if rows:
        w("\nchanged combinations:\n")
        for (kind, recipe, variant, hardware, strategy), count in rows[:MAX_CHANGE_ROWS]:
            w(
                f"  {kind} {terminal(recipe)} · {terminal(variant)} · {terminal(hardware)} · "
                f"{terminal(strategy)}: {count}\n"
            )
        if len(rows) > MAX_CHANGE_ROWS:
            w(f"  … {len(rows) - MAX_CHANGE_ROWS} more rows in the JSON output\n")
    if diff.lens:
        w("\nflag lens (added or changed major flags, where they now appear):\n")
        for entry in diff.lens:
            w(
                f"  {terminal(entry.key)}={terminal(entry.value)}: {entry.evidenced} with "
                f"evidence, {entry.unevidenced} without\n"
            )
            for (variant, hardware, strategy, role), row in lens_rows(entry)[:MAX_LENS_ROWS]:
                prs = ", ".join(sorted(row.prs)) or "no evidence"
                w(
                    f"    {terminal(variant)} · {terminal(hardware)} · {terminal(strategy)} · "
                    f"{terminal(role)}: {row.evidenced}/{row.evidenced + row.unevidenced} "
                    f"backed ({terminal(prs)})\n"
                )
