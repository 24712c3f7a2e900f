"""Bash glob patterns (``case``, ``[[ x == p ]]``, ``${X#p}``) over expanded pieces.

Unquoted ``*``, ``?`` and ``[...]`` are pattern characters; quoted characters
match literally. Extended globs are not interpreted (they match literally) —
documented limitation.

Matching never backtracks: the pattern is split at its ``*`` into segments of
fixed length (literals, ``?``, bracket classes), each compiled to a regex
*without quantifiers*; a full match anchors the first and last segment and
finds each middle segment at its leftmost position, which is exact for
star-only globs. So a hostile pattern cannot make matching exponential, and
prefix/suffix operations are bounded by :data:`MAX_SUBJECT` characters
(longer subjects are reported as not evaluable by returning ``None``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

from provenance.evidence.bash.values import Piece

MAX_SUBJECT: Final = 4096
MAX_PATTERN: Final = 1024


@dataclass(frozen=True)
class _Glob:
    segments: tuple[re.Pattern[str], ...]
    lengths: tuple[int, ...]
    starred: bool  # False: the pattern has no ``*`` (one segment, exact length)


def _chars(pieces: list[Piece]) -> list[tuple[str, bool]] | None:
    chars: list[tuple[str, bool]] = []
    for piece in pieces:
        if not isinstance(piece.seg, str):
            return None
        chars.extend((ch, piece.quoted) for ch in piece.seg)
    return chars


def compile_glob(pieces: list[Piece]) -> _Glob | None:
    """Compile a pattern; ``None`` when it has a hole or is too long."""
    chars = _chars(pieces)
    if chars is None or len(chars) > MAX_PATTERN:
        return None
    segments: list[list[str]] = [[]]
    lengths: list[int] = [0]
    i = 0
    while i < len(chars):
        ch, quoted = chars[i]
        if quoted:
            segments[-1].append(re.escape(ch))
        elif ch == "\\" and i + 1 < len(chars):
            segments[-1].append(re.escape(chars[i + 1][0]))
            i += 1
        elif ch == "*":
            segments.append([])
            lengths.append(0)
            i += 1
            continue
        elif ch == "?":
            segments[-1].append(".")
        elif ch == "[" and (end := _bracket_end(chars, i)) is not None:
            body = "".join(c for c, _ in chars[i + 1 : end])
            negate = body[:1] in ("!", "^")
            if negate:
                body = body[1:]
            escaped = "".join(c if c == "-" else re.escape(c) for c in body)
            segments[-1].append(f"[{'^' if negate else ''}{escaped}]")
            i = end
        else:
            segments[-1].append(re.escape(ch))
        lengths[-1] += 1
        i += 1
    try:
        compiled = tuple(re.compile("".join(seg), flags=re.DOTALL) for seg in segments)
    except re.error:
        return None
    return _Glob(segments=compiled, lengths=tuple(lengths), starred=len(segments) > 1)


def _bracket_end(chars: list[tuple[str, bool]], start: int) -> int | None:
    j = start + 1
    if j < len(chars) and chars[j][0] in ("!", "^"):
        j += 1
    if j < len(chars) and chars[j][0] == "]":
        j += 1
    while j < len(chars):
        if chars[j][0] == "]" and not chars[j][1]:
            return j
        j += 1
    return None


def _fullmatch(glob: _Glob, subject: str) -> bool:
    segments, lengths = glob.segments, glob.lengths
    if not glob.starred:
        return len(subject) == lengths[0] and segments[0].fullmatch(subject) is not None
    first, last = lengths[0], lengths[-1]
    if first + last > len(subject):
        return False
    if segments[0].fullmatch(subject[:first]) is None:
        return False
    end = len(subject) - last
    if segments[-1].fullmatch(subject[end:]) is None:
        return False
    pos = first
    for segment, length in zip(segments[1:-1], lengths[1:-1], strict=True):
        if length == 0:
            continue
        found = segment.search(subject, pos, end)
        if found is None:
            return False
        pos = found.start() + length
    return pos <= end


def glob_match(subject: str, pieces: list[Piece]) -> bool | None:
    glob = compile_glob(pieces)
    if glob is None or len(subject) > MAX_SUBJECT * 16:
        return None
    return _fullmatch(glob, subject)


def remove_affix(subject: str, pieces: list[Piece], op: str) -> str | None:
    """``${X#p}``, ``${X##p}``, ``${X%p}``, ``${X%%p}``; ``None`` when not evaluable."""
    glob = compile_glob(pieces)
    if glob is None or len(subject) > MAX_SUBJECT:
        return None
    n = len(subject)
    if op in ("#", "##"):
        ends = range(0, n + 1) if op == "#" else range(n, -1, -1)
        for end in ends:
            if _fullmatch(glob, subject[:end]):
                return subject[end:]
        return subject
    starts = range(n, -1, -1) if op == "%" else range(0, n + 1)
    for start in starts:
        if _fullmatch(glob, subject[start:]):
            return subject[:start]
    return subject


def substitute(subject: str, pieces: list[Piece], replacement: str, op: str) -> str | None:
    """``${X/p/r}``, ``${X//p/r}``, ``${X/#p/r}``, ``${X/%p/r}`` (longest match)."""
    glob = compile_glob(pieces)
    if glob is None or len(subject) > MAX_SUBJECT:
        return None
    if not pieces or all(p.seg == "" for p in pieces):
        return subject
    n = len(subject)
    if op == "/#":
        for end in range(n, -1, -1):
            if _fullmatch(glob, subject[:end]):
                return replacement + subject[end:]
        return subject
    if op == "/%":
        for start in range(0, n + 1):
            if _fullmatch(glob, subject[start:]):
                return subject[:start] + replacement
        return subject
    out: list[str] = []
    i = 0
    replaced = False
    budget = 200_000
    while i < n:
        if replaced and op == "/":
            out.append(subject[i:])
            break
        match_end = None
        for end in range(n, i, -1):
            budget -= 1
            if budget < 0:
                return None
            if _fullmatch(glob, subject[i:end]):
                match_end = end
                break
        if match_end is None:
            out.append(subject[i])
            i += 1
            continue
        out.append(replacement)
        replaced = True
        i = match_end
    return "".join(out)
