"""Summaries shared by the text and markdown reports: counts per variant × hardware × strategy."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from provenance.audit.verdicts import AuditReport, Reason
from provenance.model.reasons import VerdictKind

#: How many reasons a summary row names.
TOP_REASONS = 5
#: Tie-break between equally frequent reasons: the more fundamental code first.
_PRIORITY = {
    "no-evidence": 0,
    "flag-unevidenced": 1,
    "value-mismatch": 2,
    "never-jointly-observed": 3,
    "topology-mismatch": 4,
    "evidence-not-validated": 5,
    "missing-flag": 6,
}


#: Most PR sources named in a reason label.
MAX_SOURCES = 3


def reason_label(reason: Reason, *, with_sources: bool = False) -> str:
    """``value-mismatch prefill speculative_config.num_speculative_tokens=3 (evidence 1)``.

    With ``with_sources``, the PRs behind the evidence follow in brackets.
    """
    parts = [str(reason.code)]
    if reason.role:
        parts.append(reason.role)
    flag = reason.flag or ""
    if reason.recipe_value is not None:
        flag = f"{flag}={reason.recipe_value}" if flag else reason.recipe_value
    if flag:
        parts.append(flag)
    if reason.evidence_value is not None:
        parts.append(f"(evidence {reason.evidence_value})")
    if with_sources and reason.sources:
        shown = ", ".join(reason.sources[:MAX_SOURCES])
        more = len(reason.sources) - MAX_SOURCES
        parts.append(f"[{shown}{f', +{more}' if more > 0 else ''}]")
    return " ".join(parts)


@dataclass
class GroupRow:
    """Counts for one (recipe, variant, hardware, strategy)."""

    recipe: str
    variant: str
    hardware: str
    strategy: str
    combinations: int = 0
    recommended: int = 0
    guide_only: int = 0
    declared: int = 0
    reasons: Counter[str] = field(default_factory=Counter)

    def top_reasons(self, limit: int = TOP_REASONS) -> list[tuple[str, int]]:
        return sorted(
            self.reasons.items(),
            key=lambda kv: (-kv[1], _PRIORITY.get(kv[0].split(" ", 1)[0], 9), kv[0]),
        )[:limit]


def group_rows(report: AuditReport, *, with_sources: bool = True) -> list[GroupRow]:
    """One row per (recipe, variant, hardware, strategy), in first-seen order."""
    rows: dict[tuple[str, str, str, str], GroupRow] = {}
    for entry in report.verdicts:
        labels = [reason_label(r, with_sources=with_sources) for r in entry.reasons]
        for selection_set in entry.selections:
            key = (
                entry.recipe,
                selection_set.variant,
                selection_set.hardware,
                selection_set.strategy or "omni",
            )
            row = rows.get(key)
            if row is None:
                row = rows[key] = GroupRow(*key)
            count = selection_set.count
            row.combinations += count
            if entry.verdict is VerdictKind.RECOMMENDED:
                row.recommended += count
                continue
            row.guide_only += count
            if entry.declared_by:
                row.declared += count
            for label in labels:
                row.reasons[label] += count
    return list(rows.values())
