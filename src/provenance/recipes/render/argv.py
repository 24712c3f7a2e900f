"""Argument tokens as the recipes builder handles them: units, last-wins dedupe, shell text.

A *unit* is a flag with its value (``--x v``), a lone flag, or a positional; the
builder's last-wins dedupe (spec §3.5) keeps the last unit of each flag and every
positional. :class:`RenderedPart` is a run of tokens already split into units, so
a caller joining the same parts many times (:class:`~.synthesis.Renderer`, the
audit's cell walk) splits each part once. :func:`format_command` is the builder's
shell text of a command. These are the builder's token rules, independent of what a
recipe says: :mod:`provenance.recipes.render.synthesis` decides which tokens a
process gets.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import NamedTuple

Unit = tuple[str | None, tuple[str, ...]]


def parse_units(tokens: Sequence[str]) -> list[Unit]:
    """Split tokens into ``(flag, tokens)`` units; a positional has flag ``None``.

    A token starting with ``-`` is a flag; the next token is its value unless it
    also starts with ``-`` (then the flag stands alone).
    """
    units: list[Unit] = []
    index = 0
    count = len(tokens)
    while index < count:
        current = tokens[index]
        if current.startswith("-"):
            if index + 1 < count and not tokens[index + 1].startswith("-"):
                units.append((current, (current, tokens[index + 1])))
                index += 2
            else:
                units.append((current, (current,)))
                index += 1
        else:
            units.append((None, (current,)))
            index += 1
    return units


def dedupe_unit_list(units: Sequence[Unit]) -> list[tuple[str, ...]]:
    """The units :func:`dedupe_units` keeps, still split, in their original order."""
    seen: set[str] = set()
    kept: list[tuple[str, ...]] = []
    for flag, unit in reversed(units):
        if flag is None:
            kept.append(unit)
        elif flag not in seen:
            seen.add(flag)
            kept.append(unit)
    kept.reverse()
    return kept


def dedupe_units(units: Sequence[Unit]) -> list[str]:
    """Keep the last unit of each flag and every positional, in their original order."""
    return [token for unit in dedupe_unit_list(units) for token in unit]


def dedupe_args(tokens: Sequence[str]) -> list[str]:
    """Last-wins dedupe of ``--flag [value]`` units; positionals are always kept (spec §3.5)."""
    return dedupe_units(parse_units(tokens))


class RenderedPart(NamedTuple):
    """A run of argument tokens, its ``(flag, tokens)`` units, and whether it is *plain*:
    no token is a short flag or a negative number (where the builder's and the flags
    normaliser's unit splits could differ)."""

    tokens: tuple[str, ...]
    units: tuple[Unit, ...]
    plain: bool

    @classmethod
    def of(cls, tokens: Sequence[str]) -> RenderedPart:
        """The part of ``tokens`` (empty tokens dropped, as the builder drops them)."""
        kept = tuple(t for t in tokens if t)
        plain = not any(t.startswith("-") and not t.startswith("--") for t in kept)
        return cls(kept, tuple(parse_units(kept)), plain)


def join_units(parts: Sequence[RenderedPart]) -> list[Unit]:
    """Units of the concatenated token lists, reusing each part's own units.

    Parsing parts separately differs from parsing the concatenation only when a
    part ends in a lone flag and the next non-empty part starts with a value;
    then the concatenation is parsed again.
    """
    joined: list[Unit] = []
    previous_tokens: tuple[str, ...] | None = None
    for part in parts:
        tokens = part.tokens
        if not tokens:
            continue
        if (
            previous_tokens is not None
            and previous_tokens[-1].startswith("-")
            and len(joined[-1][1]) == 1
            and not tokens[0].startswith("-")
        ):
            return parse_units([t for part in parts for t in part.tokens])
        joined.extend(part.units)
        previous_tokens = tokens
    return joined


_SAFE_WORD = re.compile(r"^[A-Za-z0-9_./=:@,+%-]+$")
_SHELL_VAR = re.compile(r"^\$[A-Z_][A-Z0-9_]*$")


def shell_quote(value: str) -> str:
    """Single-quote a value unless it is a plain word or a bare ``$UPPER_NAME``."""
    if not value or _SHELL_VAR.match(value) or _SAFE_WORD.match(value):
        return value
    return "'" + value.replace("'", "'\\''") + "'"


def format_command(binary: str, model_id: str, args: Sequence[str]) -> str:
    """The builder's shell text: one ``\\``-continued line per unit, flag and value together."""
    lines: list[str] = []
    index = 0
    while index < len(args):
        current = args[index]
        following = args[index + 1] if index + 1 < len(args) else None
        if current.startswith("-") and following is not None and not following.startswith("-"):
            lines.append(f"{current} {shell_quote(following)}")
            index += 2
        else:
            lines.append(current)
            index += 1
    if not lines:
        return f"{binary} {model_id}"
    return f"{binary} {model_id} \\\n  " + " \\\n  ".join(lines)
