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
declaration carry an ``external`` suppression naming the declaration.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from pydantic import TypeAdapter

from provenance import HOME_URL, __version__
from provenance.audit.verdicts import AuditReport, Reason
from provenance.escaping import terminal
from provenance.model.combination import Selection
from provenance.model.reasons import ReasonCode
from provenance.recipes.locate import flag_places
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
_NOTE = {ReasonCode.MISSING_FLAG, ReasonCode.TOPOLOGY_MISMATCH}


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


def build(report: AuditReport) -> dict[str, Any]:
    locators: dict[str, FlagLocator | None] = {}
    results: dict[tuple[object, ...], _Result] = {}
    # Entries share their Reason objects, and equal reasons make one result: each object
    # is mapped to the first equal one once (by id: the report keeps them all alive).
    canonical: dict[Reason, Reason] = {}
    same: dict[int, Reason] = {}
    for entry in report.verdicts:
        if not entry.reasons:
            continue
        locator = locators.get(entry.recipe)
        if entry.recipe not in locators:
            locator = _locator(report, entry.recipe)
            locators[entry.recipe] = locator
        reasons = []
        for reason in entry.reasons:
            first = same.get(id(reason))
            if first is None:
                first = same[id(reason)] = canonical.setdefault(reason, reason)
            reasons.append((reason, id(first)))
        for selection in entry.iter_selections():
            layers = selection_layers(selection) if locator else ()
            for reason, reason_id in reasons:
                located = reason.flag if reason.code is not ReasonCode.MISSING_FLAG else None
                line = (
                    locator.line_for(located, reason.recipe_value, selection, reason.role, layers)
                    if locator
                    else 1
                )
                key = (entry.recipe, reason_id, line)
                result = results.get(key)
                if result is None:
                    result = results[key] = _Result(
                        reason.code, reason, entry.recipe, line, selection
                    )
                result.count += 1
                if entry.declared_by:
                    result.declarations.add(entry.declared_by)
                else:
                    result.undeclared += 1
    codes = list(ReasonCode)
    rules = [
        {
            "id": str(code),
            "name": RULES[code][0].title().replace(" ", ""),
            "shortDescription": {"text": RULES[code][0]},
            "fullDescription": {"text": RULES[code][1]},
            "helpUri": f"{DOCS_URL}#{code}",
            "defaultConfiguration": {"level": "note" if code in _NOTE else "warning"},
        }
        for code in codes
    ]
    sarif_results = []
    for result in results.values():
        path = report.recipe_files.get(result.recipe)
        fingerprint = hashlib.sha256(
            json.dumps(
                [result.recipe, _REASON.dump_python(result.reason, mode="json")], sort_keys=True
            ).encode()
        ).hexdigest()
        item: dict[str, Any] = {
            "ruleId": str(result.code),
            "ruleIndex": codes.index(result.code),
            "level": "note" if result.code in _NOTE else "warning",
            "message": {"text": _message(result)},
            "locations": [
                {
                    "physicalLocation": {
                        "artifactLocation": {"uri": _artifact_uri(path or result.recipe)},
                        "region": {"startLine": result.line},
                    },
                    "logicalLocations": [{"name": terminal(result.recipe), "kind": "module"}],
                }
            ],
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
        if result.undeclared == 0 and result.declarations:
            item["suppressions"] = [
                {
                    "kind": "external",
                    "justification": terminal(
                        "declared guide-only: " + ", ".join(sorted(result.declarations))
                    ),
                }
            ]
        sarif_results.append(item)
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
                "properties": {"ledger": terminal(report.ledger_line())},
                "results": sarif_results,
            }
        ],
    }


def write(report: AuditReport, out: TextIO) -> None:
    json.dump(build(report), out, indent=2, ensure_ascii=False)
    out.write("\n")
