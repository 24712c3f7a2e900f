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

from collections.abc import Sequence
from typing import Protocol, TextIO

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from provenance.audit.verdicts import AuditReport
from provenance.escaping import terminal
from provenance.report.grouping import (
    UNCLASSIFIED_HEAD,
    GroupRow,
    ReverseRow,
    distinct_reverse,
    sections,
)
from provenance.report.width import resolve_width, table_room, units, wrap, wrap_text

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
    """Write the text report, laid out for ``width`` cells (default:
    :func:`provenance.report.width.resolve_width`); a table whose last column would be
    narrower than :data:`MIN_TEXT` is printed stacked, one block per row."""
    width = resolve_width(out, width)
    console = Console(
        file=out,
        width=width,
        color_system="standard" if color else None,
        force_terminal=color,
        highlight=False,
        emoji=False,
        markup=False,
    )

    def say(lines: Sequence[str], style: str = "") -> None:
        for line in lines:
            console.print(_t(line, style), no_wrap=True, overflow="ignore", crop=False)

    def cut(count: int) -> int | None:
        return None if show_all else count

    def hidden(total: int, shown: int | None, what: str) -> None:
        if shown is not None and total > shown:
            say(wrap_text(more(total - shown, what), width))

    summary = report.summary
    title = Text("provenance audit: ")
    title.append(terminal(", ".join(report.recipes) or "(no recipe)"), style="bold")
    console.print(title)
    if report.ledger_line():
        say(wrap_text(report.ledger_line(), width))
    if report.recipes_line():
        say(wrap_text(terminal(report.recipes_line()), width))
    if report.errors:
        say([f"{len(report.errors)} invalid recipe(s), not audited:"], "bold red")
        for error in report.errors:
            say(wrap_text(terminal(error.located()), width, "  ", "    "), "red")
    for notice in report.notices:
        say(wrap_text(terminal(f"notice: {notice}"), width, "", "  "), "yellow")
    say(
        wrap(
            [
                f"{summary.combinations} combinations:",
                f"{summary.recommended} recommended,",
                f"{summary.guide_only} guide-only",
                f"({summary.declared} declared,",
                f"{summary.undeclared_guide_only} undeclared)",
            ],
            width,
            "",
            "  ",
        )
    )
    if summary.by_reason:
        counted = [f"{code} {count}," for code, count in summary.by_reason.items()]
        counted[-1] = counted[-1].rstrip(",")
        say(wrap(["reasons", "(combinations):", *counted], width, "", "  "))
    parts = sections(report, show_all=show_all)
    multi = len(report.recipes) > 1

    console.print()
    console.print(Text("1. claims against evidence", style="bold"))
    if parts.backed:
        say([f"  backed: {summary.recommended} recommended combination(s)"])
        limit = cut(MAX_GROUPS)
        for row in parts.backed[:limit]:
            where = terminal(_where(row, multi))
            say(wrap_text(f"{where}: {row.recommended} of {row.combinations}", width, "    "))
        hidden(len(parts.backed), limit, "groups with recommended combinations")
    else:
        say(["  backed: no combination is recommended"])
    if report.claims:
        say([f"  not backed: {len(report.claims)} claim(s)"])
        limit = cut(MAX_CLAIMS)
        for claim in report.claims[:limit]:
            line = terminal(f"{claim.recipe} · {claim.subject}: {claim.claim} — {claim.detail}")
            say(wrap_text(line, width, "    ", "      "))
        hidden(len(report.claims), limit, "claims")
    else:
        say(["  not backed: no claim of the recipe lacks evidence"])
    if summary.unclassified_env:
        names = list(summary.unclassified_env.items())
        limit = cut(MAX_CLAIMS)
        say(wrap_text(f"{UNCLASSIFIED_HEAD}:", width, "  ", "  "), "yellow")
        for name, count in names[:limit]:
            say(wrap_text(terminal(f"{name} ({count})"), width, "    ", "      "))
        hidden(len(names), limit, "environment variables")

    console.print()
    console.print(
        Text(f"2. actionable groups ({len(parts.actionable)}): an edit could fix these", "bold")
    )
    if parts.actionable:
        say(
            wrap_text(
                f"  the smallest edits, proven by re-audit: {suggest_command(report.recipes)}; "
                "nearest evidence and its difference (+ recipe only, - evidence only) below",
                width,
                "  ",
                "  ",
            )
        )
        limit = cut(MAX_GROUPS)
        _groups(console, say, parts.actionable[:limit], multi, show_all, width)
        hidden(len(parts.actionable), limit, "actionable groups")

    console.print()
    console.print(
        Text(
            f"3. unreachable groups ({len(parts.unreachable)}): no recipe edit reaches evidence",
            "bold",
        )
    )
    if parts.unreachable:
        limit = cut(MAX_GROUPS)
        _unreachable(console, say, parts.unreachable[:limit], multi, width)
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
        where = terminal(f"{recipe}{idle.variant} · {idle.hardware}:")
        strategies = [f"{s}," for s in terminal(", ".join(idle.strategies)).split(", ")]
        strategies[0] = f"({strategies[0]}"
        strategies[-1] = f"{strategies[-1].rstrip(',')})"
        say(wrap([*units(where), str(idle.combinations), *strategies], width, "  ", "    "))
    hidden(len(parts.unbenchmarked), limit, "variant × hardware lines")

    if report.reverse:
        rows = distinct_reverse(report.reverse)
        console.print()
        say(
            wrap_text(
                f"evidence points in scope (reverse direction): {len(rows)} distinct of "
                f"{len(report.reverse)}",
                width,
                "",
                "  ",
            )
        )
        limit = cut(MAX_REVERSE_ROWS)
        _reverse(console, say, rows[:limit], width)
        hidden(len(rows), limit, "distinct evidence points")


#: Narrowest last column a table is printed with; narrower, its rows are stacked blocks.
MIN_TEXT = 40


class Say(Protocol):
    """Prints wrapped lines in one style (``say`` of :func:`write`)."""

    def __call__(self, lines: Sequence[str], style: str = "") -> None: ...


def _where(row: GroupRow, multi: bool) -> str:
    where = f"{row.variant} · {row.hardware} · {row.strategy}"
    return f"{row.recipe} · {where}" if multi else where


def _keys(row: GroupRow, multi: bool) -> list[str]:
    keys = [row.variant, row.hardware, row.strategy]
    return [row.recipe, *keys] if multi else keys


def _block_head(say: Say, keys: Sequence[str], counts: Sequence[str], width: int) -> None:
    """The head line of a stacked block: ``a · b · c  label N, label N`` (wrapped as
    units, so no count leaves its label)."""
    where = units(terminal(" · ".join(keys)))
    where[-1] += " "  # two spaces between the group and its counts
    tail = [f"{c}," for c in counts]
    tail[-1] = tail[-1].rstrip(",")
    say(wrap([*where, *tail], width, "  ", "      "), "bold")


def _print_table(
    console: Console,
    headers: Sequence[str],
    right: Sequence[bool],
    rows: Sequence[Sequence[Text]],
    last: str,
) -> None:
    table = Table(box=box.SIMPLE_HEAD, show_lines=False, expand=False)
    for name, justify in zip(headers, right, strict=True):
        table.add_column(name, justify="right" if justify else "left", no_wrap=True)
    table.add_column(last)
    for row in rows:
        table.add_row(*row)
    console.print(table)


def _group_lines(row: GroupRow, show_all: bool) -> list[tuple[str, str]]:
    """``(text, style)`` of a group's top reasons, what was left out, nearest evidence."""
    shown = row.top_reasons(None if show_all else TEXT_REASONS)
    lines = [(terminal(f"{label} ({count})"), "") for label, count in shown]
    left = len(row.reasons) - len(shown)
    if left > 0:
        lines.append((terminal(f"… {left} more reasons ({SEE_ALL})"), ""))
    for heading, label, count in row.nearest_lines():
        lines.append((terminal(f"{heading} ({count}): {label}"), "cyan"))
    return lines


def _cell(lines: Sequence[tuple[str, str]], room: int) -> Text:
    """The last cell of a table row: each line wrapped to ``room``."""
    cell = Text()
    for text, style in lines:
        for piece in wrap_text(text, room):
            if cell:
                cell.append("\n")
            cell.append(piece, style=style)
    return cell


def _groups(
    console: Console, say: Say, rows: list[GroupRow], multi: bool, show_all: bool, width: int
) -> None:
    """The actionable groups: a table when its reasons column has room, else blocks."""
    headers = (["recipe"] if multi else []) + ["variant", "hardware", "strategy"]
    counts = ["combos", "recommended", "guide-only", "declared"]
    values = [
        [terminal(k) for k in _keys(r, multi)]
        + [str(r.combinations), str(r.recommended), str(r.guide_only), str(r.declared)]
        for r in rows
    ]
    last = "top reasons (combinations); nearest evidence"
    room = table_room([[h, *(v[i] for v in values)] for i, h in enumerate(headers + counts)], width)
    if room >= MIN_TEXT:
        cells = [
            [
                *(Text(v) for v in value[: len(headers)]),
                Text(str(row.combinations)),
                Text(str(row.recommended), style="green" if row.recommended else ""),
                Text(str(row.guide_only), style="yellow" if row.guide_only else ""),
                Text(str(row.declared)),
                _cell(_group_lines(row, show_all), room),
            ]
            for row, value in zip(rows, values, strict=True)
        ]
        right = [False] * len(headers) + [True] * len(counts)
        _print_table(console, headers + counts, right, cells, last)
        return
    console.print()
    for row in rows:
        tally = [
            f"combos {row.combinations}",
            f"recommended {row.recommended}",
            f"guide-only {row.guide_only}",
        ]
        if row.declared:
            tally.append(f"declared {row.declared}")
        _block_head(say, _keys(row, multi), tally, width)
        for text, style in _group_lines(row, show_all):
            say(wrap_text(text, width, "    ", "      "), style)


def _unreachable(
    console: Console, say: Say, rows: list[tuple[GroupRow, str]], multi: bool, width: int
) -> None:
    """The unreachable groups and why: a table when there is room, else blocks."""
    headers = (["recipe"] if multi else []) + ["variant", "hardware", "strategy", "guide-only"]
    values = [[terminal(k) for k in _keys(r, multi)] + [str(r.guide_only)] for r, _ in rows]
    room = table_room([[h, *(v[i] for v in values)] for i, h in enumerate(headers)], width)
    if room >= MIN_TEXT:
        cells = [
            [*(Text(v) for v in value), _cell([(terminal(why), "")], room)]
            for value, (_, why) in zip(values, rows, strict=True)
        ]
        right = [False] * (len(headers) - 1) + [True]
        _print_table(console, headers, right, cells, "why")
        return
    console.print()
    for row, why in rows:
        _block_head(say, _keys(row, multi), [f"guide-only {row.guide_only}"], width)
        say(wrap_text(terminal(why), width, "    ", "    "))


def _reverse(console: Console, say: Say, rows: list[ReverseRow], width: int) -> None:
    """The reverse direction, one row per distinct point: a table when there is room,
    else blocks."""
    headers = ["config key", "PRs", "status", "records"]
    values = [
        [
            terminal(item.entry.config_key),
            terminal(", ".join(item.entry.prs) or "—"),
            terminal(item.entry.status),
            str(item.records),
        ]
        for item in rows
    ]
    details = [
        terminal(
            str(item.entry.combinations) if item.entry.status == "reproduced" else item.entry.why
        )
        for item in rows
    ]
    room = table_room([[h, *(v[i] for v in values)] for i, h in enumerate(headers)], width)
    if room >= MIN_TEXT:
        cells = [
            [
                Text(value[0]),
                Text(value[1]),
                Text(value[2], style="green" if value[2] == "reproduced" else "yellow"),
                Text(value[3]),
                _cell([(detail, "")], room),
            ]
            for value, detail in zip(values, details, strict=True)
        ]
        _print_table(console, headers, [False, False, False, True], cells, "combinations / why")
        return
    console.print()
    for value, detail, item in zip(values, details, rows, strict=True):
        status = value[2]
        tally = [status, f"records {item.records}"]
        if item.entry.status == "reproduced":
            tally.append(f"combinations {detail}")
        _block_head(say, [value[0]], tally, width)
        say(wrap_text(f"PRs: {value[1]}", width, "    ", "      "))
        if item.entry.status != "reproduced":
            say(wrap_text(detail, width, "    ", "    "))
