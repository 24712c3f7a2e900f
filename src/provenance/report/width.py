"""How wide the text report is, and wrapping that never parts a label from its number.

The width (:func:`resolve_width`, docs/cli.md "Output width"): the writer's ``width=``
when given, else ``COLUMNS`` when it is a positive integer, else the terminal's width
on a terminal, else :data:`PIPE_WIDTH` (a pipe or a file: a pager or an editor on an
80-column screen shows it unwrapped).

Rich wraps a cell at any space (a no-break space included: its word pattern is
``\\S+``), so a summary such as ``topology-mismatch 16`` could end one line on
the label and start the next on the count. :func:`wrap` wraps units instead: a number
stays with the label it counts (:func:`units`), and a unit is split only when it is
wider than the line.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Sequence
from typing import TextIO

from rich.cells import cell_len

#: Width of text output that is neither a terminal nor sized by ``COLUMNS``.
PIPE_WIDTH = 80
#: Narrowest a text report is laid out for (narrower requests are raised to it).
MIN_WIDTH = 40


def resolve_width(out: TextIO, width: int | None = None) -> int:
    """The width to lay the report out for (module docstring)."""
    if width is not None:
        return max(width, MIN_WIDTH)
    columns = os.environ.get("COLUMNS", "").strip()
    if columns.isdigit() and int(columns) > 0:
        return max(int(columns), MIN_WIDTH)
    if hasattr(out, "isatty") and out.isatty():
        try:
            return max(os.get_terminal_size(out.fileno()).columns, MIN_WIDTH)
        except (OSError, ValueError, AttributeError):
            return PIPE_WIDTH
    return PIPE_WIDTH


_NUMBER = re.compile(r"[(\[]?[+-]?\d[\d.,:%-]*[)\]]?[,;:.)\]]*")
#: a number that closes a phrase counts the label before it (``no-evidence 48024,``)
_CLOSES = re.compile(r".*[,;:.)\]]")


def units(text: str) -> list[str]:
    """The words of ``text``, a number glued to the label it counts: to the word before
    it when it closes a phrase (``combos 72,``, ``(32)``, last word), else to the word
    after it (``18 in-scope``, ``(0 declared,``)."""
    words = [w for w in text.split(" ") if w]
    out: list[str] = []
    glue_next = False
    for index, word in enumerate(words):
        if glue_next:
            out[-1] += " " + word
            glue_next = False
        elif (
            _NUMBER.fullmatch(word) and out and (index == len(words) - 1 or _CLOSES.fullmatch(word))
        ):
            out[-1] += " " + word
        else:
            out.append(word)
            glue_next = bool(_NUMBER.fullmatch(word)) and index < len(words) - 1
    return out


def _fold(unit: str, room: int) -> list[str]:
    """``unit`` cut into pieces of at most ``room`` cells (a unit wider than a line)."""
    pieces: list[str] = []
    current = ""
    for char in unit:
        if current and cell_len(current + char) > room:
            pieces.append(current)
            current = ""
        current += char
    return [*pieces, current] if current else pieces


def wrap(parts: Iterable[str], width: int, indent: str = "", hang: str | None = None) -> list[str]:
    """``parts`` (units, joined by one space) wrapped greedily to ``width`` cells: the
    first line starts with ``indent``, the others with ``hang`` (default ``indent``)."""
    hang = indent if hang is None else hang
    lines: list[str] = []
    line = indent
    fresh = True  # nothing but the indent on ``line`` yet
    for unit in parts:
        candidate = line + unit if fresh else f"{line} {unit}"
        if cell_len(candidate.rstrip()) <= width:
            line, fresh = candidate, False
            continue
        if not fresh:
            lines.append(line.rstrip())
            line, fresh = hang, True
        if cell_len((line + unit).rstrip()) <= width:
            line, fresh = line + unit, False
            continue
        pieces = _fold(unit, max(width - cell_len(line), 1))
        lines += [line + piece for piece in pieces[:-1]]
        line = hang
        line, fresh = line + pieces[-1], False
    if not fresh or not lines:
        lines.append(line.rstrip())
    return lines


def wrap_text(text: str, width: int, indent: str = "", hang: str | None = None) -> list[str]:
    """:func:`wrap` of the :func:`units` of ``text``."""
    return wrap(units(text), width, indent, hang)


def table_room(columns: Sequence[Sequence[str]], width: int) -> int:
    """Cells left for the last column of a rich ``SIMPLE_HEAD`` table whose other
    columns hold ``columns`` (each: its header and cells): one space of edge and one
    of padding each side of every column, one space between columns."""
    used = sum(max(map(cell_len, cells), default=0) + 2 for cells in columns)
    return width - 2 - used - 2 - len(columns)
