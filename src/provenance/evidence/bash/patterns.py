"""Bash glob patterns (``case``, ``[[ x == p ]]``, ``${X#p}``) over expanded pieces.

Unquoted ``*``, ``?`` and ``[...]`` are pattern characters; quoted characters
match literally. Patterns are translated to an anchored Python regex (built
here from escaped literals and fixed fragments only). Extended globs are not
interpreted (they match literally) — documented limitation.
"""

from __future__ import annotations

import re

from provenance.evidence.bash.values import Piece


def pattern_regex(pieces: list[Piece]) -> str | None:
    """A regex source for the pattern, or ``None`` when it contains a hole."""
    chars: list[tuple[str, bool]] = []
    for piece in pieces:
        if not isinstance(piece.seg, str):
            return None
        chars.extend((ch, piece.quoted) for ch in piece.seg)
    out: list[str] = []
    i = 0
    while i < len(chars):
        ch, quoted = chars[i]
        if quoted:
            out.append(re.escape(ch))
        elif ch == "\\" and i + 1 < len(chars):
            out.append(re.escape(chars[i + 1][0]))
            i += 1
        elif ch == "*":
            out.append(".*")
        elif ch == "?":
            out.append(".")
        elif ch == "[":
            end = _bracket_end(chars, i)
            if end is None:
                out.append(re.escape(ch))
            else:
                body = "".join(c for c, _ in chars[i + 1 : end])
                negate = body[:1] in ("!", "^")
                if negate:
                    body = body[1:]
                escaped = "".join(re.escape(c) if c not in "-" else c for c in body)
                out.append(f"[{'^' if negate else ''}{escaped}]")
                i = end
        else:
            out.append(re.escape(ch))
        i += 1
    return "".join(out)


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


def glob_match(subject: str, pieces: list[Piece]) -> bool | None:
    source = pattern_regex(pieces)
    if source is None:
        return None
    try:
        return re.fullmatch(source, subject, flags=re.DOTALL) is not None
    except re.error:
        return None


def remove_affix(subject: str, pieces: list[Piece], op: str) -> str | None:
    """``${X#p}``, ``${X##p}``, ``${X%p}``, ``${X%%p}``."""
    source = pattern_regex(pieces)
    if source is None:
        return None
    try:
        compiled = re.compile(source, flags=re.DOTALL)
    except re.error:
        return None
    n = len(subject)
    if op in ("#", "##"):
        ends = range(0, n + 1) if op == "#" else range(n, -1, -1)
        for end in ends:
            if compiled.fullmatch(subject[:end]):
                return subject[end:]
        return subject
    starts = range(n, -1, -1) if op == "%" else range(0, n + 1)
    for start in starts:
        if compiled.fullmatch(subject[start:]):
            return subject[:start]
    return subject


def substitute(subject: str, pieces: list[Piece], replacement: str, op: str) -> str | None:
    """``${X/p/r}``, ``${X//p/r}``, ``${X/#p/r}``, ``${X/%p/r}`` (longest match)."""
    source = pattern_regex(pieces)
    if source is None:
        return None
    if source == "":
        return subject
    try:
        compiled = re.compile(source, flags=re.DOTALL)
    except re.error:
        return None
    n = len(subject)
    if op == "/#":
        for end in range(n, -1, -1):
            if compiled.fullmatch(subject[:end]):
                return replacement + subject[end:]
        return subject
    if op == "/%":
        for start in range(0, n + 1):
            if compiled.fullmatch(subject[start:]):
                return subject[:start] + replacement
        return subject
    out: list[str] = []
    i = 0
    replaced = False
    while i <= n:
        if replaced and op == "/":
            out.append(subject[i:])
            break
        match_end = None
        for end in range(n, i, -1):
            if compiled.fullmatch(subject[i:end]):
                match_end = end
                break
        if match_end is None:
            if i < n:
                out.append(subject[i])
            i += 1
            continue
        out.append(replacement)
        replaced = True
        i = match_end
    return "".join(out)
