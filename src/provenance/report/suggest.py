"""``provenance suggest`` output: text, markdown (a PR comment's suggested change), diff.

JSON is the report model itself (``provenance.suggest/v1``). Every value from the
recipe, the ledger or evidence goes through :mod:`provenance.escaping`: ``terminal``
for text, ``markdown_inline``/``markdown_code``/``markdown_block`` for markdown. The
``diff`` format writes the combined diff unescaped, for ``git apply``: it is the
recipe's own text, edited.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TextIO

from provenance.escaping import markdown_block, markdown_code, markdown_inline, terminal
from provenance.review.suggest.cost import SIMULATED_WARNING
from provenance.review.suggest.model import Suggestion, SuggestReport
from provenance.review.suggest.proof import CellCount, Proof

FORMATS = ("text", "json", "markdown", "diff")
#: Most evidence-needed lines printed in text and markdown (JSON has them all).
MAX_NEEDS = 12
#: GitHub refuses comments over 65,536 characters.
COMMENT_LIMIT = 65_000


def _cells(cells: Sequence[CellCount], most: int = 6) -> str:
    shown = [f"{c.variant} · {c.hardware} · {c.strategy} ({c.combinations})" for c in cells]
    text = ", ".join(shown[:most])
    if len(shown) > most:
        text += f", … {len(shown) - most} more cells (--format json)"
    return text


def proof_line(proof: Proof) -> str:
    """``+16 recommended (0 → 16), 2208 closer, none worse``."""
    parts = [
        f"+{proof.gained} recommended ({proof.recommended_before} → {proof.recommended_after})",
        f"{proof.better} closer to their nearest evidence",
    ]
    if proof.clean:
        parts.append("none worse")
    else:
        parts.append(f"{proof.lost} lose their recommendation, {proof.worse} move further away")
    return ", ".join(parts)


def reasons_line(proof: Proof) -> str:
    """``missing-flag 24376 → 24328, value-mismatch 17424 → 17400``: the reason codes
    whose combination counts the edit changes (the whole recipe, re-audited)."""
    codes = sorted(set(proof.reasons_before) | set(proof.reasons_after))
    changed = [
        f"{code} {proof.reasons_before.get(code, 0)} → {proof.reasons_after.get(code, 0)}"
        for code in codes
        if proof.reasons_before.get(code, 0) != proof.reasons_after.get(code, 0)
    ]
    return ", ".join(changed) or "no reason count changes"


def _conflict(item: Suggestion) -> str:
    return (
        f"conflicts with {', '.join(item.conflicts_with)}: added to the combined edit it "
        "makes it worse or cancels their gain, so it is left out"
    )


def cost_line(item: Suggestion) -> str:
    """``none``, or each thing the edit takes from combinations that did not ask for it."""
    return "; ".join(c.describe() for c in item.proof.cost) or "none"


def scoping_line(proof: Proof) -> str | None:
    """The flags the edit scopes away (dropped where only inherited and unbacked): no
    cost, but every user whose command changes is counted."""
    if not proof.scoped:
        return None
    return "scoping, no cost: " + "; ".join(s.describe() for s in proof.scoped)


def scoped_line(item: Suggestion) -> str | None:
    if not item.scoped_instead_of:
        return None
    avoided = "; ".join(c.describe() for c in item.scoped_instead_of)
    return f"scoped: the broader edit to the same evidence {avoided}"


def simulated_line(item: Suggestion) -> str | None:
    """The warning for runs that simulated speculative acceptance, naming them."""
    if not item.simulated_acceptance:
        return None
    runs = item.simulated_acceptance
    named = ", ".join(
        dict.fromkeys(f"{r.config_key} [{', '.join(r.prs) or 'no PR'}]" for r in runs)
    )
    flags = ", ".join(dict.fromkeys(f for r in runs for f in r.flags))
    return f"{SIMULATED_WARNING} ({len(runs)} run(s) set {flags}: {named})"


def _notes(item: Suggestion) -> list[str]:
    notes = (scoping_line(item.proof), scoped_line(item), simulated_line(item))
    return [n for n in notes if n is not None]


def _best(report: SuggestReport) -> Suggestion | None:
    """The proposed edit: the free suggestions combined, or the first free one. An edit
    with a cost (``proof.cost``) is never proposed."""
    return report.combined or next((s for s in report.suggestions if s.proof.free), None)


def write_text(report: SuggestReport, out: TextIO) -> None:
    w = out.write
    w(f"provenance suggest: {terminal(report.recipe)} ({terminal(report.recipe_file)})\n")
    w(
        f"{report.combinations} combinations, {report.recommended} recommended; "
        f"{report.candidates_proven} candidate edits re-rendered and re-audited\n"
    )
    if not report.suggestions:
        w("no edit the recipe schema can express reaches validated evidence\n")
    for item in report.suggestions:
        w(f"\n{item.id} [{item.kind}] {terminal(item.title)}\n")
        w(f"  for: {terminal(item.group)}\n")
        for change in item.changes:
            w(f"  - {terminal(change)}\n")
        w(f"  proof: {terminal(proof_line(item.proof))}\n")
        w(f"  cost: {terminal(cost_line(item))}\n")
        for note in _notes(item):
            w(f"  {terminal(note)}\n")
        if item.proof.gained_cells:
            w(f"  recommended after: {terminal(_cells(item.proof.gained_cells))}\n")
        if item.proof.costs:
            w(f"  worse after: {terminal(_cells(item.proof.costs))}\n")
        if item.conflicts_with:
            w(f"  {terminal(_conflict(item))}\n")
    best = _best(report)
    if best is None and report.suggestions:
        w(
            "\nno edit reaches validated evidence without a cost: each edit above names "
            "what it takes, and none is proposed (--format json has each one's diff)\n"
        )
    if best is not None:
        label = "all free suggestions together" if best is report.combined else best.id
        w(f"\nthe edit ({label}; apply with `git apply` in the recipes root):\n")
        w(f"  proof: {terminal(proof_line(best.proof))}\n")
        w(f"  cost: {terminal(cost_line(best))}\n")
        for best_note in (scoping_line(best.proof), simulated_line(best)):
            if best_note is not None:
                w(f"  {terminal(best_note)}\n")
        w(
            f"  re-audit: {best.proof.recommended_before} → {best.proof.recommended_after} "
            f"recommended of {best.proof.combinations}; "
            f"{terminal(reasons_line(best.proof))}\n"
        )
        for line in best.diff.splitlines():
            w(f"{terminal(line)}\n")
    if report.inexpressible:
        w("\nwhat the schema cannot express\n")
        for gap in report.inexpressible:
            w(f"  {terminal(gap.variant)} {terminal(gap.flag)}={terminal(gap.value)}: ")
            w(f"{terminal(gap.why)}\n")
    if report.evidence_needed:
        w(
            f"\nevidence that would have to be produced instead "
            f"({len(report.evidence_needed)} cells)\n"
        )
        for need in report.evidence_needed[:MAX_NEEDS]:
            w(
                f"  {terminal(need.variant)} · {terminal(need.hardware)} · "
                f"{terminal(need.strategy)} ({need.combinations}): an InferenceX "
                f"{terminal(need.deployment)} config for {terminal(need.checkpoint)} "
                f"on {terminal(need.hardware)} — {terminal(need.why)}\n"
            )
            for role, flags in need.flags.items():
                w(f"      {terminal(role)}: {terminal(' '.join(flags))}\n")
        hidden = len(report.evidence_needed) - MAX_NEEDS
        if hidden > 0:
            w(f"  … {hidden} more cells (--format json lists them all)\n")


def write_markdown(report: SuggestReport, out: TextIO) -> None:
    lines = [f"### Suggested change: {markdown_code(report.recipe)}", ""]
    lines.append(
        f"{report.combinations} combinations, **{report.recommended}** recommended today. "
        f"Each edit below was applied to a copy of {markdown_code(report.recipe_file)}, "
        f"re-rendered and re-audited ({report.candidates_proven} candidates)."
    )
    best = _best(report)
    if best is not None:
        lines += [
            "",
            f"**{markdown_inline(proof_line(best.proof))}**",
            "",
            f"Re-audit: {best.proof.recommended_before} → {best.proof.recommended_after} "
            f"recommended of {best.proof.combinations}; "
            f"{markdown_inline(reasons_line(best.proof))}.",
            "",
        ]
        for note in (scoping_line(best.proof), simulated_line(best)):
            if note is not None:
                lines += [f"> {markdown_inline(note)}", ""]
        lines.append(markdown_block(best.diff, "diff"))
    elif report.suggestions:
        lines += [
            "",
            "No edit reaches validated evidence without a cost: each edit below names what "
            "it takes, and none is proposed.",
        ]
    if report.suggestions:
        lines += [
            "",
            "| id | kind | edit | proof | cost | cells |",
            "|---|---|---|---|---|---|",
        ]
        for item in report.suggestions:
            changes = "<br>".join(markdown_inline(c) for c in item.changes)
            cells = markdown_inline(_cells(item.proof.gained_cells or item.proof.costs, 3))
            proof = markdown_inline(proof_line(item.proof))
            if item.conflicts_with:
                proof += "<br>" + markdown_inline(_conflict(item))
            cost = "<br>".join(markdown_inline(n) for n in (cost_line(item), *_notes(item)))
            lines.append(
                f"| {markdown_inline(item.id)} | {markdown_inline(item.kind)} | {changes} | "
                f"{proof} | {cost} | {cells} |"
            )
    else:
        lines += ["", "No edit the recipe schema can express reaches validated evidence."]
    if report.inexpressible:
        lines += ["", "#### What the schema cannot express", ""]
        for gap in report.inexpressible:
            lines.append(
                f"- {markdown_code(gap.variant)} {markdown_code(f'{gap.flag}={gap.value}')}: "
                f"{markdown_inline(gap.why)}"
            )
    if report.evidence_needed:
        lines += ["", "#### Evidence that would have to be produced instead", ""]
        for need in report.evidence_needed[:MAX_NEEDS]:
            flags = "; ".join(
                f"{markdown_inline(role)}: " + " ".join(markdown_code(f) for f in found)
                for role, found in need.flags.items()
            )
            lines.append(
                f"- {markdown_code(need.variant)} · {markdown_code(need.hardware)} · "
                f"{markdown_code(need.strategy)} ({need.combinations}): an InferenceX "
                f"{markdown_inline(need.deployment)} config for "
                f"{markdown_code(need.checkpoint)} — {flags}"
            )
        hidden = len(report.evidence_needed) - MAX_NEEDS
        if hidden > 0:
            lines.append(f"- … {hidden} more (`provenance suggest --format json`)")
    text = "\n".join(lines) + "\n"
    if len(text) > COMMENT_LIMIT:
        cut = text[: COMMENT_LIMIT - 200].rsplit("\n", 1)[0]
        text = cut + "\n\n_Cut to fit a GitHub comment; `--format json` has everything._\n"
    out.write(text)


def write_diff(report: SuggestReport, out: TextIO) -> None:
    best = _best(report)
    if best is not None:
        out.write(best.diff)


def write(report: SuggestReport, fmt: str, out: TextIO) -> None:
    if fmt == "json":
        out.write(report.model_dump_json(by_alias=True, indent=2) + "\n")
    elif fmt == "markdown":
        write_markdown(report, out)
    elif fmt == "diff":
        write_diff(report, out)
    else:
        write_text(report, out)
