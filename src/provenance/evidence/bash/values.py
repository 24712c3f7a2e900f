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
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, cast

from provenance.model.record import PartialMarker

IFS_CHARS: Final = " \t\n"


@dataclass(frozen=True)
class Unknown:
    """A hole in a value: something the evaluator could not (and will not) compute."""

    marker: PartialMarker

    @property
    def construct(self) -> str:
        return self.marker.construct_name


Segment = str | Unknown
Text = tuple[Segment, ...]

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
    for seg in text:
        if isinstance(seg, Unknown):
            return seg
    return None


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

    @property
    def is_unknown(self) -> bool:
        return isinstance(self.value, Unknown)

    @property
    def hole(self) -> Unknown | None:
        return self.value if isinstance(self.value, Unknown) else None

    @property
    def is_set(self) -> bool:
        return self.value is not None

    def scalar(self) -> Text:
        """The scalar text (element 0 of an array); a hole if unknown; empty if unset."""
        if self.value is None:
            return EMPTY
        if isinstance(self.value, Unknown):
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
