"""Write a PR audit in the requested format and decide its exit code.

``json``, ``markdown`` and ``text`` describe the diff (changes, flag lens, gate);
``sarif`` carries only what the PR introduces, on the lines it changed, and each recipe
invalid in the head (:func:`provenance.report.sarif.build_pr`);
``html`` is the head audit's page with the changed cells highlighted.
"""

from __future__ import annotations

from pathlib import Path
from typing import TextIO

from provenance.errors import EXIT_GATE, EXIT_INPUT, EXIT_OK
from provenance.escaping import markdown_inline, terminal
from provenance.report.diff import MAX_INLINE_RECIPES, write_json, write_markdown, write_text
from provenance.report.pr_html import no_evidence_line
from provenance.review.pr_audit import PrAuditResult


def write_pr_audit(result: PrAuditResult, fmt: str, out: TextIO) -> None:
    diff = result.diff
    ledger = diff.ledger_source.describe() if diff.ledger_source is not None else ""
    recipes = diff.recipes_source.describe() if diff.recipes_source is not None else ""
    if fmt == "json":
        write_json(diff, out)
    elif fmt == "markdown":
        write_markdown(diff, out)
        if ledger:
            out.write(f"\nEvidence: {markdown_inline(ledger)}.\n")
        if recipes:
            out.write(f"\nRecipes: {markdown_inline(recipes)}.\n")
        if diff.no_evidence:
            line = markdown_inline(no_evidence_line(diff))
            if len(diff.no_evidence) > MAX_INLINE_RECIPES:
                out.write(
                    f"\n<details><summary>No InferenceX evidence for "
                    f"{len(diff.no_evidence)} recipe(s)</summary>\n\n{line}\n\n</details>\n"
                )
            else:
                out.write(f"\n**{line}**\n")
    elif fmt == "text":
        write_text(diff, out)
        if ledger:
            out.write(f"{terminal(ledger)}\n")
        if recipes:
            out.write(f"{terminal(recipes)}\n")
        if diff.no_evidence:
            out.write(f"{terminal(no_evidence_line(diff))}\n")
    elif fmt == "sarif":
        from provenance.report.sarif import write_pr as write_sarif

        write_sarif(result.head_report, result.base_report, diff, out)
    elif fmt == "html":
        from provenance.report.html import HtmlDiff, render_html, sweeps_from_ledger

        report = result.head_report or result.base_report
        if report is None:
            out.write("<!doctype html><title>provenance</title><p>No recipe changed.</p>\n")
            return
        sweeps = None
        if report.ledger and Path(report.ledger).is_dir():
            sweeps = sweeps_from_ledger(Path(report.ledger))
        out.write(render_html(report, diff=HtmlDiff.from_review(diff), sweeps=sweeps))
    else:  # the CLI's choice list makes this unreachable
        raise ValueError(fmt)


def gate_exit_code(result: PrAuditResult) -> int:
    """3 when a recipe is invalid in the head (the report is written first), else 1 when
    the gate fails, else 0 (docs/cli.md)."""
    if result.diff.errors:
        return EXIT_INPUT
    return EXIT_OK if result.diff.gate.passed else EXIT_GATE
