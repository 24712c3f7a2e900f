"""Writers for the diff-aware audit: text (terminal), markdown (PR comment / job summary), json
(``provenance.diff/v4``, written by :mod:`provenance.report.pr_json`).

Both readable writers follow one order, the reviewer's (``docs/audit.md``, "The PR gate"):

1. the verdict line: ``gate: PASS`` or ``gate: FAIL`` and why, with the count of each
   blocking category; then the recipes invalid in the head (blocking) and in the base
   (a notice), each ``<commit>:<path>:<line> (key.path): message``;
2. the blocking groups, ordered regressions, new claims, new unevidenced flags, new
   guide-only combinations; each names the flag and value it is about, its cells
   (variant × hardware, with their strategies and features) and the nearest evidence
   with its InferenceX PR;
3. what improved (guide-only → recommended, newly exposed recommended combinations);
4. the informational changes: unbenchmarked cells per variant × hardware, declared
   guide-only combinations per declaration, the other changes, and the flag lens.

Every list that is cut says how many rows it left out and the command that shows them
all (:func:`json_command`); the markdown stays within GitHub's comment size limit
(:data:`MARKDOWN_LIMIT`), the text is never cut silently.

Why one module (about 680 lines): the text and the markdown writer share one grouping,
one section order and one cap rule (every cut counted, with the command that shows
it); split by format, the order and the caps would be written twice.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TextIO

from provenance.audit.verdicts import Claim, SelectionSet
from provenance.escaping import html_text, markdown_code, markdown_inline, terminal
from provenance.escaping import markdown_cell_code as cell_code
from provenance.model.reasons import VerdictKind
from provenance.report.grouping import reason_label
from provenance.report.pr_json import write_pr
from provenance.review.diff import (
    BLOCK_ORDER,
    BlockReason,
    ChangeGroup,
    DiffReport,
    LensEntry,
)
from provenance.review.tuning import TuningChange

#: GitHub's limit on a comment (and a job summary is shown the same way), in characters
GITHUB_COMMENT_LIMIT = 65_536
#: what the markdown writer may use: the rest is left for what ``report/pr.py`` appends
MARKDOWN_LIMIT = 60_000
#: cells listed per blocking group in the markdown
MAX_CELLS = 30
#: rows of each informational table in the markdown
MAX_INFO_ROWS = 40
#: (variant, hardware) rows of each flag of the lens in the markdown
MAX_LENS_ROWS = 40
#: rows the text output lists per list before a "… N more" line
TEXT_MAX_ROWS = 200

CATEGORY_TITLE = {
    "regressed-verdict": "Regressed: was recommended, now guide-only",
    "new-claim": (
        "New verified claim inside InferenceX coverage that no recommended combination backs"
    ),
    "new-unevidenced-flag": "New major flag or value no in-scope evidence sets",
    "new-guide-only": (
        "Newly exposed guide-only combinations carrying a major flag or value no in-scope "
        "evidence sets"
    ),
}
#: the verdict line's count of each category, in the blocking order
CATEGORY_COUNT = {
    "regressed-verdict": "regressed",
    "new-claim": "new unbacked claim(s) inside InferenceX coverage",
    "new-unevidenced-flag": "newly carry an unevidenced major flag",
    "new-guide-only": "newly exposed guide-only",
}
#: the order of the sections of blocking groups (a new claim is not a change group)
SECTION_ORDER: tuple[str, ...] = (BLOCK_ORDER[0], "new-claim", *BLOCK_ORDER[1:])


def json_command(diff: DiffReport) -> str:
    """The command that writes every row (the JSON diff), run from the recipes checkout
    with the same ``--ledger``/``--evidence`` as this run."""
    return f"provenance audit --repo . --base {diff.base} --head {diff.head} --format json"


# ---------------------------------------------------------------------------------------
# Grouping


@dataclass
class Cell:
    """Combinations of one (variant, hardware) cell of a group."""

    count: int = 0
    strategies: set[str] = field(default_factory=set)
    features: set[str] = field(default_factory=set)
    #: nearest evidence (PR, config key, distance) -> combinations it is nearest to
    nearest: Counter[str] = field(default_factory=Counter)

    def nearest_text(self) -> str:
        """The evidence nearest to most of the cell's combinations."""
        if not self.nearest:
            return "none in scope"
        (label, _), *rest = self.nearest.most_common()
        return label + (f" (+{len(rest)} other)" if rest else "")


def _add_cells(cells: dict[tuple[str, str], Cell], change: ChangeGroup, nearest: list[str]) -> int:
    added = 0
    for selections in change.selections:
        count = selections.count
        if not count:
            continue
        cell = cells.setdefault((selections.variant, selections.hardware), Cell())
        cell.count += count
        cell.strategies.add(_strategy(selections))
        cell.features.update(f for choice in selections.features for f in choice.features)
        for label in nearest:
            cell.nearest[label] += count
        added += count
    return added


def _strategy(selections: SelectionSet) -> str:
    strategy = selections.strategy or "omni"
    if selections.kv_offload:
        strategy += f" (kv_offload {selections.kv_offload})"
    return strategy


def _sorted_cells(cells: dict[tuple[str, str], Cell]) -> list[tuple[tuple[str, str], Cell]]:
    return sorted(cells.items(), key=lambda kv: (-kv[1].count, kv[0]))


@dataclass
class BlockGroup:
    """Blocking combinations of one category about one flag (or set of flags)."""

    category: BlockReason
    #: the flags (``role: key=value``) the group is about, or what else made it block
    flag: str
    count: int = 0
    recipes: set[str] = field(default_factory=set)
    cells: dict[tuple[str, str], Cell] = field(default_factory=dict)
    reasons: Counter[str] = field(default_factory=Counter)


def _new_flags(change: ChangeGroup) -> list[tuple[str, str, str, str | None]]:
    """(role, key, value, old value) of the major flags the change newly sets."""
    found: list[tuple[str, str, str, str | None]] = [
        (role, k, v, None) for role, flags in change.flags.added.items() for k, v in flags.items()
    ]
    found += [
        (role, k, new, old)
        for role, moved in change.flags.changed.items()
        for k, (old, new) in moved.items()
    ]
    return found


def _flag_text(role: str, key: str, value: str, old: str | None) -> str:
    return f"{role}: {key}={value}" + (f" (was {old})" if old is not None else "")


def block_flag(change: ChangeGroup) -> str:
    """What a blocking change is about: the newly set major flags that its reasons name
    (all newly set ones if none is named), else the reasons' own flags, else the codes."""
    new = _new_flags(change)
    named = {(r.role, r.flag, r.recipe_value) for r in change.reasons if r.flag}
    picked = [f for f in new if (f[0], f[1], f[2]) in named] or new
    if change.block_reason == "new-guide-only" or not picked:
        # a new combination sets every flag: name the ones its reasons point at
        flagged = sorted(
            {
                _flag_text(r.role or "?", r.flag, r.recipe_value or "", None)
                for r in change.reasons
                if r.flag
            }
        )
        if flagged:
            return ", ".join(flagged)
        if not picked:
            removed = [
                f"{role}: no {k}={v}"
                for role, flags in change.flags.removed.items()
                for k, v in flags.items()
            ]
            if removed:
                return ", ".join(sorted(removed))
            return ", ".join(sorted({str(r.code) for r in change.reasons})) or "no major flag"
    return ", ".join(sorted(_flag_text(*f) for f in picked))


def _nearest_labels(change: ChangeGroup) -> list[str]:
    distance: dict[tuple[str, str], int] = {}
    for near in change.nearest:
        for pr in near.prs or ("no PR recorded",):
            key = (pr, near.config_key)
            distance[key] = distance.get(key, 0) + near.distance
    return [f"{pr} ({config}, {d} flag(s) apart)" for (pr, config), d in distance.items()]


def blocking_groups(changes: Iterable[ChangeGroup]) -> list[BlockGroup]:
    """Blocking combinations by (category, flag), in the blocking order (within a
    category, the largest group first); every count is a number of combinations."""
    groups: dict[tuple[str, str], BlockGroup] = {}
    for change in changes:
        if not change.blocking or change.block_reason is None:
            continue
        flag = block_flag(change)
        group = groups.get((change.block_reason, flag))
        if group is None:
            group = groups[(change.block_reason, flag)] = BlockGroup(change.block_reason, flag)
        count = _add_cells(group.cells, change, _nearest_labels(change))
        if not count:
            continue
        group.count += count
        group.recipes.add(change.recipe)
        for reason in change.reasons:
            group.reasons[reason_label(reason)] += count
    ranked = [g for g in groups.values() if g.count]
    return sorted(ranked, key=lambda g: (BLOCK_ORDER.index(g.category), -g.count, g.flag))


@dataclass
class InfoRow:
    """Non-blocking changed combinations of one (variant, hardware) cell."""

    count: int = 0
    strategies: set[str] = field(default_factory=set)


def _info(
    changes: Iterable[ChangeGroup], pick: Callable[[ChangeGroup], str | None]
) -> list[tuple[tuple[str, str, str], InfoRow]]:
    """Rows (label, variant, hardware) of the changes ``pick`` labels (None: skipped)."""
    rows: dict[tuple[str, str, str], InfoRow] = defaultdict(InfoRow)
    for change in changes:
        label = pick(change)
        if label is None:
            continue
        for selections in change.selections:
            if selections.count:
                row = rows[(label, selections.variant, selections.hardware)]
                row.count += selections.count
                row.strategies.add(_strategy(selections))
    return sorted(rows.items(), key=lambda kv: (kv[0][0], -kv[1].count, kv[0]))


def _improved(change: ChangeGroup) -> str | None:
    if change.head_verdict is not VerdictKind.RECOMMENDED:
        return None
    if change.kind == "new":
        return "newly exposed, recommended"
    if change.base_verdict is VerdictKind.GUIDE_ONLY:
        return "was guide-only, now recommended"
    return None


def _unbenchmarked(change: ChangeGroup) -> str | None:
    return change.kind if change.unbenchmarked else None


def _declared(change: ChangeGroup) -> str | None:
    if change.declared_by and change.head_verdict is VerdictKind.GUIDE_ONLY:
        return change.declared_by
    return None


def _other(change: ChangeGroup) -> str | None:
    if change.blocking or change.unbenchmarked or _improved(change) or _declared(change):
        return None
    verdicts = f"{change.base_verdict or '—'} → {change.head_verdict or '—'}"
    return f"{change.kind}, {verdicts}"


@dataclass
class LensCell:
    evidenced: int = 0
    unevidenced: int = 0
    prs: set[str] = field(default_factory=set)


def lens_rows(entry: LensEntry) -> list[tuple[tuple[str, str], LensCell]]:
    """One row per (variant, hardware) in which the flag now appears; counts are
    (combination, role) pairs, as the entry's own."""
    rows: dict[tuple[str, str], LensCell] = defaultdict(LensCell)
    for occ in entry.occurrences:
        for selections in occ.selections:
            count = selections.count
            if not count:
                continue
            row = rows[(selections.variant, selections.hardware)]
            for role in occ.roles:
                if role.evidence:
                    row.evidenced += count
                    row.prs.update(pr for ref in role.evidence for pr in ref.prs)
                else:
                    row.unevidenced += count
    return sorted(rows.items())


def _claim_text(claim: Claim) -> str:
    where = claim.subject if claim.kv_offload is not None else f"meta.hardware.{claim.hardware}"
    return f"{claim.recipe}: {where}: {claim.claim} ({claim.recommended} recommended)"


#: the heading of the new claims the gate reports without blocking
REPORTED_CLAIMS_TITLE = (
    "new verified claims reported, not blocking (outside InferenceX coverage: InferenceX "
    "never ran the model there, so no evidence can back them; declared; or of a recipe "
    "the PR fixes)"
)


def _reported_claim_text(claim: Claim) -> str:
    if claim.declared_by:
        why = f"declared by {claim.declared_by}"
    elif claim.coverage == "outside-coverage":
        why = claim.coverage
    else:
        why = "in-coverage, of a recipe invalid in the base"
    return f"{_claim_text(claim)} [{why}]"


def _unset(value: str | None) -> str:
    return value if value is not None else "(unset)"


def tuning_text(change: TuningChange) -> str:
    """``key (class): N combination(s); before → after, …`` (plain text: escape it)."""
    values = ", ".join(f"{_unset(before)} → {_unset(after)}" for before, after in change.examples)
    return f"{change.key} ({change.flag_class}): {change.combinations} combination(s)" + (
        f"; {values}" if values else ""
    )


#: the heading of the tuning and harness flags the PR changes (not judged)
TUNING_TITLE = (
    "tuning/harness flags changed (not judged; combinations in both base and head whose "
    "commands add, change or remove the flag)"
)


# ---------------------------------------------------------------------------------------
# The verdict line


def category_counts(diff: DiffReport, groups: Iterable[BlockGroup]) -> dict[str, int]:
    """Combinations per blocking category (claims: the number of new claims)."""
    counts = dict.fromkeys(SECTION_ORDER, 0)
    for group in groups:
        counts[group.category] += group.count
    counts["new-claim"] = len(diff.claims)
    return counts


def verdict_line(diff: DiffReport, groups: Iterable[BlockGroup]) -> str:
    """``gate: PASS …`` or ``gate: FAIL …`` and why (plain text: escape it to render)."""
    gate = diff.gate
    not_blocking = []
    if gate.unbenchmarked:
        not_blocking.append(
            f"{gate.unbenchmarked} changed combination(s) unbenchmarked (no in-scope "
            "evidence before or after)"
        )
    if gate.declared:
        not_blocking.append(f"{gate.declared} declared guide-only")
    declared = sum(1 for c in diff.claims_reported if c.declared_by)
    outside = sum(
        1 for c in diff.claims_reported if c.coverage == "outside-coverage" and not c.declared_by
    )
    if outside:
        not_blocking.append(
            f"{outside} new claim(s) outside InferenceX coverage (no evidence can exist)"
        )
    if declared:
        not_blocking.append(f"{declared} declared claim(s)")
    if gate.claims_reported - outside - declared:
        not_blocking.append(
            f"{gate.claims_reported - outside - declared} claim(s) inside InferenceX coverage "
            "of recipes the PR fixes"
        )
    tail = f"; reported, not blocking: {', '.join(not_blocking)}" if not_blocking else ""
    if gate.passed:
        return (
            "gate: PASS — the PR makes no benchmarked combination worse and adds no "
            f"unbacked claim inside InferenceX coverage{tail}"
        )
    counts = category_counts(diff, groups)
    why = ", ".join(f"{counts[c]} {CATEGORY_COUNT[c]}" for c in SECTION_ORDER)
    parts = [f"{gate.invalid} recipe(s) invalid in the head"] if gate.invalid else []
    if gate.blocking or gate.claims:
        parts.append(f"{why}; not covered by a declaration")
    return f"gate: FAIL — {'; '.join(parts)}{tail}"


#: recipes a markdown report names inline; more are folded
MAX_INLINE_RECIPES = 5

#: what resolves each blocking category, in the order of :data:`SECTION_ORDER`
RESOLUTION = {
    "regressed-verdict": (
        "regressed: restore what the recommended combinations ran, or cite the validated "
        "InferenceX run of the new flags"
    ),
    "new-claim": (
        "claims inside InferenceX coverage: align the recipe with the run on that hardware "
        "(`provenance explain` shows the difference), drop the `verified` mark, or ask a "
        "maintainer to acknowledge it in ledger/declarations.yaml"
    ),
    "new-unevidenced-flag": (
        "new unevidenced flags: scope each flag to where InferenceX ran it (`provenance "
        "suggest RECIPE` finds the edit and proves it), cite a validated InferenceX run that "
        "sets it, or ask a maintainer to declare the cells guide-only"
    ),
    "new-guide-only": (
        "new guide-only combinations: the same, for the flags those combinations newly carry"
    ),
}


def what_to_do(diff: DiffReport, groups: Iterable[BlockGroup]) -> list[str]:
    """One line per blocking category present (and per invalid recipe): how to resolve it
    (plain text: escape it to render); empty when the gate passes."""
    if diff.gate.passed:
        return []
    counts = category_counts(diff, groups)
    lines = [RESOLUTION[c] for c in SECTION_ORDER if counts[c]]
    if diff.errors:
        lines.insert(0, "invalid recipes: fix each file at the line named above")
    return lines


def notice_sections(diff: DiffReport) -> list[tuple[str, list[str]]]:
    """(title, lines) of what comes right after the verdict line, those there are (plain
    text: escape it to render): the judging files the PR changes (a maintainer's review;
    not applied to this PR), the recipes invalid in the head (blocking), in the base (a
    notice) and in both, untouched by the PR (a notice)."""
    out = []
    if diff.judging_changes:
        out.append(
            (
                f"needs a maintainer's review: this PR changes {len(diff.judging_changes)} "
                "file(s) that judge pull requests (policy, aliases, context rules, "
                "declarations); this PR is judged by the base's, its own changes apply "
                "once merged",
                [f"{c.path}: {c.change}" for c in diff.judging_changes],
            )
        )
    if diff.errors:
        out.append(
            (
                f"{len(diff.errors)} recipe(s) invalid in the head, not audited (blocking: "
                "the site would refuse them)",
                [e.located() for e in diff.errors],
            )
        )
    if diff.base_errors:
        out.append(
            (
                f"notice: {len(diff.base_errors)} recipe(s) invalid in the base, not audited "
                "there (the head's combinations of those the PR fixes count as new, and are "
                "reported, not blocked: the base cannot be compared)",
                [e.located() for e in diff.base_errors],
            )
        )
    if diff.errors_unchanged:
        out.append(
            (
                f"notice: {len(diff.errors_unchanged)} recipe(s) invalid before and after "
                "this PR, which does not touch them (not audited, not blocking)",
                [e.located() for e in diff.errors_unchanged],
            )
        )
    return out


def write_json(diff: DiffReport, out: TextIO) -> None:
    """``provenance.diff/v4``: the diff with its shared parts written once, in tables
    (:func:`provenance.report.pr_json.write_pr`; read back with ``read_pr``)."""
    write_pr(diff, out)


# ---------------------------------------------------------------------------------------
# Markdown


class _Budget:
    """The markdown being written, within :data:`MARKDOWN_LIMIT` characters."""

    def __init__(self, limit: int) -> None:
        self.parts: list[str] = []
        self.size = 0
        self.limit = limit

    def write(self, text: str) -> None:
        self.parts.append(text)
        self.size += len(text)

    def fits(self, text: str, reserve: int) -> bool:
        return self.size + len(text) + reserve <= self.limit


#: characters kept free while writing a section, for the sections after it
_RESERVE_BLOCKING = 14_000
_RESERVE_IMPROVED = 9_000
_RESERVE_INFO = 1_500


def _md_rows(
    out: _Budget,
    rows: list[str],
    cap: int,
    reserve: int,
    more: Callable[[int], str],
) -> None:
    """Write rows while within ``cap`` and the budget; then one line for the rest."""
    written = 0
    for row in rows:
        if written >= cap or not out.fits(row, reserve):
            break
        out.write(row)
        written += 1
    if written < len(rows):
        out.write(more(len(rows) - written))


def _md_more(diff: DiffReport, what: str) -> Callable[[int], str]:
    command = markdown_code(json_command(diff))
    return lambda n: f"\n… {n} more {what} not shown; all of them: {command}\n"


def _md_cells(cells: dict[tuple[str, str], Cell]) -> list[str]:
    return [
        f"| {cell_code(variant)} | {cell_code(hardware)} | "
        f"{', '.join(cell_code(s) for s in sorted(c.strategies))} | "
        f"{', '.join(cell_code(f) for f in sorted(c.features)) or '—'} | {c.count} | "
        f"{markdown_inline(c.nearest_text())} |\n"
        for (variant, hardware), c in _sorted_cells(cells)
    ]


def _md_group(out: _Budget, diff: DiffReport, number: int, group: BlockGroup) -> None:
    recipes = ", ".join(markdown_code(r) for r in sorted(group.recipes))
    out.write(
        f"\n**{number}. {markdown_inline(CATEGORY_TITLE[group.category])}** — "
        f"{markdown_code(group.flag)} — {group.count} combination(s) in {recipes}\n\n"
    )
    out.write("| variant | hardware | strategies | features | combinations | nearest evidence |\n")
    out.write("|---|---|---|---|---|---|\n")
    _md_rows(
        out,
        _md_cells(group.cells),
        MAX_CELLS,
        _RESERVE_BLOCKING,
        _md_more(diff, "cell(s) of this group"),
    )
    reasons = "; ".join(f"{markdown_code(r)} ×{c}" for r, c in group.reasons.most_common(3))
    out.write(f"\nReasons: {reasons or '—'}")
    if len(group.reasons) > 3:
        out.write(f" (and {len(group.reasons) - 3} more)")
    out.write("\n")


def _md_claims(out: _Budget, diff: DiffReport, number: int) -> None:
    title = f"{number}. {CATEGORY_TITLE['new-claim']}"
    _md_claim_list(out, diff, title, diff.claims, _claim_text, _RESERVE_BLOCKING)


def _md_claim_list(
    out: _Budget,
    diff: DiffReport,
    title: str,
    claims: tuple[Claim, ...],
    label: Callable[[Claim], str],
    reserve: int,
) -> None:
    out.write(f"\n**{markdown_inline(title)}** — {len(claims)} claim(s)\n\n")
    rows = [f"- {markdown_code(label(c))}: {markdown_inline(c.detail or '—')}\n" for c in claims]
    _md_rows(out, rows, MAX_INFO_ROWS, reserve, _md_more(diff, "claim(s)"))


def _md_info_table(
    out: _Budget,
    diff: DiffReport,
    title: str,
    header: str,
    rows: list[tuple[tuple[str, str, str], InfoRow]],
    reserve: int,
) -> None:
    if not rows:
        return
    total = sum(r.count for _, r in rows)
    out.write(f"\n**{markdown_inline(title)}** — {total} combination(s)\n\n")
    out.write(f"| {header} | variant | hardware | strategies | combinations |\n")
    out.write("|---|---|---|---|---|\n")
    lines = [
        f"| {cell_code(label)} | {cell_code(variant)} | {cell_code(hardware)} | "
        f"{', '.join(cell_code(s) for s in sorted(row.strategies))} | {row.count} |\n"
        for (label, variant, hardware), row in rows
    ]
    _md_rows(out, lines, MAX_INFO_ROWS, reserve, _md_more(diff, "row(s) of this table"))


def write_markdown(diff: DiffReport, out: TextIO) -> None:
    s = diff.summary
    groups = blocking_groups(diff.changes)
    md = _Budget(MARKDOWN_LIMIT)
    w = md.write
    w(f"**{markdown_inline(verdict_line(diff, groups))}**\n\n")
    for title, located in notice_sections(diff):
        w(f"**{markdown_inline(title)}:**\n\n")
        w("".join(f"- {markdown_code(line)}\n" for line in located))
        w("\n")
    todo = what_to_do(diff, groups)
    if todo:
        w("**What to do:**\n\n")
        w("".join(f"- {markdown_inline(line)}\n" for line in todo))
        w("\n")
    recipes = ", ".join(markdown_code(r) for r in diff.recipes) or "none"
    if len(diff.recipes) > MAX_INLINE_RECIPES:
        recipes = (
            f"<details><summary>{len(diff.recipes)} recipes</summary>\n\n{recipes}\n\n</details>\n"
        )
    w(
        f"provenance PR audit {markdown_code(diff.base)} → {markdown_code(diff.head)}; "
        f"combinations {s.base_combinations} → {s.head_combinations} "
        f"(new {s.new}, removed {s.removed}, verdict changed {s.verdict_changed}, flags "
        f"changed {s.flags_changed}); recipes: {recipes}\n"
    )
    if diff.audit_scope:
        w(f"\nScope: {markdown_inline(diff.audit_scope)}\n")
    if groups or diff.claims:
        w("\n#### Blocking\n")
        sections: list[BlockGroup | None] = [g for g in groups if g.category == BLOCK_ORDER[0]]
        if diff.claims:
            sections.append(None)
        sections += [g for g in groups if g.category != BLOCK_ORDER[0]]
        for number, group in enumerate(sections, start=1):
            if not md.fits("x" * 400, _RESERVE_BLOCKING):
                rest = sections[number - 1 :]
                left = sum(g.count for g in rest if g is not None)
                w(_md_more(diff, f"blocking group(s) ({left} combination(s))")(len(rest)))
                break
            if group is None:
                _md_claims(md, diff, number)
            else:
                _md_group(md, diff, number, group)
    improved = _info(diff.changes, _improved)
    w(f"\n<details><summary>{html_text(_folded_summary(diff, improved))}</summary>\n")
    w("\n#### Improved\n")
    if improved:
        _md_info_table(md, diff, "Now recommended", "change", improved, _RESERVE_IMPROVED)
    else:
        w("\nNothing became recommended.\n")
    w("\n#### Informational (not blocking)\n")
    _md_info_table(
        md,
        diff,
        "Unbenchmarked: no in-scope evidence before or after",
        "change",
        _info(diff.changes, _unbenchmarked),
        _RESERVE_INFO,
    )
    _md_info_table(
        md,
        diff,
        "Declared guide-only",
        "declaration",
        _info(diff.changes, _declared),
        _RESERVE_INFO,
    )
    if diff.claims_reported:
        title = REPORTED_CLAIMS_TITLE[0].upper() + REPORTED_CLAIMS_TITLE[1:]
        _md_claim_list(md, diff, title, diff.claims_reported, _reported_claim_text, _RESERVE_INFO)
    _md_info_table(
        md,
        diff,
        "Other changes",
        "change",
        _info(diff.changes, _other),
        _RESERVE_INFO,
    )
    for position, entry in enumerate(diff.lens):
        flag = markdown_code(f"{entry.key}={entry.value}")
        head = (
            f"\n**Flag lens** {flag}: where the PR's flag now appears — {entry.evidenced} "
            f"(combination, role) pair(s) with evidence, {entry.unevidenced} without\n\n"
        )
        if not md.fits(head + "x" * 400, _RESERVE_INFO):
            w(_md_more(diff, "flag lens entry(ies)")(len(diff.lens) - position))
            break
        w(head)
        w("| variant | hardware | with evidence | without | PRs |\n|---|---|---|---|---|\n")
        lines = []
        for (variant, hardware), row in lens_rows(entry):
            prs = ", ".join(markdown_inline(p) for p in sorted(row.prs)) or "—"
            lines.append(
                f"| {cell_code(variant)} | {cell_code(hardware)} | {row.evidenced} | "
                f"{row.unevidenced} | {prs} |\n"
            )
        _md_rows(md, lines, MAX_LENS_ROWS, _RESERVE_INFO, _md_more(diff, "lens row(s)"))
    _md_tuning(md, diff)
    w("\n</details>\n")
    out.write("".join(md.parts))


def _folded_summary(diff: DiffReport, improved: list[tuple[tuple[str, str, str], InfoRow]]) -> str:
    """The one line a reader sees of what the markdown folds (nothing of it blocks)."""
    parts = [
        f"{sum(r.count for _, r in improved)} now recommended",
        f"{diff.gate.unbenchmarked} unbenchmarked",
    ]
    if diff.gate.declared:
        parts.append(f"{diff.gate.declared} declared")
    if diff.claims_reported:
        parts.append(f"{len(diff.claims_reported)} claim(s) reported")
    parts.append(f"{len(diff.lens)} flag(s) in the lens, {len(diff.tuning)} tuning flag(s)")
    return "Not blocking: " + ", ".join(parts)


def _md_tuning(out: _Budget, diff: DiffReport) -> None:
    title = markdown_inline(TUNING_TITLE[0].upper() + TUNING_TITLE[1:])
    if not diff.tuning:
        out.write(f"\n**{title}**: none\n")
        return
    out.write(f"\n**{title}**: {len(diff.tuning)} flag(s)\n\n")
    rows = [f"- {markdown_code(tuning_text(change))}\n" for change in diff.tuning]
    _md_rows(out, rows, MAX_INFO_ROWS, 0, _md_more(diff, "tuning/harness flag(s)"))


# ---------------------------------------------------------------------------------------
# Text


def _text_rows(out: TextIO, diff: DiffReport, rows: list[str], indent: str, what: str) -> None:
    for row in rows[:TEXT_MAX_ROWS]:
        out.write(row)
    if len(rows) > TEXT_MAX_ROWS:
        out.write(
            f"{indent}… {len(rows) - TEXT_MAX_ROWS} more {what} not shown; all of them: "
            f"{terminal(json_command(diff))}\n"
        )


def _text_info(
    out: TextIO,
    diff: DiffReport,
    title: str,
    rows: list[tuple[tuple[str, str, str], InfoRow]],
) -> None:
    if not rows:
        return
    total = sum(r.count for _, r in rows)
    out.write(f"  {title}: {total} combination(s)\n")
    lines = [
        f"    {terminal(label)} · {terminal(variant)} · {terminal(hardware)} · "
        f"{', '.join(terminal(s) for s in sorted(row.strategies))}: {row.count}\n"
        for (label, variant, hardware), row in rows
    ]
    _text_rows(out, diff, lines, "    ", "row(s)")


def _text_tuning(out: TextIO, diff: DiffReport) -> None:
    if not diff.tuning:
        out.write(f"  {TUNING_TITLE}: none\n")
        return
    out.write(f"  {TUNING_TITLE}: {len(diff.tuning)} flag(s)\n")
    lines = [f"    {terminal(tuning_text(change))}\n" for change in diff.tuning]
    _text_rows(out, diff, lines, "    ", "flag(s)")


def write_text(diff: DiffReport, out: TextIO) -> None:
    s = diff.summary
    w = out.write
    groups = blocking_groups(diff.changes)
    w(terminal(verdict_line(diff, groups)) + "\n")
    for title, located in notice_sections(diff):
        w(f"{terminal(title)}:\n")
        w("".join(f"  {terminal(line)}\n" for line in located))
    todo = what_to_do(diff, groups)
    if todo:
        w("what to do:\n" + "".join(f"  - {terminal(line)}\n" for line in todo))
    w(f"PR audit {terminal(diff.base)} -> {terminal(diff.head)}\n")
    if diff.audit_scope:
        w(f"scope: {terminal(diff.audit_scope)}\n")
    names = [terminal(r) for r in diff.recipes]
    if len(names) > MAX_INLINE_RECIPES:
        shown = ", ".join(names[:MAX_INLINE_RECIPES])
        left = len(names) - MAX_INLINE_RECIPES
        w(f"recipes ({len(names)}): {shown}, … {left} more ({terminal(json_command(diff))})\n")
    else:
        w(f"recipes: {', '.join(names) or 'none changed'}\n")
    w(
        f"combinations: {s.base_combinations} -> {s.head_combinations}; new {s.new}, "
        f"removed {s.removed}, verdict changed {s.verdict_changed}, "
        f"flags changed {s.flags_changed}\n"
    )
    if groups or diff.claims:
        w("\nBLOCKING\n")
        number = 0
        for section in SECTION_ORDER:
            if section == "new-claim":
                if diff.claims:
                    number += 1
                    w(f"\n  {number}. {CATEGORY_TITLE[section]}: {len(diff.claims)} claim(s)\n")
                    lines = [
                        f"      {terminal(_claim_text(c))}: {terminal(c.detail or '—')}\n"
                        for c in diff.claims
                    ]
                    _text_rows(out, diff, lines, "      ", "claim(s)")
                continue
            for group in (g for g in groups if g.category == section):
                number += 1
                w(
                    f"\n  {number}. {CATEGORY_TITLE[section]} — {terminal(group.flag)} — "
                    f"{group.count} combination(s) in "
                    f"{', '.join(terminal(r) for r in sorted(group.recipes))}\n"
                )
                lines = [
                    f"      {terminal(variant)} · {terminal(hardware)} · "
                    f"{', '.join(terminal(x) for x in sorted(c.strategies))} · features: "
                    f"{', '.join(terminal(f) for f in sorted(c.features)) or 'none'}: "
                    f"{c.count}; nearest evidence: {terminal(c.nearest_text())}\n"
                    for (variant, hardware), c in _sorted_cells(group.cells)
                ]
                _text_rows(out, diff, lines, "      ", "cell(s)")
                for reason, n in group.reasons.most_common():
                    w(f"      reason: {terminal(reason)} ({n})\n")
    w("\nIMPROVED\n")
    improved = _info(diff.changes, _improved)
    if improved:
        _text_info(out, diff, "now recommended", improved)
    else:
        w("  nothing became recommended\n")
    w("\nINFORMATIONAL (not blocking)\n")
    _text_info(
        out,
        diff,
        "unbenchmarked (no in-scope evidence before or after)",
        _info(diff.changes, _unbenchmarked),
    )
    _text_info(out, diff, "declared guide-only", _info(diff.changes, _declared))
    if diff.claims_reported:
        w(f"  {REPORTED_CLAIMS_TITLE}: {len(diff.claims_reported)} claim(s)\n")
        lines = [
            f"    {terminal(_reported_claim_text(c))}: {terminal(c.detail or '—')}\n"
            for c in diff.claims_reported
        ]
        _text_rows(out, diff, lines, "    ", "claim(s)")
    _text_info(out, diff, "other changes", _info(diff.changes, _other))
    for entry in diff.lens:
        w(
            f"  flag lens {terminal(entry.key)}={terminal(entry.value)}: {entry.evidenced} "
            f"(combination, role) pair(s) with evidence, {entry.unevidenced} without\n"
        )
        lines = [
            f"    {terminal(variant)} · {terminal(hardware)}: "
            f"{row.evidenced}/{row.evidenced + row.unevidenced} backed "
            f"({terminal(', '.join(sorted(row.prs)) or 'no evidence')})\n"
            for (variant, hardware), row in lens_rows(entry)
        ]
        _text_rows(out, diff, lines, "    ", "lens row(s)")
    _text_tuning(out, diff)
