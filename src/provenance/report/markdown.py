"""Markdown report for PR comments and job summaries.

Every value goes through :mod:`provenance.escaping` (HTML, markdown
metacharacters, backticks, ``@mentions``, newlines, control characters), and
``|`` is escaped inside table cells. PR references become links only when
they parse as ``owner/repo#N``.
"""

from __future__ import annotations

import re
from typing import TextIO

from provenance.audit.verdicts import AuditReport
from provenance.escaping import markdown_cell_code, markdown_code, markdown_inline
from provenance.report.grouping import UNCLASSIFIED_HEAD, GroupRow, distinct_reverse, sections

#: GitHub's limit on a comment's size, and the budget this report keeps within it
#: (the rest is room for a caller's heading or footer).
COMMENT_LIMIT = 65_536
BUDGET = 60_000
#: Character budgets of the sections (their sum stays below :data:`BUDGET`).
CLAIMS_BUDGET = 6_000
ACTIONABLE_BUDGET = 26_000
UNREACHABLE_BUDGET = 8_000
UNBENCHMARKED_BUDGET = 6_000
REVERSE_BUDGET = 8_000
MAX_CLAIMS = 40
#: Reasons named per actionable group without ``--all``.
TOP_REASONS = 3
#: Longest ``why`` shown in the reverse table (the JSON report has it whole).
MAX_WHY = 600
#: How to see what a cut left out.
SEE_ALL = "`provenance audit --all --format markdown` or `--format json`"

_PR = re.compile(r"^([A-Za-z0-9][A-Za-z0-9_.-]*/[A-Za-z0-9_.-]+)#([1-9][0-9]*)$")


def cell(value: object) -> str:
    """A table cell: inline-escaped (``markdown_inline`` also escapes ``|``)."""
    return markdown_inline(value)


def code_cell(value: object) -> str:
    """Inline code in a table cell: GFM splits cells on ``|`` even inside code spans."""
    return markdown_cell_code(value)


def pr_link(ref: str) -> str:
    match = _PR.match(ref)
    if match is None:
        return cell(ref)
    repo, number = match.groups()
    return f"[{cell(ref)}](https://github.com/{repo}/pull/{number})"


class _Section:
    """Lines added while a character budget lasts; what did not fit is counted."""

    def __init__(self, budget: int | None) -> None:
        self.lines: list[str] = []
        self.budget = budget
        self.used = 0
        self.left_out = 0

    def add(self, line: str) -> None:
        if self.left_out or (self.budget is not None and self.used + len(line) > self.budget):
            self.left_out += 1
            return
        self.lines.append(line)
        self.used += len(line) + 1

    def close(self, what: str) -> list[str]:
        if self.left_out:
            self.lines.append(f"\n_{self.left_out} more {what} not shown; all of them: {SEE_ALL}._")
        return self.lines


def _short(text: str) -> str:
    return text if len(text) <= MAX_WHY else text[: MAX_WHY - 1] + "…"


def write(
    report: AuditReport,
    out: TextIO,
    *,
    title: str = "provenance audit",
    show_all: bool = False,
) -> None:
    """Write the markdown report, summary first; without ``show_all`` it stays within
    :data:`BUDGET` characters (a PR comment), and every cut says what it left out."""

    def budget(size: int) -> int | None:
        return None if show_all else size

    summary = report.summary
    recipes = ", ".join(markdown_code(r) for r in report.recipes) or "(no recipe)"
    lines = [f"## {markdown_inline(title)}: {recipes}", ""]
    if report.ledger_line():
        lines += [f"Evidence: {markdown_inline(report.ledger_line())}.", ""]
    if report.recipes_line():
        lines += [f"Recipes: {markdown_inline(report.recipes_line())}.", ""]
    if report.errors:
        lines += [f"**{len(report.errors)} invalid recipe(s), not audited:**", ""]
        lines += [f"- {markdown_code(e.located())}" for e in report.errors]
        lines.append("")
    lines.append(
        f"**{summary.combinations}** combinations: **{summary.recommended}** recommended, "
        f"**{summary.guide_only}** guide-only ({summary.declared} declared, "
        f"**{summary.undeclared_guide_only}** undeclared)."
    )
    for notice in report.notices:
        lines.append(f"> {markdown_inline(notice)}")
    if summary.by_reason:
        lines += ["", "| reason | combinations |", "|---|---:|"]
        lines += [f"| {code_cell(code)} | {count} |" for code, count in summary.by_reason.items()]
    parts = sections(report, show_all=show_all)
    multi = len(report.recipes) > 1

    def where(row: GroupRow) -> list[str]:
        cells = [cell(row.variant), cell(row.hardware), cell(row.strategy)]
        return [cell(row.recipe), *cells] if multi else cells

    place = ["variant", "hardware", "strategy"]
    if multi:
        place.insert(0, "recipe")

    lines += ["", "### 1. Claims against evidence", ""]
    claims = _Section(budget(CLAIMS_BUDGET))
    if parts.backed:
        claims.add(f"Backed: **{summary.recommended}** recommended combination(s).")
        claims.add("")
        for row in parts.backed:
            claims.add(f"- {' · '.join(where(row))}: {row.recommended} of {row.combinations}")
    else:
        claims.add("Backed: no combination is recommended.")
    claims.add("")
    if report.claims:
        claims.add(f"Not backed: **{len(report.claims)}** claim(s).")
        claims.add("")
        for claim in report.claims[: None if show_all else MAX_CLAIMS]:
            claims.add(
                f"- {markdown_code(claim.recipe)} on {markdown_code(claim.subject)}: "
                f"{cell(claim.claim)} — {cell(claim.detail)}"
            )
        if not show_all and len(report.claims) > MAX_CLAIMS:
            claims.left_out += len(report.claims) - MAX_CLAIMS
    else:
        claims.add("Not backed: no claim of the recipe lacks evidence.")
    if summary.unclassified_env:
        claims.add("")
        claims.add(f"Unclassified: {UNCLASSIFIED_HEAD}:")
        claims.add("")
        for name, count in summary.unclassified_env.items():
            claims.add(f"- {markdown_code(name)} ({count})")
    lines += claims.close("claims, backed groups or unclassified names")

    lines += ["", f"### 2. Actionable groups ({len(parts.actionable)}): an edit could fix these"]
    if parts.actionable:
        command = (
            f"provenance suggest {report.recipes[0] if len(report.recipes) == 1 else 'RECIPE'}"
        )
        lines += [
            "",
            f"The smallest edits, proven by re-audit: `{command}`. Nearest evidence and its "
            "difference: `+` recipe only, `-` evidence only.",
            "",
        ]
        head = [*place, "guide-only", "top reasons (combinations)", "nearest evidence"]
        lines += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        table = _Section(budget(ACTIONABLE_BUDGET))
        for row in parts.actionable:
            shown = row.top_reasons(None if show_all else TOP_REASONS)
            reasons = "<br>".join(f"{cell(label)} ({count})" for label, count in shown)
            if len(row.reasons) > len(shown):
                reasons += f"<br>… {len(row.reasons) - len(shown)} more"
            near = (
                "<br>".join(
                    f"{heading}: {cell(_short(label))} ({count})"
                    for heading, label, count in row.nearest_lines()
                )
                or "—"
            )
            cells = [*where(row), str(row.guide_only), reasons or "—", near]
            table.add("| " + " | ".join(cells) + " |")
        lines += table.close("actionable groups")

    lines += [
        "",
        f"### 3. Unreachable groups ({len(parts.unreachable)}): no recipe edit reaches evidence",
    ]
    if parts.unreachable:
        head = [*place, "guide-only", "why"]
        lines += ["", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        table = _Section(budget(UNREACHABLE_BUDGET))
        for row, why in parts.unreachable:
            table.add(
                "| " + " | ".join([*where(row), str(row.guide_only), cell(_short(why))]) + " |"
            )
        lines += table.close("unreachable groups")

    cells_idle = sum(u.combinations for u in parts.unbenchmarked)
    lines += [
        "",
        f"### 4. Unbenchmarked: {cells_idle} combination(s) with no evidence in scope",
    ]
    if parts.unbenchmarked:
        lines.append("")
        idle_lines = _Section(budget(UNBENCHMARKED_BUDGET))
        for idle in parts.unbenchmarked:
            recipe = f"{markdown_code(idle.recipe)} · " if multi else ""
            idle_lines.add(
                f"- {recipe}{cell(idle.variant)} · {cell(idle.hardware)}: {idle.combinations} "
                f"({cell(', '.join(idle.strategies))})"
            )
        lines += idle_lines.close("variant × hardware lines")

    if report.reverse:
        rows = distinct_reverse(report.reverse)
        lines += [
            "",
            f"### Evidence points in scope: {len(rows)} distinct of {len(report.reverse)}",
            "",
        ]
        lines += [
            "| config key | PRs | status | records | combinations / why |",
            "|---|---|---|---:|---|",
        ]
        table = _Section(budget(REVERSE_BUDGET))
        for item in rows:
            entry = item.entry
            detail = (
                str(entry.combinations) if entry.status == "reproduced" else cell(_short(entry.why))
            )
            prs = ", ".join(pr_link(p) for p in entry.prs) or "—"
            table.add(
                f"| {code_cell(entry.config_key)} | {prs} | {cell(entry.status)} | "
                f"{item.records} | {detail} |"
            )
        lines += table.close("distinct evidence points")
    out.write("\n".join(lines) + "\n")
