"""The role normaliser: the audit's adapter to the flags layer (normaliser + policy).

Walks turn every rendered process into its *major FlagSet* through a
:class:`RoleNormaliser`; :class:`PolicyNormaliser` is the production one
(``provenance.normalise.canonical`` then ``Policy.major``; ``Policy.in_context`` once
the process's evidence role is known, :mod:`provenance.audit.keys`). It also tells the cell
walk what one argv unit (``--flag [value]``) can do to a command's major flags
(:class:`UnitFacts`), so feature arguments that cannot change them are dropped before
rendering (:mod:`provenance.audit.walks.cells`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, NamedTuple, Protocol

from provenance.errors import ProvenanceError
from provenance.model.flags import FlagSet

if TYPE_CHECKING:
    from provenance.normalise.policy import Policy
    from provenance.normalise.vllm_policy import VersionDefaults


class RoleNormaliser(Protocol):
    """What the audit needs from the flags layer (normaliser + policy)."""

    def command_major(self, argv: Sequence[str], env: Mapping[str, object]) -> FlagSet:
        """Major flags of one rendered command (argv + env)."""
        ...

    def major(self, flags: FlagSet) -> FlagSet:
        """Major subset of an already normalised FlagSet (evidence records)."""
        ...

    def in_context(self, major: FlagSet, role: str) -> FlagSet:
        """``major`` compared as a command of evidence ``role``: aliased spellings under
        their canonical key, flags a context rule makes inert dropped (recipe and
        evidence side alike)."""
        ...

    def role_major(self, flags: FlagSet, role: str) -> FlagSet:
        """``in_context(major(flags), role)``: an evidence record's role as compared."""
        ...

    def classify(self, key: str) -> str:
        """Policy class of a key, as text."""
        ...

    def unit_facts(self, unit: tuple[str, ...]) -> UnitFacts:
        """What one argv unit (``--flag [value]``) can do to a command's major flags."""
        ...

    def units_major(
        self, head: tuple[str, ...], units: Sequence[tuple[str, ...]], env: Mapping[str, object]
    ) -> FlagSet:
        """``command_major`` of ``head`` + ``units`` already split into units (no negative
        number among the tokens: then both splits agree)."""
        ...


class UnitFacts(NamedTuple):
    """One argv unit's effect: ``alone`` = normalised alone it yields no major key;
    ``mergeable`` = it writes a JSON/dotted config (configs merge, so it may replace or
    complete another unit's); ``base`` = the config name it writes; ``names`` = every
    flag or config name it may touch (spellings, negation and the keys it normalises
    to), or None when it does not normalise alone."""

    alone: bool
    mergeable: bool
    base: str
    names: frozenset[str] | None = None


class PolicyNormaliser:
    """The production :class:`RoleNormaliser`: ``normalise_argv`` then ``Policy.major``.

    Memoised on the command with its *inert* argv units removed. A unit (a flag
    token and its value, split as the recipes builder splits them) is inert when
    normalising it alone succeeds and yields no major key (``--port 8001``,
    ``--tool-call-parser x``, ``--enable-auto-tool-choice``). A unit whose flag
    is dotted or whose value is a JSON object is inert only when no other unit
    writes the same config (JSON configs merge and may replace each other).
    Dropping inert units cannot change the major flags, and it lets the many
    commands that differ only in functional features share one normalisation.
    """

    def __init__(self, policy: object | None = None) -> None:
        from provenance.normalise.policy import Policy, default_policy

        self._policy: Policy = policy if isinstance(policy, Policy) else default_policy()
        self._units: dict[tuple[str, ...], UnitFacts] = {}
        self._memo: dict[tuple[object, ...], FlagSet] = {}
        self._classes: dict[str, str] = {}

    def is_classified(self, key: str) -> bool:
        """Whether a policy rule names ``key`` (else it is major by the catch-all)."""
        return self._policy.is_classified(key)

    def unit_facts(self, unit: tuple[str, ...]) -> UnitFacts:
        found = self._units.get(unit)
        if found is not None:
            return found
        from provenance.normalise.canonical import normalise_argv

        head = unit[0].split("=", 1)[0].lstrip("-")
        base = head.split(".", 1)[0].replace("-", "_")
        value = unit[1] if len(unit) > 1 else unit[0].partition("=")[2]
        mergeable = "." in head or value.lstrip().startswith("{")
        if not unit[0].startswith("--"):  # a positional or short/negative token: never dropped
            found = UnitFacts(False, mergeable, base)
            self._units[unit] = found
            return found
        names: frozenset[str] | None
        try:
            flags = normalise_argv(["vllm", "serve", *unit]).flags
            alone = all(self._policy.classify(k) is not _major() for k in flags)
            names = frozenset(
                {base, base.removeprefix("no_"), *(k.split(".", 1)[0] for k in flags)}
            )
        except ProvenanceError:
            alone = False
            names = None
        found = UnitFacts(alone, mergeable, base, names)
        self._units[unit] = found
        return found

    def command_major(self, argv: Sequence[str], env: Mapping[str, object]) -> FlagSet:
        tokens = list(argv)
        head = tokens[:3] if tokens[:2] == ["vllm", "serve"] else []
        return self.units_major(tuple(head), split_units(tokens[len(head) :]), env)

    def units_major(
        self, head: tuple[str, ...], units: Sequence[tuple[str, ...]], env: Mapping[str, object]
    ) -> FlagSet:
        facts = [self.unit_facts(u) for u in units]
        bases = [fact.base for fact in facts]
        kept = tuple(
            token
            for unit, (alone, mergeable, base, _) in zip(units, facts, strict=True)
            if not (alone and (not mergeable or bases.count(base) == 1))
            for token in unit
        )
        key = (head, kept, tuple(env.items()))
        major = self._memo.get(key)
        if major is None:
            from provenance.normalise.canonical import normalise_argv

            major = self._policy.major(normalise_argv([*head, *kept], env).flags)
            self._memo[key] = major
        return major

    @property
    def versions(self) -> VersionDefaults | None:
        """The policy's version-dependent defaults (None without vLLM's knowledge): the
        evidence index drops each record's explicit defaults of its image's vLLM version,
        and the judge reads a recipe's explicit default against each record's version."""
        return self._policy.versions

    @property
    def policy(self) -> Policy:
        """The policy this normaliser classifies and puts flags in context by."""
        return self._policy

    def major(self, flags: FlagSet) -> FlagSet:
        return self._policy.major(flags)

    def non_major(self, argv: Sequence[str], env: Mapping[str, object]) -> FlagSet:
        """The flags of one rendered command the policy does not class major (tuning,
        harness, functional): what :meth:`command_major` leaves out."""
        from provenance.model.flags import FlagClass
        from provenance.normalise.canonical import normalise_argv

        flags = normalise_argv(list(argv), env).flags
        return FlagSet(
            {k: v for k, v in flags.items() if self._policy.classify(k) is not FlagClass.MAJOR}
        )

    def in_context(self, major: FlagSet, role: str) -> FlagSet:
        return self._policy.in_context(major, role)

    def role_major(self, flags: FlagSet, role: str) -> FlagSet:
        return self._policy.effective(flags, role)

    def classify(self, key: str) -> str:
        found = self._classes.get(key)
        if found is None:
            found = self._classes[key] = str(self._policy.classify(key))
        return found


def _major() -> object:
    from provenance.model.flags import FlagClass

    return FlagClass.MAJOR


_NEGATIVE_NUMBER = re.compile(r"-(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")


def split_units(tokens: Sequence[str]) -> list[tuple[str, ...]]:
    """A flag token and its value (the next token, unless it is another flag).

    A negative number is a value, as the flags normaliser reads it.
    """
    units: list[tuple[str, ...]] = []
    index = 0
    while index < len(tokens):
        token = tokens[index]
        if token.startswith("-") and index + 1 < len(tokens):
            following = tokens[index + 1]
            if not following.startswith("-") or _NEGATIVE_NUMBER.fullmatch(following):
                units.append((token, following))
                index += 2
                continue
        units.append((token,))
        index += 1
    return units
