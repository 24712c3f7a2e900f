"""Escaping of untrusted values for every output surface.

Flag values, PR titles, file paths and reasons come from pull requests. Before
they reach a reviewer they are made inert:

* :func:`terminal` — control characters (ANSI escape sequences, carriage
  returns, bells, …) become visible ``\\xNN`` escapes; newlines become ``\\n``;
* :func:`markdown_inline` — a value shown inside a markdown line or a GFM table
  cell (PR comment, job summary, citations): HTML and markdown metacharacters
  (``|`` included) are backslash-escaped or entity-encoded, ``@mentions`` and
  URL schemes (``://``) are broken with a word joiner so they notify no one and
  link nowhere, newlines are flattened;
* :func:`markdown_code` — a value shown as inline code: wrapped in a backtick
  fence longer than any backtick run inside it;
* :func:`markdown_cell_code` — inline code inside a GFM table cell: GFM splits a
  row on ``|`` before it reads code spans, so the pipes are escaped too.

Every markdown renderer writes untrusted values through these functions only
(``tests/security/test_sec_markdown.py`` renders each markdown surface with real
CommonMark + GFM renderers and a corpus of hostile values).
"""

from __future__ import annotations

import html
import re

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|~>])")
_MENTION = re.compile(r"@(?=[A-Za-z0-9])")
#: ``scheme://``: GFM's autolink extension (and linkify) turn it into a live link.
_URL = re.compile(r":/(?=/)")
_WORD_JOINER = "\u2060"


def _visible(char: str) -> str:
    return f"\\x{ord(char):02x}" if ord(char) < 0x100 else f"\\u{ord(char):04x}"


def terminal(value: object) -> str:
    """Text safe to print on a terminal: no escape sequences, no line breaks."""
    text = str(value).replace("\r\n", "\n").replace("\n", "\\n").replace("\t", " ")
    return _CONTROL.sub(lambda m: _visible(m.group()), text)


def markdown_inline(value: object) -> str:
    """Text safe inside a markdown paragraph or table cell."""
    text = terminal(value)
    text = html.escape(text, quote=True)
    text = _MD_SPECIAL.sub(r"\\\1", text)
    text = _URL.sub(":/" + _WORD_JOINER, text)
    return _MENTION.sub("@" + _WORD_JOINER, text)


def markdown_code(value: object) -> str:
    """Inline code span for ``value`` (flag names and values stay verbatim inside)."""
    text = terminal(value)
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") or not text.strip() else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def markdown_cell_code(value: object) -> str:
    """Inline code for ``value`` inside a GFM table cell (``|`` escaped, shown as ``|``)."""
    return markdown_code(value).replace("|", "\\|")


def markdown_block(value: object, info: str = "") -> str:
    """A fenced code block holding ``value`` line by line (control characters made
    visible, as :func:`terminal` does), fenced longer than any backtick run inside."""
    lines = [terminal(line) for line in str(value).split("\n")]
    if lines and lines[-1] == "":
        lines.pop()
    longest = max((len(run) for line in lines for run in re.findall(r"`+", line)), default=0)
    fence = "`" * max(3, longest + 1)
    return "\n".join([f"{fence}{terminal(info)}", *lines, fence])
