"""Text report for people, summary first (:mod:`provenance.report.grouping`): the claims
against what is backed, the actionable groups with their nearest evidence, the unreachable
groups, the unbenchmarked cells one line per variant × hardware, then the reverse direction.
Every cut says how many rows it left out; ``--all`` (``show_all``) prints everything.

Every value that came from a recipe, the ledger or evidence passes through
:func:`provenance.escaping.terminal` and is put in a ``rich.text.Text`` (never
parsed as rich markup), so a hostile value cannot move the cursor, recolour
the terminal or inject markup.
"""

from __future__ import annotations

import os
from typing import TextIO

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from provenance.audit.verdicts import AuditReport
from provenance.escaping import terminal
from provenance.report.grouping import UNCLASSIFIED_HEAD, GroupRow, distinct_reverse, sections

#: Most rows printed per section without ``--all`` (the JSON report has them all).
MAX_GROUPS = 30
MAX_UNBENCHMARKED = 40
MAX_CLAIMS = 40
MAX_REVERSE_ROWS = 30
#: Reasons named per actionable group without ``--all``.
TEXT_REASONS = 3
#: How to see what a cut left out.
SEE_ALL = "provenance audit --all"


def _t(value: object, style: str = "") -> Text:
    return Text(terminal(value), style=style)


#: Width for output that is neither a terminal nor sized by ``COLUMNS`` (a pipe, a file).
PIPE_WIDTH = 160


def _width(out: TextIO, width: int | None) -> int | None:
    """``width`` if given; else None on a terminal or with ``COLUMNS`` set (rich then fits
    the terminal), else :data:`PIPE_WIDTH`."""
    if width is not None:
        return width
    if os.environ.get("COLUMNS") or (hasattr(out, "isatty") and out.isatty()):
        return None
    return PIPE_WIDTH


def more(hidden: int, what: str) -> str:
    """The line that says what a cut left out and how to see it."""
    return f"… {hidden} more {what} not shown (all of them: {SEE_ALL}, or --format json)"


def suggest_command(recipes: tuple[str, ...]) -> str:
    """``provenance suggest RECIPE``, naming the recipe when there is one."""
    return f"provenance suggest {recipes[0] if len(recipes) == 1 else 'RECIPE'}"


def write(
    report: AuditReport,
    out: TextIO,
    *,
    color: bool = False,
    width: int | None = None,
    show_all: bool = False,
) -> None:
    """Write the text report; it fits the terminal (``width`` fixes the width)."""
    width = _width(out, width)
    console = Console(
        file=out,
        width=width,
        color_system="standard" if color else None,
        force_terminal=color,
        highlight=False,
        emoji=False,
        markup=False,
    )

    def cut(count: int) -> int | None:
        return None if show_all else count

    def hidden(total: int, shown: int | None, what: str) -> None:
        if shown is not None and total > shown:
            console.print(_t(more(total - shown, what)))

    summary = report.summary
    title = Text("provenance audit: ")
    title.append(terminal(", ".join(report.recipes) or "(no recipe)"), style="bold")
    console.print(title)
    if report.ledger_line():
        console.print(_t(report.ledger_line()))
    if report.errors:
        console.print(_t(f"{len(report.errors)} invalid recipe(s), not audited:", "bold red"))
        for error in report.errors:
            console.print(_t(f"  {error.located()}", "red"))
    for notice in report.notices:
        console.print(_t(f"notice: {notice}", "yellow"))
    console.print(
        _t(
            f"{summary.combinations} combinations: {summary.recommended} recommended, "
            f"{summary.guide_only} guide-only ({summary.declared} declared, "
            f"{summary.undeclared_guide_only} undeclared)"
        )
    )
    if summary.by_reason:
        console.print(
            _t(
                "reasons (combinations): "
                + ", ".join(f"{code} {count}" for code, count in summary.by_reason.items())
            )
        )
    parts = sections(report, show_all=show_all)
    multi = len(report.recipes) > 1

    console.print()
    console.print(Text("1. claims against evidence", style="bold"))
    if parts.backed:
        console.print(_t(f"  backed: {summary.recommended} recommended combination(s)"))
        limit = cut(MAX_GROUPS)
        for row in parts.backed[:limit]:
            console.print(_t(f"    {_where(row, multi)}: {row.recommended} of {row.combinations}"))
        hidden(len(parts.backed), limit, "groups with recommended combinations")
    else:
        console.print(_t("  backed: no combination is recommended"))
    if report.claims:
        console.print(_t(f"  not backed: {len(report.claims)} claim(s)"))
        limit = cut(MAX_CLAIMS)
        for claim in report.claims[:limit]:
            console.print(
                _t(f"    {claim.recipe} · {claim.subject}: {claim.claim} — {claim.detail}")
            )
        hidden(len(report.claims), limit, "claims")
    else:
        console.print(_t("  not backed: no claim of the recipe lacks evidence"))
    if summary.unclassified_env:
        names = list(summary.unclassified_env.items())
        limit = cut(MAX_CLAIMS)
        console.print(_t(f"  {UNCLASSIFIED_HEAD}:", "yellow"))
        for name, count in names[:limit]:
            console.print(_t(f"    {name} ({count})"))
        hidden(len(names), limit, "environment variables")

    console.print()
    console.print(
        Text(f"2. actionable groups ({len(parts.actionable)}): an edit could fix these", "bold")
    )
    if parts.actionable:
        console.print(
            _t(
                f"  the smallest edits, proven by re-audit: {suggest_command(report.recipes)}; "
                "nearest evidence and its difference (+ recipe only, - evidence only) below"
            )
        )
        limit = cut(MAX_GROUPS)
        console.print(_group_table(parts.actionable[:limit], multi, show_all))
        hidden(len(parts.actionable), limit, "actionable groups")

    console.print()
    console.print(
        Text(
            f"3. unreachable groups ({len(parts.unreachable)}): no recipe edit reaches evidence",
            "bold",
        )
    )
    if parts.unreachable:
        table = Table(box=box.SIMPLE_HEAD, show_lines=False, expand=False)
        if multi:
            table.add_column("recipe")
        for name in ("variant", "hardware", "strategy"):
            table.add_column(name)
        table.add_column("guide-only", justify="right")
        table.add_column("why", overflow="fold")
        limit = cut(MAX_GROUPS)
        for row, why in parts.unreachable[:limit]:
            cells = [_t(row.variant), _t(row.hardware), _t(row.strategy), _t(row.guide_only)]
            cells.append(_t(why))
            if multi:
                cells.insert(0, _t(row.recipe))
            table.add_row(*cells)
        console.print(table)
        hidden(len(parts.unreachable), limit, "unreachable groups")

    console.print()
    idle_cells = sum(u.combinations for u in parts.unbenchmarked)
    console.print(
        Text(
            f"4. unbenchmarked: {idle_cells} combination(s) with no evidence in scope, "
            "one line per variant × hardware",
            "bold",
        )
    )
    limit = cut(MAX_UNBENCHMARKED)
    for idle in parts.unbenchmarked[:limit]:
        recipe = f"{idle.recipe} · " if multi else ""
        console.print(
            _t(
                f"  {recipe}{idle.variant} · {idle.hardware}: {idle.combinations} "
                f"({', '.join(idle.strategies)})"
            )
        )
    hidden(len(parts.unbenchmarked), limit, "variant × hardware lines")

    if report.reverse:
        rows = distinct_reverse(report.reverse)
        console.print()
        reverse = Table(
            title=(
                f"evidence points in scope (reverse direction): {len(rows)} distinct of "
                f"{len(report.reverse)}"
            ),
            box=box.SIMPLE_HEAD,
            title_justify="left",
        )
        for name in ("config key", "PRs", "status", "records", "combinations / why"):
            reverse.add_column(
                name, overflow="fold", justify="right" if name == "records" else "left"
            )
        limit = cut(MAX_REVERSE_ROWS)
        for item in rows[:limit]:
            entry = item.entry
            detail = str(entry.combinations) if entry.status == "reproduced" else entry.why
            reverse.add_row(
                _t(entry.config_key),
                _t(", ".join(entry.prs) or "—"),
                _t(entry.status, "green" if entry.status == "reproduced" else "yellow"),
                _t(item.records),
                _t(detail),
            )
        console.print(reverse)
        hidden(len(rows), limit, "distinct evidence points")


def _where(row: GroupRow, multi: bool) -> str:
    where = f"{row.variant} · {row.hardware} · {row.strategy}"
    return f"{row.recipe} · {where}" if multi else where


def _group_table(rows: list[GroupRow], multi: bool, show_all: bool) -> Table:
    table = Table(box=box.SIMPLE_HEAD, show_lines=False, expand=False)
    if multi:
        table.add_column("recipe")
    for name in ("variant", "hardware", "strategy"):
        table.add_column(name)
    for name in ("combos", "recommended", "guide-only", "declared"):
        table.add_column(name, justify="right")
    table.add_column("top reasons (combinations); nearest evidence", overflow="fold")
    for row in rows:
        reasons = Text()
        shown = row.top_reasons(None if show_all else TEXT_REASONS)
        for index, (label, count) in enumerate(shown):
            if index:
                reasons.append("\n")
            reasons.append(terminal(f"{label} ({count})"))
        left = len(row.reasons) - len(shown)
        if left > 0:
            reasons.append("\n")
            reasons.append(terminal(f"… {left} more reasons ({SEE_ALL})"))
        for heading, label, count in row.nearest_lines():
            reasons.append("\n")
            reasons.append(terminal(f"{heading} ({count}): {label}"), style="cyan")
        cells = [
            _t(row.variant),
            _t(row.hardware),
            _t(row.strategy),
            _t(row.combinations),
            _t(row.recommended, "green" if row.recommended else ""),
            _t(row.guide_only, "yellow" if row.guide_only else ""),
            _t(row.declared),
            reasons,
        ]
        if multi:
            cells.insert(0, _t(row.recipe))
        table.add_row(*cells)
    return table
