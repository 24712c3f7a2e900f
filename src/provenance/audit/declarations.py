"""Match reviewed declarations (``ledger/declarations.yaml``, and the audited recipes
root's ``provenance-declarations.yaml``) against guide-only combinations.

A :class:`~provenance.model.ledger.SelectionPattern` matches a selection when
every field it gives matches (``fnmatch`` globs, case-sensitive):

* ``recipe``, ``variant``, ``hardware``, ``strategy``: the glob matches the value;
* ``features``: every glob in the list matches at least one enabled feature
  (an empty list matches only a selection with no features);
* ``feature_modes``: for each ``feature: glob``, the feature's selected mode
  matches the glob (a feature that is off has no mode and does not match);
* ``reasons``: when given, *every* reason code of the verdict matches one of
  the globs — a declaration written for ``value-mismatch`` does not silently
  cover a later ``flag-unevidenced``.

A declaration also acknowledges a ``verified`` claim (:meth:`DeclarationMatcher.declared_claim`)
when it is about the whole recipe — ``variant`` and ``strategy`` are ``*``, no
``features`` or ``feature_modes`` — and its ``recipe`` and ``hardware`` globs match the
claim's (a KV offload claim has no hardware: ``*`` matches it). With ``reasons``, one
glob must match the claim's code, ``claim-in-coverage`` or ``claim-outside-coverage``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from fnmatch import translate

from provenance.audit.verdicts import Claim
from provenance.model.combination import Selection
from provenance.model.ledger import Declaration, Declarations, SelectionPattern

#: The audited repository's own declarations, at its recipes root (same schema as
#: ``ledger/declarations.yaml``): reviewed in the PR that needs them, added to the ledger's.
REPO_DECLARATIONS_FILE = "provenance-declarations.yaml"


def merged(ledger: Declarations, repository: Declarations) -> Declarations:
    """The ledger's declarations, then the repository's (the first match wins)."""
    if not repository.declarations:
        return ledger
    return ledger.model_copy(
        update={"declarations": (*ledger.declarations, *repository.declarations)}
    )


def _compile(pattern: str) -> re.Pattern[str]:
    return re.compile(translate(pattern))


@dataclass(frozen=True)
class _CompiledPattern:
    declaration: Declaration
    recipe: re.Pattern[str]
    variant: re.Pattern[str]
    hardware: re.Pattern[str]
    strategy: re.Pattern[str]
    features: tuple[re.Pattern[str], ...] | None
    feature_modes: tuple[tuple[str, re.Pattern[str]], ...]
    reasons: tuple[re.Pattern[str], ...]

    @classmethod
    def of(cls, declaration: Declaration) -> _CompiledPattern:
        match: SelectionPattern = declaration.match
        return cls(
            declaration=declaration,
            recipe=_compile(match.recipe),
            variant=_compile(match.variant),
            hardware=_compile(match.hardware),
            strategy=_compile(match.strategy),
            features=None if match.features is None else tuple(_compile(f) for f in match.features),
            feature_modes=tuple((k, _compile(v)) for k, v in sorted(match.feature_modes.items())),
            reasons=tuple(_compile(r) for r in match.reasons),
        )

    def matches(self, recipe: str, selection: Selection, reason_codes: Sequence[str]) -> bool:
        if not (
            self.recipe.match(recipe)
            and self.variant.match(selection.variant)
            and self.hardware.match(selection.hardware)
            and self.strategy.match(selection.strategy or "")
        ):
            return False
        if self.features is not None:
            if not self.features and selection.features:
                return False
            for pattern in self.features:
                if not any(pattern.match(f) for f in selection.features):
                    return False
        for feature, pattern in self.feature_modes:
            mode = selection.feature_modes.get(feature)
            if feature not in selection.features or mode is None or not pattern.match(mode):
                return False
        if self.reasons:
            for code in reason_codes:
                if not any(p.match(code) for p in self.reasons):
                    return False
        return True

    def matches_claim(self, claim: Claim) -> bool:
        match = self.declaration.match
        if match.variant != "*" or match.strategy != "*":
            return False
        if match.features is not None or match.feature_modes:
            return False
        if not (self.recipe.match(claim.recipe) and self.hardware.match(claim.hardware)):
            return False
        return not self.reasons or any(p.match(claim.code) for p in self.reasons)


class DeclarationMatcher:
    """Finds the first declaration covering a guide-only selection (memoised)."""

    def __init__(self, declarations: Declarations | Iterable[Declaration]) -> None:
        items = (
            declarations.declarations if isinstance(declarations, Declarations) else declarations
        )
        self._patterns = tuple(_CompiledPattern.of(d) for d in items)
        self._memo: dict[tuple[object, ...], str | None] = {}

    def __bool__(self) -> bool:
        return bool(self._patterns)

    def declared_by(
        self, recipe: str, selection: Selection, reason_codes: Sequence[str]
    ) -> str | None:
        """Id of the first declaration matching, or None."""
        if not self._patterns:
            return None
        key = (
            recipe,
            selection.variant,
            selection.hardware,
            selection.strategy,
            selection.features,
            tuple(sorted((k, v or "") for k, v in selection.feature_modes.items())),
            tuple(reason_codes),
        )
        try:
            return self._memo[key]
        except KeyError:
            pass
        found = next(
            (
                p.declaration.id
                for p in self._patterns
                if p.matches(recipe, selection, reason_codes)
            ),
            None,
        )
        self._memo[key] = found
        return found

    def declared_claim(self, claim: Claim) -> str | None:
        """Id of the first declaration acknowledging ``claim``, or None."""
        return next((p.declaration.id for p in self._patterns if p.matches_claim(claim)), None)
