"""Text rendering of ``provenance explain`` (every value escaped for the terminal)."""

from __future__ import annotations

import shlex
from collections.abc import Callable
from typing import TextIO

from provenance.audit.explain import Explanation
from provenance.audit.verdicts import Reason
from provenance.escaping import terminal
from provenance.model.reasons import ReasonCode
from provenance.report.grouping import diff_text, reason_label, short_record

#: Most candidate evidence points listed in full.
MAX_CANDIDATES = 25


def _reason_text(reason: Reason) -> str:
    record = [f"record {short_record(reason.record)}"] if reason.record else []
    cited = [*record, ", ".join(reason.sources)] if reason.sources else record
    sources = f" [{' '.join(cited)}]" if cited else ""
    detail = f" — {reason.detail}" if reason.detail else ""
    return reason_label(reason) + sources + detail


#: Most distinct values of one side shown for a key that was not compared.
MAX_VALUES = 3


def _values(values: tuple[str, ...]) -> str:
    shown = ", ".join(terminal(v) for v in values[:MAX_VALUES])
    more = len(values) - MAX_VALUES
    return shown + (f", … {more} more" if more > 0 else "")


def _not_compared(explanation: Explanation, add: Callable[[str], None]) -> None:
    """Every key on either side that the verdict did not compare, per role, so that an
    ignored key (harness, tuning, functional, inert) is never silent."""
    points = len(explanation.candidates)
    add("   not compared (not major, or inert in the role; recipe value; evidence points):")
    if not explanation.not_compared:
        add("     (none: every key on both sides was compared)")
    role = None
    for item in explanation.not_compared:
        if item.role != role:
            role = item.role
            add(f"   {terminal(role)}:")
        recipe = f"recipe {_values(item.recipe)}" if item.recipe else "recipe unset"
        evidence = (
            f"{item.evidence_points} of {points} point(s): {_values(item.evidence)}"
            if item.evidence_points
            else f"0 of {points} point(s)"
        )
        add(f"     {terminal(item.key)} ({terminal(item.cls)}): {recipe}; evidence {evidence}")


def write(explanation: Explanation, out: TextIO) -> None:
    lines: list[str] = []
    add = lines.append
    add(f"explain {terminal(explanation.recipe)}: {terminal(explanation.selection.label())}")
    add("")
    add("1. rendered commands")
    for command in explanation.commands:
        rank = f" (node {command.node_rank})" if command.node_rank is not None else ""
        add(f"   {terminal(command.role)}{rank}:")
        argv = " ".join(shlex.quote(a) for a in command.argv or ())
        add(f"     {terminal(argv)}")
        for name, value in command.env.items():
            add(f"     env {terminal(name)}={terminal(value)}")
    add("")
    add("2. major flags (normalised, policy class major) and the in-scope PRs that set each")
    for role_flags in explanation.roles:
        add(f"   {terminal(role_flags.role)}:")
        for flag in role_flags.flags:
            flag_prs = sorted({pr for ref in flag.evidence for pr in ref.prs})
            records = len(flag.evidence)
            backing = (
                f"{records} record(s): {', '.join(flag_prs) or 'no PR in the ledger'}"
                if records
                else "no in-scope evidence sets it"
            )
            add(f"     {terminal(flag.key)} = {terminal(flag.value)}   [{terminal(backing)}]")
    _not_compared(explanation, add)
    add("")
    add(
        f"3. scope: checkpoint {terminal(explanation.checkpoint)}, hardware "
        f"{terminal(explanation.hardware)}, {terminal(explanation.kind)} — "
        f"{len(explanation.candidates)} evidence point(s) in scope"
    )
    add("")
    add("4. candidate evidence (closest first)")
    if not explanation.candidates:
        add("   (none)")
    for candidate in explanation.candidates[:MAX_CANDIDATES]:
        prs = ", ".join(candidate.prs) or "no PR in the ledger"
        mark = "MATCH" if candidate.matches else "no"
        add(
            f"   [{mark}] {terminal(candidate.config_key)} ({terminal(prs)}; "
            f"{'validated' if candidate.validated else 'not validated'}) — "
            f"{terminal(candidate.why)}"
        )
        add(f"         record {terminal(candidate.record)}")
        for diff in candidate.roles:
            text = diff_text(diff.only_recipe, diff.only_evidence, diff.changed)
            add(f"         {terminal(diff.role)}: {terminal(text)}")
            if not diff.shape_matches:
                add(
                    f"         {terminal(diff.role)} shape: recipe {terminal(diff.recipe_shape)}, "
                    f"evidence {terminal(diff.evidence_shape)}"
                )
    hidden = len(explanation.candidates) - MAX_CANDIDATES
    if hidden > 0:
        add(f"   … {hidden} more (use --format json)")
    add("")
    add(f"5. verdict: {explanation.verdict}")
    if explanation.declared_by:
        add(f"   declared guide-only by {terminal(explanation.declared_by)}")
    for ref in explanation.evidence:
        add(f"   evidence {terminal(ref.record)} ({terminal(', '.join(ref.prs))})")
    # An unreachable combination: no recipe edit reaches evidence, so that reason comes
    # first and the others (flag differences to shapes the schema cannot express) are
    # marked secondary.
    unreachable = [r for r in explanation.reasons if r.code == ReasonCode.UNREACHABLE]
    others = [r for r in explanation.reasons if r.code != ReasonCode.UNREACHABLE]
    for reason in unreachable:
        add(f"   - {terminal(_reason_text(reason))}")
    if unreachable and others:
        add("   secondary (no recipe edit reaches evidence, so fixing these alone cannot help):")
    for reason in others:
        mark = "secondary: " if unreachable else ""
        add(f"   - {mark}{terminal(_reason_text(reason))}")
    for label, points in (
        ("nearest", explanation.nearest),
        ("nearest overall", explanation.nearest_overall),
    ):
        for near in points:
            which = "nearest validated" if label == "nearest" and near.validated else label
            add(
                f"   {which} for {terminal(near.role or '')}: {terminal(near.config_key)} "
                f"({terminal(', '.join(near.prs))}), {near.distance} difference(s)"
            )
    out.write("\n".join(lines) + "\n")
