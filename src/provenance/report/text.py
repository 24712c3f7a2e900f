"""Text report for people: rich tables grouped by variant × hardware × strategy.

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
from provenance.report.grouping import group_rows

#: Most reverse-direction rows printed (the JSON report has them all).
MAX_REVERSE_ROWS = 60


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


def write(
    report: AuditReport, out: TextIO, *, color: bool = False, width: int | None = None
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
    summary = report.summary
    title = Text("provenance audit: ")
    title.append(terminal(", ".join(report.recipes) or "(no recipe)"), style="bold")
    console.print(title)
    if report.ledger_line():
        console.print(_t(report.ledger_line()))
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

    table = Table(box=box.SIMPLE_HEAD, show_lines=False, expand=False)
    multi = len(report.recipes) > 1
    if multi:
        table.add_column("recipe")
    for name in ("variant", "hardware", "strategy"):
        table.add_column(name)
    for name in ("combos", "recommended", "guide-only", "declared"):
        table.add_column(name, justify="right")
    table.add_column("top reasons (combinations)", overflow="fold")
    for row in group_rows(report):
        reasons = Text()
        for index, (label, count) in enumerate(row.top_reasons()):
            if index:
                reasons.append("\n")
            reasons.append(terminal(f"{label} ({count})"))
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
    console.print(table)

    if report.claims:
        console.print(Text("claims not backed by evidence", style="bold"))
        for claim in report.claims:
            console.print(_t(f"  {claim.recipe} · {claim.subject}: {claim.claim} — {claim.detail}"))

    if report.reverse:
        reverse = Table(
            title="evidence points in scope (reverse direction)",
            box=box.SIMPLE_HEAD,
            title_justify="left",
        )
        for name in ("config key", "PRs", "status", "combinations / why"):
            reverse.add_column(name, overflow="fold")
        # Reproduced and not-expressible points first: those are the findings; the many
        # not-reproduced points follow (the JSON report has every one).
        order = {"reproduced": 0, "not-expressible": 1, "not-reproduced": 2}
        shown = sorted(report.reverse, key=lambda e: (order.get(e.status, 3), e.config_key))
        for entry in shown[:MAX_REVERSE_ROWS]:
            detail = str(entry.combinations) if entry.status == "reproduced" else entry.why
            reverse.add_row(
                _t(entry.config_key),
                _t(", ".join(entry.prs) or "—"),
                _t(entry.status, "green" if entry.status == "reproduced" else "yellow"),
                _t(detail),
            )
        console.print(reverse)
        hidden = len(report.reverse) - MAX_REVERSE_ROWS
        if hidden > 0:
            console.print(_t(f"  … {hidden} more evidence points in the JSON report"))
