"""SARIF 2.1.0 report for code scanning.

One result per (recipe, reason code, role, flag, values, location): a flag
that is unevidenced in 3,000 combinations is one result whose message counts
them and names an example. ``ruleId`` is the reason code; ``helpUri`` points at
the reason's documentation; the location is the recipe file and the line of
the argument that introduced the flag — the arg list or env entry that renders
it for that selection, preferring the layer the builder emits last (feature
mode > strategy override > variant > model base args). Reasons without a flag
(and ``missing-flag``, which the recipe by definition does not write) point at
the variant's definition. Results whose every combination is covered by a
declaration carry an ``external`` suppression naming the declaration. ``unreachable``
results, and every other result of combinations that carry it (secondary: no flag edit
reaches evidence), are level ``note``.
"""

from __future__ import annotations

import difflib
import hashlib
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from pydantic import TypeAdapter

from provenance import HOME_URL, __version__
from provenance.audit.verdicts import AuditReport, Claim, Reason, RecipeError, VerdictEntry
from provenance.escaping import terminal
from provenance.model.combination import Selection
from provenance.model.reasons import ReasonCode
from provenance.recipes.locate import flag_places
from provenance.review.diff import ChangeGroup, DiffReport
from provenance.review.introduced import entries_by_group
from provenance.safe_yaml import KeyPath, LoadedYaml, load_yaml, load_yaml_text

_REASON = TypeAdapter(Reason)

SARIF_SCHEMA_URI = "https://json.schemastore.org/sarif-2.1.0.json"
#: Where each reason code is documented (``#<code>`` anchors).
DOCS_URL = f"{HOME_URL}/blob/main/docs/audit.md"
TOOL_URI = HOME_URL

RULES: Mapping[ReasonCode, tuple[str, str]] = {
    ReasonCode.NO_EVIDENCE: (
        "No evidence in scope",
        "No benchmark evidence exists for this checkpoint, hardware and deployment shape.",
    ),
    ReasonCode.UNREACHABLE: (
        "No recipe edit reaches evidence",
        "Evidence exists in scope, but only in deployment shapes the recipe schema cannot "
        "express; the combination's other reasons are secondary.",
    ),
    ReasonCode.FLAG_UNEVIDENCED: (
        "Flag never benchmarked",
        "No in-scope evidence point sets this major flag at all.",
    ),
    ReasonCode.VALUE_MISMATCH: (
        "Flag value never benchmarked",
        "In-scope evidence sets this major flag, but never to the recipe's value.",
    ),
    ReasonCode.MISSING_FLAG: (
        "Evidence flag missing from the recipe",
        "The nearest evidence point sets a major flag the recipe does not.",
    ),
    ReasonCode.NEVER_JOINTLY_OBSERVED: (
        "Flags never benchmarked together",
        "Each flag is evidenced somewhere, but no single evidence point has them all.",
    ),
    ReasonCode.TOPOLOGY_MISMATCH: (
        "Deployment shape differs from the evidence",
        "The flags match an evidence point whose deployment shape the recipe does not render.",
    ),
    ReasonCode.EVIDENCE_NOT_VALIDATED: (
        "Evidence not validated",
        "An exact evidence match exists, but no green sweep run is recorded for it.",
    ),
}
_NOTE = {ReasonCode.MISSING_FLAG, ReasonCode.TOPOLOGY_MISMATCH, ReasonCode.UNREACHABLE}


@dataclass(frozen=True)
class _Place:
    key_path: KeyPath
    line: int
    value: str | None


def selection_layers(selection: Selection) -> tuple[object, ...]:
    """What of ``selection`` picks the recipe layers a flag can come from (variant,
    strategy, features and their modes): the rest does not move a flag's line."""
    modes = tuple(sorted((k, v or "") for k, v in selection.feature_modes.items()))
    return (selection.variant, selection.strategy, selection.features, modes)


class FlagLocator:
    """Where each canonical flag key is written in one recipe YAML."""

    def __init__(self, loaded: LoadedYaml) -> None:
        self.loaded = loaded
        self.places: dict[str, list[_Place]] = {
            key: [
                _Place(place.key_path, self.loaded.line_of(place.key_path) or 1, place.value)
                for place in found
            ]
            for key, found in flag_places(loaded.data).items()
        }
        self._memo: dict[tuple[object, ...], int] = {}

    def line_for(
        self,
        flag: str | None,
        value: str | None,
        selection: Selection,
        role: str | None,
        layers: tuple[object, ...] | None = None,
    ) -> int:
        """The line of the recipe that sets ``flag`` (to ``value``) for ``selection``'s
        ``role``; ``layers`` is :func:`selection_layers` of ``selection``, when known."""
        if layers is None:
            layers = selection_layers(selection)
        key = (flag, value, role, layers)
        found = self._memo.get(key)
        if found is None:
            found = self._line_for(flag, value, selection, role)
            self._memo[key] = found
        return found

    def _line_for(
        self, flag: str | None, value: str | None, selection: Selection, role: str | None
    ) -> int:
        best: tuple[int, int, int] | None = None
        for place in self.places.get(flag or "", []) if flag else []:
            score = _layer_score(place.key_path, selection, role)
            if score is None:
                continue
            ranked = (score, int(place.value == value), place.line)
            if best is None or ranked > best:
                best = ranked
        if best is not None:
            return best[2]
        return self.loaded.line_of(("variants", selection.variant)) or 1


def _layer_score(path: KeyPath, selection: Selection, role: str | None) -> int | None:
    """How late the builder emits this layer for ``selection`` (None: not rendered)."""
    if not path:
        return None
    head = path[0]
    if head == "features":
        if len(path) < 2 or path[1] not in selection.features:
            return None
        if "modes" in path:
            at = path.index("modes")
            mode = path[at + 1] if at + 1 < len(path) else None
            if mode != selection.feature_modes.get(str(path[1])):
                return None
        return 4
    if head == "strategy_overrides":
        if len(path) < 2 or path[1] != selection.strategy:
            return None
        for pd_role in ("prefill", "decode"):
            if pd_role in path and role is not None and role != pd_role:
                return None
        return 3
    if head == "variants":
        if len(path) < 2 or path[1] != selection.variant:
            return None
        return 2
    if head in ("model", "hardware_overrides"):
        return 1
    return 0


@dataclass
class _Result:
    code: ReasonCode
    reason: Reason
    recipe: str
    line: int
    example: Selection
    count: int = 0
    undeclared: int = 0
    declarations: set[str] = field(default_factory=set)
    #: the PR gate's category of the change that introduced it (PR SARIF only)
    category: str | None = None
    #: a reason of unreachable combinations (reason ``unreachable``): level note, secondary
    secondary: bool = False


def _artifact_uri(path: str) -> str:
    candidate = Path(path)
    if candidate.is_absolute():
        try:
            candidate = candidate.resolve().relative_to(Path.cwd().resolve())
        except ValueError:
            return candidate.as_uri()
    return candidate.as_posix()


def _message(result: _Result) -> str:
    reason = result.reason
    where = f"{reason.role} " if reason.role else ""
    if reason.flag:
        what = f"{where}flag {reason.flag}"
        if reason.recipe_value is not None:
            what += f"={reason.recipe_value}"
    else:
        what = f"{where}combination"
    text = f"{result.code} ({what})"
    if result.secondary:
        text = f"secondary, the combination is unreachable: {text}"
    if result.category is not None:
        text = f"{result.category}: {text}"
    if reason.evidence_value is not None:
        text += f" (evidence: {reason.evidence_value})"
    if reason.sources:
        text += f" [{', '.join(reason.sources)}]"
    if reason.detail:
        text += f". {reason.detail}"
    plural = "s" if result.count != 1 else ""
    text += f". Affects {result.count} combination{plural}, e.g. {result.example.label()}."
    return terminal(text)


def _inert(value: str | None) -> str | None:
    return None if value is None else terminal(value)


def _locator(report: AuditReport, recipe: str) -> FlagLocator | None:
    """The line finder of ``recipe``'s file (its kept text when the file is not on disk)."""
    path = report.recipe_files.get(recipe)
    if not path:
        return None
    text = report.recipe_texts.get(recipe)
    if text is not None:
        return FlagLocator(load_yaml_text(text, path))
    return FlagLocator(load_yaml(Path(path)))


#: Where a result goes: (locator, reason, selection, :func:`selection_layers`) -> line.
LineFor = Callable[[FlagLocator | None, Reason, Selection, tuple[object, ...]], int]


def _flag_line(
    locator: FlagLocator | None, reason: Reason, selection: Selection, layers: tuple[object, ...]
) -> int:
    """The line of the argument that introduced the reason's flag (module docstring)."""
    if locator is None:
        return 1
    located = reason.flag if reason.code is not ReasonCode.MISSING_FLAG else None
    return locator.line_for(located, reason.recipe_value, selection, reason.role, layers)


class _Collector:
    """Results keyed by (category, recipe, reason, line), with each recipe's locator."""

    def __init__(self, report: AuditReport) -> None:
        self.report = report
        self.locators: dict[str, FlagLocator | None] = {}
        self.results: dict[tuple[object, ...], _Result] = {}
        # Entries share their Reason objects, and equal reasons make one result: each
        # object is mapped to the first equal one once (by id: the report keeps them alive).
        self._canonical: dict[Reason, Reason] = {}
        self._same: dict[int, Reason] = {}

    def locator(self, recipe: str) -> FlagLocator | None:
        if recipe not in self.locators:
            self.locators[recipe] = _locator(self.report, recipe)
        return self.locators[recipe]

    def add(
        self,
        entries: Iterable[VerdictEntry],
        line_for: LineFor = _flag_line,
        *,
        category: str | None = None,
        keep: Callable[[Reason], bool] | None = None,
    ) -> None:
        for entry in entries:
            if not entry.reasons:
                continue
            locator = self.locator(entry.recipe)
            secondary = any(r.code == ReasonCode.UNREACHABLE for r in entry.reasons)
            reasons = []
            for reason in entry.reasons:
                if keep is not None and not keep(reason):
                    continue
                first = self._same.get(id(reason))
                if first is None:
                    first = self._same[id(reason)] = self._canonical.setdefault(reason, reason)
                reasons.append((reason, id(first)))
            for selection in entry.iter_selections() if reasons else ():
                layers = selection_layers(selection) if locator else ()
                for reason, reason_id in reasons:
                    line = line_for(locator, reason, selection, layers)
                    key = (category, entry.recipe, reason_id, line, secondary)
                    result = self.results.get(key)
                    if result is None:
                        result = self.results[key] = _Result(
                            reason.code,
                            reason,
                            entry.recipe,
                            line,
                            selection,
                            category=category,
                            secondary=secondary and reason.code != ReasonCode.UNREACHABLE,
                        )
                    result.count += 1
                    if entry.declared_by:
                        result.declarations.add(entry.declared_by)
                    else:
                        result.undeclared += 1


def _rules(extra: Sequence[dict[str, Any]] = ()) -> list[dict[str, Any]]:
    return [
        *(
            {
                "id": str(code),
                "name": RULES[code][0].title().replace(" ", ""),
                "shortDescription": {"text": RULES[code][0]},
                "fullDescription": {"text": RULES[code][1]},
                "helpUri": f"{DOCS_URL}#{code}",
                "defaultConfiguration": {"level": "note" if code in _NOTE else "warning"},
            }
            for code in ReasonCode
        ),
        *extra,
    ]


def _location(report: AuditReport, recipe: str, line: int) -> dict[str, Any]:
    path = report.recipe_files.get(recipe)
    return {
        "physicalLocation": {
            "artifactLocation": {"uri": _artifact_uri(path or recipe)},
            "region": {"startLine": line},
        },
        "logicalLocations": [{"name": terminal(recipe), "kind": "module"}],
    }


def _item(report: AuditReport, result: _Result) -> dict[str, Any]:
    fingerprint = hashlib.sha256(
        json.dumps(
            [result.recipe, _REASON.dump_python(result.reason, mode="json")], sort_keys=True
        ).encode()
    ).hexdigest()
    item: dict[str, Any] = {
        "ruleId": str(result.code),
        "ruleIndex": list(ReasonCode).index(result.code),
        "level": "note" if result.code in _NOTE or result.secondary else "warning",
        "message": {"text": _message(result)},
        "locations": [_location(report, result.recipe, result.line)],
        "partialFingerprints": {"provenanceReason/v1": fingerprint},
        "properties": {
            "recipe": _inert(result.recipe),
            "role": _inert(result.reason.role),
            "flag": _inert(result.reason.flag),
            "recipeValue": _inert(result.reason.recipe_value),
            "evidenceValue": _inert(result.reason.evidence_value),
            "sources": [terminal(s) for s in result.reason.sources],
            "combinations": result.count,
            "undeclared": result.undeclared,
        },
    }
    if result.category is not None:
        item["level"] = "error"
        item["properties"]["gate"] = result.category
    if result.undeclared == 0 and result.declarations:
        item["suppressions"] = [
            {
                "kind": "external",
                "justification": terminal(
                    "declared guide-only: " + ", ".join(sorted(result.declarations))
                ),
            }
        ]
    return item


def _document(
    report: AuditReport | None,
    rules: list[dict[str, Any]],
    results: list[dict[str, Any]],
    ledger: str = "",
    recipes: str = "",
) -> dict[str, Any]:
    """One run of ``results``; ``ledger`` and ``recipes`` name the ledger and the recipes
    root when there is no ``report``."""
    return {
        "$schema": SARIF_SCHEMA_URI,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "provenance",
                        "version": __version__,
                        "informationUri": TOOL_URI,
                        "rules": rules,
                    }
                },
                "columnKind": "unicodeCodePoints",
                "properties": {
                    "ledger": terminal(report.ledger_line() if report is not None else ledger),
                    "recipes": terminal(report.recipes_line() if report is not None else recipes),
                },
                "results": results,
            }
        ],
    }


def build(report: AuditReport) -> dict[str, Any]:
    collector = _Collector(report)
    collector.add(report.verdicts)
    items = [_item(report, r) for r in collector.results.values()]
    if not report.errors:
        return _document(report, _rules(), items)
    items += [_error_item(error) for error in report.errors]
    return _document(report, _rules([INVALID_RECIPE_RULE]), items)


#: the rule of a recipe an audit of every recipe could not load (and so did not audit)
INVALID_RECIPE_RULE: dict[str, Any] = {
    "id": "invalid-recipe",
    "name": "InvalidRecipe",
    "shortDescription": {"text": "Invalid recipe, not audited"},
    "fullDescription": {
        "text": "The recipe file does not load (YAML or schema error); the other recipes "
        "were audited and the command exits 3."
    },
    "helpUri": f"{DOCS_URL}#invalid-recipes",
    "defaultConfiguration": {"level": "error"},
}


def _error_item(
    error: RecipeError, rule_index: int = len(ReasonCode), path: str | None = None
) -> dict[str, Any]:
    """The result of an invalid recipe, on its file (``path``, else the error's) and line."""
    region = {"startLine": error.line} if error.line is not None else {}
    uri = _artifact_uri(path if path is not None else error.path)
    location: dict[str, Any] = {"artifactLocation": {"uri": uri}}
    if region:
        location["region"] = region
    return {
        "ruleId": INVALID_RECIPE_RULE["id"],
        "ruleIndex": rule_index,
        "level": "error",
        "message": {"text": terminal(error.located())},
        "locations": [{"physicalLocation": location}],
        "properties": {"keyPath": _inert(error.key_path)},
    }


# ---------------------------------------------------------------------------------------
# The SARIF of a pull request

#: the rule of a new ``verified`` claim no recommended combination backs (PR SARIF only)
CLAIM_RULE: dict[str, Any] = {
    "id": "new-claim",
    "name": "NewUnbackedClaim",
    "shortDescription": {"text": "New verified claim no recommended combination backs"},
    "fullDescription": {
        "text": "The PR marks a hardware (meta.hardware) or a KV offload choice "
        "(kv_offload_support) verified, and no audited combination of it is recommended."
    },
    "helpUri": f"{DOCS_URL}#the-pr-gate",
    "defaultConfiguration": {"level": "error"},
}


def changed_lines(before: str | None, after: str) -> frozenset[int]:
    """The lines (from 1) of ``after`` that the change from ``before`` wrote: replaced
    and inserted lines; when it only deleted lines, the line after each deletion (the
    last line at the end). Every line when there is no ``before`` (a new file)."""
    lines = after.splitlines()
    if before is None:
        return frozenset(range(1, len(lines) + 1))
    written: set[int] = set()
    after_deletions: set[int] = set()
    matcher = difflib.SequenceMatcher(None, before.splitlines(), lines, autojunk=False)
    for tag, _i1, _i2, j1, j2 in matcher.get_opcodes():
        if tag in ("replace", "insert"):
            written.update(range(j1 + 1, j2 + 1))
        elif tag == "delete" and lines:
            after_deletions.add(min(j1 + 1, len(lines)))
    return frozenset(written or after_deletions)


def _on_changed(changed: frozenset[int], candidates: Sequence[int]) -> int:
    """The first candidate line the PR changed, else the changed line nearest the first
    candidate (the candidate itself when the PR changed no line of the file)."""
    for line in candidates:
        if line in changed:
            return line
    if not changed:
        return candidates[0]
    return min(changed, key=lambda line: (abs(line - candidates[0]), line))


def _new_flags(group: ChangeGroup) -> list[tuple[str, str, str]]:
    """(role, key, value) of the major flags the change group newly sets."""
    out = [(role, k, v) for role, flags in group.flags.added.items() for k, v in flags.items()]
    out += [
        (role, k, new)
        for role, moved in group.flags.changed.items()
        for k, (_old, new) in moved.items()
    ]
    return out


def _recipe_text(report: AuditReport | None, recipe: str) -> str | None:
    if report is None or recipe not in report.recipe_files:
        return None
    text = report.recipe_texts.get(recipe)
    if text is not None:
        return text
    path = Path(report.recipe_files[recipe])
    return path.read_text(encoding="utf-8") if path.is_file() else None


def _group_line_for(group: ChangeGroup, changed: frozenset[int]) -> LineFor:
    """Lines of a blocking group's results: the reason's flag when the PR changed its
    line, else a flag the group newly sets (for the reason's role), else the nearest
    changed line."""
    new = _new_flags(group)

    def line_for(
        locator: FlagLocator | None,
        reason: Reason,
        selection: Selection,
        layers: tuple[object, ...],
    ) -> int:
        candidates = [_flag_line(locator, reason, selection, layers)]
        if locator is not None:
            candidates += [
                locator.line_for(key, value, selection, role, layers)
                for role, key, value in new
                if reason.role is None or role == reason.role
            ]
        return _on_changed(changed, candidates)

    return line_for


def _group_keep(group: ChangeGroup) -> Callable[[Reason], bool] | None:
    """Which head reasons the group introduces: for a new unevidenced flag, the reasons
    about the flags it newly sets (all, when none names one); otherwise all."""
    if group.block_reason != "new-unevidenced-flag":
        return None
    new = set(_new_flags(group))
    if not any((r.role, r.flag, r.recipe_value) in new for r in group.reasons):
        return None
    return lambda r: (r.role, r.flag, r.recipe_value) in new


def _claim_item(
    report: AuditReport, claim: Claim, locator: FlagLocator | None, changed: frozenset[int]
) -> dict[str, Any]:
    path: KeyPath = (
        ("kv_offload_support", claim.kv_offload)
        if claim.kv_offload is not None
        else ("meta", "hardware", claim.hardware)
    )
    line = (locator.loaded.line_of(path) if locator is not None else None) or 1
    where = claim.subject if claim.kv_offload is not None else f"meta.hardware.{claim.hardware}"
    blocks = claim.coverage == "in-coverage" and claim.declared_by is None
    text = f"new-claim: {where}: {claim.claim}, and no audited combination is recommended"
    if claim.detail:
        text += f". {claim.detail}"
    if claim.declared_by:
        text += f". Declared by {claim.declared_by}: reported, not blocking"
    elif not blocks:
        text += ". Reported, not blocking"
    fingerprint = hashlib.sha256(
        json.dumps([claim.recipe, where, claim.claim], sort_keys=True).encode()
    ).hexdigest()
    return {
        "ruleId": CLAIM_RULE["id"],
        "ruleIndex": len(ReasonCode),
        "level": "error" if blocks else "note",
        "message": {"text": terminal(text)},
        "locations": [_location(report, claim.recipe, _on_changed(changed, [line]))],
        "partialFingerprints": {"provenanceClaim/v1": fingerprint},
        "properties": {
            "recipe": _inert(claim.recipe),
            "claim": _inert(where),
            "recommended": claim.recommended,
            "coverage": claim.coverage,
            "gate": "new-claim" if blocks else "reported",
        },
    }


def build_pr(head: AuditReport, base: AuditReport | None, diff: DiffReport) -> dict[str, Any]:
    """The SARIF of a PR: only what the PR introduces and the gate blocks — each blocking
    change group's reasons (for a new unevidenced flag, those about the flags it newly
    sets) and each new unbacked claim — placed on the lines the PR changed in the head
    recipe (:func:`changed_lines`); and each recipe invalid in the head, on its line."""
    changed: dict[str, frozenset[int]] = {}

    def changed_in(recipe: str) -> frozenset[int]:
        found = changed.get(recipe)
        if found is None:
            after = _recipe_text(head, recipe) or ""
            found = changed[recipe] = changed_lines(_recipe_text(base, recipe), after)
        return found

    collector = _Collector(head)
    blocking = [g for g in diff.changes if g.blocking and g.block_reason is not None]
    for group, entries in zip(blocking, entries_by_group(head, blocking), strict=True):
        collector.add(
            entries,
            _group_line_for(group, changed_in(group.recipe)),
            category=group.block_reason,
            keep=_group_keep(group),
        )
    items = [_item(head, r) for r in collector.results.values()]
    items += [
        _claim_item(head, c, collector.locator(c.recipe), changed_in(c.recipe))
        for c in (*diff.claims, *diff.claims_reported)
    ]
    if not diff.errors:
        return _document(head, _rules([CLAIM_RULE]), items)
    # an invalid recipe is named ``<head>:<path>``; its artifact is the repository's path
    revision = f"{diff.head}:"
    items += [
        _error_item(e, len(ReasonCode) + 1, e.path.removeprefix(revision)) for e in diff.errors
    ]
    return _document(head, _rules([CLAIM_RULE, INVALID_RECIPE_RULE]), items)


def write_pr(
    head: AuditReport | None, base: AuditReport | None, diff: DiffReport, out: TextIO
) -> None:
    """The PR's SARIF; with no head audit (no recipe to audit in the head), one run with no
    result, so that code scanning closes what an earlier run of the PR reported."""
    if head is None:
        ledger = diff.ledger_source.describe() if diff.ledger_source is not None else ""
        recipes = diff.recipes_source.describe() if diff.recipes_source is not None else ""
        document = _document(None, _rules([CLAIM_RULE]), [], ledger, recipes)
    else:
        document = build_pr(head, base, diff)
    json.dump(document, out, indent=2, ensure_ascii=False)
    out.write("\n")


def write(report: AuditReport, out: TextIO) -> None:
    json.dump(build(report), out, indent=2, ensure_ascii=False)
    out.write("\n")
