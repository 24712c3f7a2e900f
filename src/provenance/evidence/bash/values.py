"""Values of the static bash evaluator: text with unevaluated holes.

A shell value is a *text*: a tuple of segments, each either a known ``str`` or
an :class:`Unknown` hole that records why it could not be evaluated (the
construct, file and line, as a :class:`PartialMarker`). Nothing is ever
guessed: an unknown segment stays unknown through every later expansion and is
rendered as ``<unevaluated:CONSTRUCT>`` in output, with its marker reported.

During word expansion a word becomes a list of :class:`Piece` (a segment plus
whether it was quoted) and :data:`FIELD_BREAK` separators (from ``"$@"`` and
``"${ARR[@]}"``); :func:`split_fields` then performs bash field splitting on
the unquoted known text (default ``IFS``: space, tab, newline). An unknown
segment is never split: it stays inside the field where it appears.

A hole may carry a :class:`Choice`: the value depends on a condition known only at
run time (``if [[ $(probe) -lt 177 ]]``) whose branches the evaluator followed
exactly, so it is one of a few known alternatives. Only exact copies keep the
choice (a plain ``$X``, ``"$X"``, ``${X}``, an assignment, an argument):
:func:`first_hole` — what every other operation turns a hole into — and
:meth:`Var.hole` drop it, so an operator applied to the value (a default, a test, a
length, arithmetic) yields a plain hole, as before. A choice of a *variable*
(:meth:`Var.choice`) may have ``None`` (unset) among its alternatives; inside a text
(what ``$X`` expands to) unset reads as empty (:meth:`Choice.as_text`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final, cast

from provenance.model.record import PartialMarker, RuntimeCondition

IFS_CHARS: Final = " \t\n"
#: Characters bash's pathname expansion reads in an unquoted word.
_GLOB_CHARS: Final = "*?["


@dataclass(frozen=True)
class Decision:
    """One evaluation of a condition known only at run time (``number`` tells two
    evaluations of the same condition apart, e.g. in a function called twice)."""

    number: int
    condition: RuntimeCondition


@dataclass(frozen=True)
class Choice:
    """A value that is ``when_true`` or ``when_false`` by ``decision``. An alternative is a
    text (which may hold choices of other decisions), another choice (a variable set
    under a nested condition) or ``None`` (the variable is unset on that path)."""

    decision: Decision
    when_true: Alternative
    when_false: Alternative

    def as_text(self) -> Choice:
        """The choice as text reads it: unset is the empty text."""
        return Choice(self.decision, _as_text(self.when_true), _as_text(self.when_false))

    def decisions(self) -> set[Decision]:
        """Every decision the value depends on (nested ones included)."""
        found = {self.decision}
        for alternative in (self.when_true, self.when_false):
            found |= alternative_decisions(alternative)
        return found

    def resolve(self, outcomes: Mapping[Decision, bool]) -> str | None:
        """The value when each decision has its outcome (``None``: unset)."""
        taken = self.when_true if outcomes[self.decision] else self.when_false
        return resolve_alternative(taken, outcomes)

    def splits_alike(self, ifs: str) -> bool:
        """Whether the value is one non-empty field without pathname expansion on every
        path, so field splitting of an unquoted ``$X`` is the same whatever it is."""
        return all(
            _splits_alike(alternative, ifs) for alternative in (self.when_true, self.when_false)
        )


@dataclass(frozen=True)
class Unknown:
    """A hole in a value: something the evaluator could not (and will not) compute, or
    (``choice``) one of known alternatives chosen at run time."""

    marker: PartialMarker
    choice: Choice | None = None
    #: an exit status that joins paths of earlier run-time conditions: what it decides
    #: depends on them, so it is no condition of its own (no :class:`Decision`)
    derived: bool = False

    @property
    def construct(self) -> str:
        return self.marker.construct_name

    def plain(self) -> Unknown:
        """The hole without its alternatives (what any operation on the value yields)."""
        return self if self.choice is None else Unknown(self.marker)


Segment = str | Unknown
Text = tuple[Segment, ...]
Alternative = Text | Choice | None

EMPTY: Final[Text] = ()


def text_of(value: str) -> Text:
    return (value,) if value else ()


def unknown_text(marker: PartialMarker) -> Text:
    return (Unknown(marker),)


def concat(*parts: Text) -> Text:
    """Concatenate texts, merging adjacent known strings."""
    out: list[Segment] = []
    for part in parts:
        for seg in part:
            if isinstance(seg, str):
                if not seg:
                    continue
                if out and isinstance(out[-1], str):
                    out[-1] = out[-1] + seg
                    continue
            out.append(seg)
    return tuple(out)


def known(text: Text) -> str | None:
    """The text as a plain string, or ``None`` when it has a hole."""
    if any(isinstance(seg, Unknown) for seg in text):
        return None
    return "".join(seg for seg in text if isinstance(seg, str))


def holes(text: Text) -> list[Unknown]:
    return [seg for seg in text if isinstance(seg, Unknown)]


def first_hole(text: Text) -> Unknown | None:
    """The first hole of ``text``, without alternatives: what an operation on it yields."""
    for seg in text:
        if isinstance(seg, Unknown):
            return seg.plain()
    return None


def plain_holes(text: Text) -> Text:
    """``text`` with every choice turned into a plain hole."""
    if not any(isinstance(seg, Unknown) and seg.choice is not None for seg in text):
        return text
    return tuple(seg.plain() if isinstance(seg, Unknown) else seg for seg in text)


def alternative_decisions(alternative: Alternative) -> set[Decision]:
    if alternative is None:
        return set()
    if isinstance(alternative, Choice):
        return alternative.decisions()
    found: set[Decision] = set()
    for seg in alternative:
        if isinstance(seg, Unknown) and seg.choice is not None:
            found |= seg.choice.decisions()
    return found


def text_decisions(text: Text) -> set[Decision]:
    """The decisions the choices of ``text`` depend on."""
    return alternative_decisions(text)


def resolve_alternative(alternative: Alternative, outcomes: Mapping[Decision, bool]) -> str | None:
    if alternative is None:
        return None
    if isinstance(alternative, Choice):
        return alternative.resolve(outcomes)
    return resolve_text(alternative, outcomes)


def resolve_text(text: Text, outcomes: Mapping[Decision, bool]) -> str:
    """``text`` with each choice taken by ``outcomes`` (it must have no plain hole)."""
    out: list[str] = []
    for seg in text:
        if isinstance(seg, str):
            out.append(seg)
        elif seg.choice is None:
            raise ValueError(f"a plain hole ({seg.construct}) has no value to resolve")
        else:
            out.append(seg.choice.resolve(outcomes) or "")
    return "".join(out)


def _as_text(alternative: Alternative) -> Alternative:
    if alternative is None:
        return EMPTY
    if isinstance(alternative, Choice):
        return alternative.as_text()
    return alternative


def _splits_alike(alternative: Alternative, ifs: str) -> bool:
    if isinstance(alternative, Choice):
        return alternative.splits_alike(ifs)
    if not alternative:
        return False
    for seg in alternative:
        if isinstance(seg, str):
            if any(ch in ifs or ch in _GLOB_CHARS for ch in seg):
                return False
        elif seg.choice is None or not seg.choice.splits_alike(ifs):
            return False
    return True


def text_length(text: Text) -> int:
    return sum(len(seg) if isinstance(seg, str) else 16 for seg in text)


def render(text: Text) -> str:
    """Plain rendering; holes become ``<unevaluated:CONSTRUCT>``."""
    return "".join(seg if isinstance(seg, str) else placeholder(seg) for seg in text)


def placeholder(hole: Unknown) -> str:
    return f"<unevaluated:{hole.construct}>"


@dataclass(frozen=True)
class Piece:
    """One segment of an expanded word and whether it came from quoted text."""

    seg: Segment
    quoted: bool


class _FieldBreak:
    """Separates fields that ``"$@"``/``"${A[@]}"`` produce inside quotes."""

    def __repr__(self) -> str:
        return "FIELD_BREAK"


FIELD_BREAK: Final = _FieldBreak()

# Marks that a (possibly empty) quoted string was present, so the field exists.
QUOTED_EMPTY: Final = Piece("", quoted=True)

Expanded = list[Piece | _FieldBreak]


def pieces_text(pieces: Expanded) -> Text:
    """Join pieces without field splitting (assignment context); breaks become spaces."""
    parts: list[Text] = []
    for piece in pieces:
        if isinstance(piece, Piece):
            parts.append((piece.seg,) if piece.seg != "" else ())
        else:
            parts.append((" ",))
    return concat(*parts)


def split_fields(pieces: Expanded, ifs: str = IFS_CHARS) -> list[Text]:
    """Bash field splitting of an expanded word (whitespace IFS, no pathname expansion)."""
    fields: list[Text] = []
    current: list[Segment] = []
    present = False

    def close() -> None:
        nonlocal current, present
        if present or current:
            fields.append(concat(tuple(current)))
        current = []
        present = False

    for piece in pieces:
        if not isinstance(piece, Piece):
            close()
            continue
        seg = piece.seg
        if isinstance(seg, Unknown) and not piece.quoted and seg.choice is not None:
            # splitting a value known only at run time: exact only when no path splits it
            seg = seg if seg.choice.splits_alike(ifs) else seg.plain()
        if piece.quoted or isinstance(seg, Unknown):
            if piece.quoted:
                present = True
            current.append(seg)
            continue
        # Unquoted known text: split on IFS characters.
        chunk = ""
        for ch in seg:
            if ch in ifs:
                if chunk:
                    current.append(chunk)
                    chunk = ""
                close()
            else:
                chunk += ch
        if chunk:
            current.append(chunk)
    close()
    return fields


Items = tuple[tuple[int, Text], ...] | tuple[tuple[str, Text], ...]


@dataclass(frozen=True)
class Var:
    """A shell variable: a scalar text, an indexed array, an associative array,
    or wholly unknown (``Unknown``: e.g. assigned in a loop that was not run).
    ``value`` is ``None`` for a declared-but-unset variable (``export X``)."""

    value: Text | Items | Unknown | None
    kind: str = "scalar"  # "scalar" | "indexed" | "assoc"
    exported: bool = False
    exported_by_script: bool = False
    #: a :attr:`choice` unset on some path whose export attributes differ there: an
    #: assignment, which keeps the attributes, cannot be followed exactly
    attributes_vary: bool = False

    @property
    def is_unknown(self) -> bool:
        return isinstance(self.value, Unknown)

    @property
    def hole(self) -> Unknown | None:
        """The hole the variable's value is (without alternatives), if it is one."""
        return self.value.plain() if isinstance(self.value, Unknown) else None

    @property
    def choice(self) -> Choice | None:
        """The alternatives of a variable set differently on the paths of a condition
        known only at run time (``None`` among them: unset on that path)."""
        return self.value.choice if isinstance(self.value, Unknown) else None

    @property
    def is_set(self) -> bool:
        return self.value is not None

    def scalar(self) -> Text:
        """The scalar text (element 0 of an array); a hole if unknown; empty if unset."""
        if self.value is None:
            return EMPTY
        if isinstance(self.value, Unknown):
            choice = self.value.choice
            if choice is not None:
                return (Unknown(self.value.marker, choice.as_text()),)
            return (self.value,)
        if self.kind == "scalar":
            return cast(Text, self.value)
        if self.kind == "indexed":
            return self.indexed().get(0, EMPTY)
        return self.assoc().get("0", EMPTY)

    def indexed(self) -> dict[int, Text]:
        if self.kind != "indexed" or not isinstance(self.value, tuple):
            return {}
        return dict(cast(tuple[tuple[int, Text], ...], self.value))

    def assoc(self) -> dict[str, Text]:
        if self.kind != "assoc" or not isinstance(self.value, tuple):
            return {}
        return dict(cast(tuple[tuple[str, Text], ...], self.value))

    def elements(self) -> list[Text]:
        """Values of ``${X[@]}`` (empty when unset; callers check ``hole`` first)."""
        if self.value is None or isinstance(self.value, Unknown):
            return []
        if self.kind == "scalar":
            return [cast(Text, self.value)]
        if self.kind == "indexed":
            return [v for _, v in sorted(self.indexed().items())]
        return list(self.assoc().values())
