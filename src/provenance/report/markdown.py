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
from provenance.report.grouping import group_rows

#: Most summary rows written, and a character budget for them: a PR comment is
#: limited to 65,536 characters and the claims and reverse tables follow.
MAX_ROWS = 150
ROW_BUDGET = 45_000
MAX_REVERSE_ROWS = 30
MAX_CLAIMS = 40
#: Longest ``why`` shown in the reverse table (the JSON report has it whole).
MAX_WHY = 600

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


def write(report: AuditReport, out: TextIO, *, title: str = "provenance audit") -> None:
    summary = report.summary
    recipes = ", ".join(markdown_code(r) for r in report.recipes) or "(no recipe)"
    lines = [f"## {markdown_inline(title)}: {recipes}", ""]
    if report.ledger_line():
        lines += [f"Evidence: {markdown_inline(report.ledger_line())}.", ""]
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
    rows = group_rows(report)
    if rows:
        multi = len(report.recipes) > 1
        head = ["variant", "hardware", "strategy", "combos", "recommended", "guide-only"]
        head += ["declared", "top reasons"]
        if multi:
            head.insert(0, "recipe")
        lines += ["", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        written = 0
        used = 0
        for row in rows[:MAX_ROWS]:
            reasons = "<br>".join(f"{cell(label)} ({count})" for label, count in row.top_reasons())
            cells = [
                cell(row.variant),
                cell(row.hardware),
                cell(row.strategy),
                str(row.combinations),
                str(row.recommended),
                str(row.guide_only),
                str(row.declared),
                reasons or "—",
            ]
            if multi:
                cells.insert(0, cell(row.recipe))
            line = "| " + " | ".join(cells) + " |"
            if used + len(line) > ROW_BUDGET:
                break
            lines.append(line)
            used += len(line) + 1
            written += 1
        if len(rows) > written:
            lines.append(f"\n_{len(rows) - written} more rows in the JSON report._")
    if report.claims:
        lines += ["", "### Claims not backed by evidence", ""]
        for claim in report.claims[:MAX_CLAIMS]:
            lines.append(
                f"- {markdown_code(claim.recipe)} on {markdown_code(claim.subject)}: "
                f"{cell(claim.claim)} — {cell(claim.detail)}"
            )
        if len(report.claims) > MAX_CLAIMS:
            lines.append(f"\n_{len(report.claims) - MAX_CLAIMS} more claims in the JSON report._")
    if report.reverse:
        lines += ["", "### Evidence points in scope", ""]
        lines += ["| config key | PRs | status | combinations / why |", "|---|---|---|---|"]
        for entry in report.reverse[:MAX_REVERSE_ROWS]:
            why = entry.why if len(entry.why) <= MAX_WHY else entry.why[: MAX_WHY - 1] + "…"
            detail = str(entry.combinations) if entry.status == "reproduced" else cell(why)
            prs = ", ".join(pr_link(p) for p in entry.prs) or "—"
            lines.append(
                f"| {code_cell(entry.config_key)} | {prs} | {cell(entry.status)} | {detail} |"
            )
        if len(report.reverse) > MAX_REVERSE_ROWS:
            lines.append(
                f"\n_{len(report.reverse) - MAX_REVERSE_ROWS} more evidence points in the "
                "JSON report._"
            )
    out.write("\n".join(lines) + "\n")
