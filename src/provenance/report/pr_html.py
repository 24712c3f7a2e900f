"""The gate section of a PR's HTML page: PASS or FAIL and why, then the blocking list.

The page of a PR audit (``provenance audit --repo … --format html``) is the head audit's
evidence matrix with the changed cells highlighted; above it, this section says what the
markdown comment says first (``docs/audit.md``, "The PR gate"): the verdict line, then
every blocking group in the reviewer's order — regressions, new claims, new unevidenced
flags, new guide-only combinations — each with the flag it is about, its cells and the
nearest evidence. It is plain HTML written on the server (it shows without JavaScript);
every value in it comes from the audit of an untrusted PR and goes through
:func:`provenance.escaping.html_text`, never into an attribute other than ``class`` and
``id``, whose values are fixed here.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from provenance.escaping import html_text
from provenance.report.diff import (
    CATEGORY_TITLE,
    SECTION_ORDER,
    BlockGroup,
    blocking_groups,
    notice_sections,
    verdict_line,
)
from provenance.review.diff import DiffReport


class GateCell(BaseModel):
    """Combinations of one (variant, hardware) cell of a blocking group."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    variant: str
    hardware: str
    combinations: int
    strategies: tuple[str, ...]
    nearest: str


class GateGroup(BaseModel):
    """One blocking group (or, for ``new-claim``, one new unbacked claim)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    category: str
    #: the flag (``role: key=value``) the group is about, or the claim
    subject: str
    combinations: int
    recipes: tuple[str, ...]
    cells: tuple[GateCell, ...] = ()
    detail: str = ""


class HtmlGate(BaseModel):
    """The gate's decision and the blocking list, in the reviewer's order."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    passed: bool
    verdict: str
    groups: tuple[GateGroup, ...] = ()
    #: :func:`no_evidence_line`, when the ledger has no evidence for a recipe's model
    no_evidence: str = ""
    #: (title, located errors) of the recipes invalid in the head (blocking) and in the
    #: base (a notice): :func:`~provenance.report.diff.notice_sections`
    invalid: tuple[tuple[str, tuple[str, ...]], ...] = ()

    @classmethod
    def from_review(cls, diff: DiffReport) -> HtmlGate:
        blocking = blocking_groups(diff.changes)
        by_category: dict[str, list[GateGroup]] = {c: [] for c in SECTION_ORDER}
        for group in blocking:
            by_category[group.category].append(_gate_group(group))
        by_category["new-claim"] = [
            GateGroup(
                category="new-claim",
                subject=claim.subject
                if claim.kv_offload is not None
                else f"meta.hardware.{claim.hardware}: {claim.claim}",
                combinations=claim.recommended,
                recipes=(claim.recipe,),
                detail=claim.detail,
            )
            for claim in diff.claims
        ]
        return cls(
            passed=diff.gate.passed,
            verdict=verdict_line(diff, blocking),
            groups=tuple(g for c in SECTION_ORDER for g in by_category[c]),
            no_evidence=no_evidence_line(diff) if diff.no_evidence else "",
            invalid=tuple((title, tuple(lines)) for title, lines in notice_sections(diff)),
        )


def no_evidence_line(diff: DiffReport) -> str:
    """What a PR audit says when the ledger holds no InferenceX evidence for the model of
    a recipe it audited (plain text: escape it to render)."""
    names = ", ".join(diff.no_evidence)
    return (
        f"The ledger has no InferenceX evidence for the model of {names} on any hardware "
        "audited: every combination of it is guide-only (no-evidence), and changes to "
        "cells nobody benchmarked do not block."
    )


def _gate_group(group: BlockGroup) -> GateGroup:
    cells = sorted(group.cells.items(), key=lambda kv: (-kv[1].count, kv[0]))
    return GateGroup(
        category=group.category,
        subject=group.flag,
        combinations=group.count,
        recipes=tuple(sorted(group.recipes)),
        cells=tuple(
            GateCell(
                variant=variant,
                hardware=hardware,
                combinations=cell.count,
                strategies=tuple(sorted(cell.strategies)),
                nearest=cell.nearest_text(),
            )
            for (variant, hardware), cell in cells
        ),
        detail="; ".join(f"{r} ×{n}" for r, n in group.reasons.most_common(3)),
    )


def gate_section(gate: HtmlGate) -> str:
    """The ``<section id="gate">`` element of the PR page."""
    state = "pass" if gate.passed else "fail"
    out = [
        f'<section id="gate" class="gate gate-{state}" aria-labelledby="gate-verdict">',
        f'<p id="gate-verdict" class="gate-verdict"><strong>{html_text(gate.verdict)}</strong></p>',
    ]
    for title, located in gate.invalid:
        out.append(f'<p class="gate-note"><strong>{html_text(title)}:</strong></p>')
        out.append('<ul class="gate-invalid">')
        out.extend(f"<li><code>{html_text(line)}</code></li>" for line in located)
        out.append("</ul>")
    if gate.no_evidence:
        out.append(f'<p class="gate-note"><strong>{html_text(gate.no_evidence)}</strong></p>')
    for category in SECTION_ORDER:
        groups = [g for g in gate.groups if g.category == category]
        if not groups:
            continue
        total = sum(g.combinations for g in groups)
        what = "claim(s)" if category == "new-claim" else "combination(s)"
        count = len(groups) if category == "new-claim" else total
        out.append(
            f'<h2 class="gate-category" data-category="{category}">'
            f"{html_text(CATEGORY_TITLE[category])} — {count} {what}</h2>"
        )
        out.append('<ol class="gate-groups">')
        for group in groups:
            out.append(_group_item(group))
        out.append("</ol>")
    out.append("</section>")
    return "\n".join(out) + "\n"


def _group_item(group: GateGroup) -> str:
    recipes = ", ".join(html_text(r) for r in group.recipes)
    if group.category == "new-claim":
        head = (
            f"<code>{html_text(group.subject)}</code> in {recipes} — "
            f"{group.combinations} recommended combination(s) back it"
        )
    else:
        head = (
            f"<code>{html_text(group.subject)}</code> — {group.combinations} combination(s) "
            f"in {recipes}"
        )
    parts = [f'<li class="gate-group">{head}']
    if group.cells:
        parts.append(
            '<table class="gate-cells"><thead><tr><th scope="col">variant</th>'
            '<th scope="col">hardware</th><th scope="col">strategies</th>'
            '<th scope="col">combinations</th><th scope="col">nearest evidence</th></tr>'
            "</thead><tbody>"
        )
        for cell in group.cells:
            parts.append(
                f"<tr><td><code>{html_text(cell.variant)}</code></td>"
                f"<td><code>{html_text(cell.hardware)}</code></td>"
                f"<td>{', '.join(html_text(s) for s in cell.strategies)}</td>"
                f"<td>{cell.combinations}</td><td>{html_text(cell.nearest)}</td></tr>"
            )
        parts.append("</tbody></table>")
    if group.detail:
        label = "Why" if group.category == "new-claim" else "Reasons"
        parts.append(f'<p class="gate-detail">{label}: {html_text(group.detail)}</p>')
    parts.append("</li>")
    return "".join(parts)
