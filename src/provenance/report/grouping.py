"""Summaries shared by the text and markdown reports: counts per variant × hardware × strategy,
and the summary-first sections both print (``docs/report.md``, "Text and markdown audits"):

1. what the recipe claims against what is backed (recommended cells, unbacked claims);
2. *actionable* groups: guide-only cells an edit could fix, each with its nearest evidence
   and the flag difference to it (``provenance suggest`` finds and proves the edit);
3. *unreachable* groups: every guide-only cell has reason ``unreachable`` (evidence exists,
   but only in shapes the recipe schema cannot express, so no edit reaches it);
4. *unbenchmarked* cells (``no-evidence``: none in scope, perhaps a match in another
   deployment kind), one line per variant × hardware.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field

from provenance.audit.verdicts import AuditReport, NearestEvidence, Reason, ReverseEntry
from provenance.model.reasons import ReasonCode, VerdictKind

#: How many reasons a summary row names.
TOP_REASONS = 5
#: Tie-break between equally frequent reasons: the more fundamental code first.
_PRIORITY = {
    "no-evidence": 0,
    "unreachable": 0,
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

    With ``with_sources``, the PRs behind the evidence follow in brackets, after the
    short id of the one record the reason was computed against, if any
    (``[record sha256:03f1a2b3c4d5 SemiAnalysisAI/InferenceX#2336]``).
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
    if with_sources and (reason.sources or reason.record):
        shown = ", ".join(reason.sources[:MAX_SOURCES])
        more = len(reason.sources) - MAX_SOURCES
        cited = [f"record {short_record(reason.record)}"] if reason.record else []
        if shown:
            cited.append(shown + (f", +{more}" if more > 0 else ""))
        parts.append(f"[{' '.join(cited)}]")
    return " ".join(parts)


def short_record(record: str) -> str:
    """``sha256:`` and the first 12 hex digits of a record id (unique in practice)."""
    algorithm, _, digest = record.partition(":")
    return f"{algorithm}:{digest[:12]}" if digest else record[:12]


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
    #: reason codes of the guide-only cells
    codes: set[str] = field(default_factory=set)
    #: nearest evidence of the guide-only cells (:func:`nearest_label`) -> combinations
    nearest: Counter[str] = field(default_factory=Counter)
    #: the labels of :attr:`nearest` whose point is validated
    validated: set[str] = field(default_factory=set)
    #: the nearest evidence overall where it is not :attr:`nearest` (closer, unvalidated)
    nearest_overall: Counter[str] = field(default_factory=Counter)
    #: records named as nearest evidence by the guide-only cells
    nearest_records: set[str] = field(default_factory=set)
    #: guide-only cells with reason ``unreachable``, and why (the reasons' details)
    unreachable: int = 0
    unreachable_why: Counter[str] = field(default_factory=Counter)
    #: the smallest flag difference to nearest evidence among the guide-only cells
    distance: int | None = None

    def top_reasons(self, limit: int | None = TOP_REASONS) -> list[tuple[str, int]]:
        ranked = sorted(
            self.reasons.items(),
            key=lambda kv: (-kv[1], _PRIORITY.get(kv[0].split(" ", 1)[0], 9), kv[0]),
        )
        return ranked if limit is None else ranked[:limit]

    def top_nearest(self) -> tuple[str, int] | None:
        """The nearest evidence (and its difference) of most guide-only cells."""
        return _most(self.nearest)

    def top_overall(self) -> tuple[str, int] | None:
        """The nearest evidence overall of most guide-only cells whose nearest validated
        point is another one (None when there are none)."""
        return _most(self.nearest_overall)

    def nearest_lines(self) -> list[tuple[str, str, int]]:
        """``(heading, label, combinations)``: the top nearest evidence, headed ``nearest
        validated`` when it is validated, then the top nearest overall where that differs."""
        lines = []
        top = self.top_nearest()
        if top is not None:
            heading = "nearest validated" if top[0] in self.validated else "nearest"
            lines.append((heading, *top))
        overall = self.top_overall()
        if overall is not None:
            lines.append(("nearest overall", *overall))
        return lines


def _most(counts: Counter[str]) -> tuple[str, int] | None:
    if not counts:
        return None
    return min(counts.items(), key=lambda kv: (-kv[1], kv[0]))


def group_rows(
    report: AuditReport, *, with_sources: bool = True, most: int | None = None
) -> list[GroupRow]:
    """One row per (recipe, variant, hardware, strategy), in first-seen order; ``most``
    caps the flag differences named per role of the nearest evidence."""
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
            for reason in entry.reasons:
                row.codes.add(str(reason.code))
                if reason.code == ReasonCode.UNREACHABLE:
                    row.unreachable += count
                    row.unreachable_why[reason.detail] += count
            if entry.nearest:
                label = nearest_label(entry.nearest, most)
                row.nearest[label] += count
                if entry.nearest[0].validated:
                    row.validated.add(label)
                if entry.nearest_overall:
                    row.nearest_overall[nearest_label(entry.nearest_overall, most)] += count
                row.nearest_records.update(n.record for n in entry.nearest)
                distance = sum(n.distance for n in entry.nearest)
                if row.distance is None or distance < row.distance:
                    row.distance = distance
    return list(rows.values())


#: Most flag differences a summary names per role (``provenance explain`` has them all).
MAX_DIFF = 6


def diff_text(
    only_recipe: Mapping[str, str],
    only_evidence: Mapping[str, str],
    changed: Mapping[str, tuple[str, str]],
    *,
    most: int | None = None,
) -> str:
    """A flag difference, recipe against evidence: ``+k=v`` recipe only, ``-k=v`` evidence
    only, ``k: recipe a, evidence b`` differing values; with ``most``, the first ``most``
    and how many more (``provenance explain`` lists them all)."""
    parts = [f"+{k}={v}" for k, v in only_recipe.items()]
    parts += [f"-{k}={v}" for k, v in only_evidence.items()]
    parts += [f"{k}: recipe {a}, evidence {b}" for k, (a, b) in changed.items()]
    if not parts:
        return "same major flags"
    if most is not None and len(parts) > most:
        left = len(parts) - most
        parts = [*parts[:most], f"… {left} more (all of them: provenance explain)"]
    return "; ".join(parts)


def nearest_label(nearest: tuple[NearestEvidence, ...], most: int | None = None) -> str:
    """``fp4-b200-vllm [owner/repo#1]: serve +k=v; -k=v`` for a cell's nearest evidence."""
    first = nearest[0]
    prs = ", ".join(first.prs[:MAX_SOURCES])
    more = len(first.prs) - MAX_SOURCES
    head = (
        f"{first.config_key} [{prs}{f', +{more}' if more > 0 else ''}]" if prs else first.config_key
    )
    roles = "; ".join(
        f"{n.role or 'serve'} {diff_text(n.only_recipe, n.only_evidence, n.changed, most=most)}"
        for n in nearest
    )
    return f"{head}: {roles}"


@dataclass(frozen=True)
class Unbenchmarked:
    """Cells with no evidence in scope, one per (recipe, variant, hardware)."""

    recipe: str
    variant: str
    hardware: str
    strategies: tuple[str, ...]
    combinations: int


@dataclass(frozen=True)
class Sections:
    """The summary-first sections of a text or markdown audit."""

    #: rows with recommended cells (what the evidence backs)
    backed: list[GroupRow]
    #: guide-only groups an edit could fix
    actionable: list[GroupRow]
    #: guide-only groups whose evidence the schema cannot express, with why
    unreachable: list[tuple[GroupRow, str]]
    unbenchmarked: list[Unbenchmarked]


def _unbenchmarked(row: GroupRow) -> bool:
    """No evidence point in ``row``'s scope: only ``no-evidence``, perhaps with a match in
    another deployment kind (``topology-mismatch``: another strategy, not an edit)."""
    codes = row.codes - {str(ReasonCode.TOPOLOGY_MISMATCH)}
    return codes == {str(ReasonCode.NO_EVIDENCE)} and not row.nearest_records


def _unreachable_why(row: GroupRow) -> str | None:
    """Why no recipe edit reaches evidence for ``row``'s guide-only cells (the detail of
    their ``unreachable`` reasons, the most frequent first), or None when some cell of it
    lacks that reason (the group is then actionable: an edit may reach evidence)."""
    if not row.unreachable_why or row.unreachable < row.guide_only:
        return None
    return min(row.unreachable_why.items(), key=lambda kv: (-kv[1], kv[0]))[0]


def sections(report: AuditReport, *, show_all: bool = False) -> Sections:
    """The rows of :func:`group_rows`, sorted into the summary-first sections (without
    ``show_all``, the nearest evidence names at most :data:`MAX_DIFF` differences a role)."""
    backed: list[GroupRow] = []
    actionable: list[GroupRow] = []
    unreachable: list[tuple[GroupRow, str]] = []
    idle: dict[tuple[str, str, str], list[GroupRow]] = {}
    for row in group_rows(report, most=None if show_all else MAX_DIFF):
        if row.recommended:
            backed.append(row)
        if not row.guide_only:
            continue
        if not row.recommended and _unbenchmarked(row):
            idle.setdefault((row.recipe, row.variant, row.hardware), []).append(row)
            continue
        why = _unreachable_why(row)
        if why is None:
            actionable.append(row)
        else:
            unreachable.append((row, why))
    # the cheapest fixes first: the smallest difference to evidence, then the most cells
    actionable.sort(
        key=lambda r: (r.distance if r.distance is not None else 1 << 30, -r.guide_only)
    )
    unbenchmarked = [
        Unbenchmarked(*key, tuple(r.strategy for r in rows), sum(r.combinations for r in rows))
        for key, rows in idle.items()
    ]
    return Sections(backed, actionable, unreachable, unbenchmarked)


@dataclass(frozen=True)
class ReverseRow:
    """Reverse-direction entries that read the same (config key, PRs, status, detail)."""

    entry: ReverseEntry
    records: int


def distinct_reverse(entries: tuple[ReverseEntry, ...]) -> list[ReverseRow]:
    """Reverse entries with the same config key, PRs, status and detail, once each with
    how many records they stand for; reproduced and not-expressible points first."""
    order = {"reproduced": 0, "not-expressible": 1, "not-reproduced": 2}
    seen: dict[tuple[str, tuple[str, ...], str, str], list[ReverseEntry]] = {}
    for entry in entries:
        detail = str(entry.combinations) if entry.status == "reproduced" else entry.why
        seen.setdefault((entry.config_key, entry.prs, entry.status, detail), []).append(entry)
    rows = [ReverseRow(group[0], len(group)) for group in seen.values()]
    return sorted(rows, key=lambda r: (order.get(r.entry.status, 3), r.entry.config_key))


#: What the unclassified environment variables line says before the names.
UNCLASSIFIED_HEAD = (
    "environment variables no policy rule names (major by default; add them to the "
    "policy table, docs/flags.md), with the combinations they decided"
)
