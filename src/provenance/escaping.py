"""Escaping of untrusted values for every output surface.

Flag values, PR titles, file paths and reasons come from pull requests. Before
they reach a reviewer they are made inert:

* :func:`terminal` — control characters (ANSI escape sequences, carriage
  returns, bells, …) and invisible or direction-changing characters (bidi
  overrides and isolates, zero-width characters, tag characters) become visible
  ``\\xNN``/``\\uNNNN`` escapes; newlines become ``\\n``; every helper below
  starts from it, so each surface shows such a character the same way;
* :func:`html_text` — a value inside HTML (the HTML report's server-written
  sections, its title, and every string of its embedded data);
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

#: Every character that is invisible or changes how the text around it is drawn, shown
#: as a visible escape by :func:`terminal` (and so by every other helper): C0 and C1
#: controls but ``\n`` and ``\t`` (flattened first), the line and paragraph
#: separators (Zl, Zp) and every format character (Cf) of Unicode 15 — bidi embeddings,
#: overrides and isolates (U+202A-202E, U+2066-2069), the marks U+200E/U+200F/U+061C,
#: zero-width characters (U+200B-200D, U+FEFF), the soft hyphen, invisible operators,
#: tag characters (U+E0000-E007F) — except U+2060 WORD JOINER, which
#: :func:`markdown_inline` itself inserts to break mentions and links.
#: ``tests/security/test_sec_invisible.py`` checks the class against :mod:`unicodedata`.
_CONTROL = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u00ad\u0600-\u0605\u061c\u06dd\u070f"
    "\u0890\u0891\u08e2\u180e\u200b-\u200f\u2028-\u202e\u2061-\u2064\u2066-\u206f"
    "\ufeff\ufff9-\ufffb\U000110bd\U000110cd\U00013430-\U0001343f\U0001bca0-\U0001bca3"
    "\U0001d173-\U0001d17a\U000e0001\U000e0020-\U000e007f]"
)
_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|~>])")
_MENTION = re.compile(r"@(?=[A-Za-z0-9])")
#: ``scheme://``: GFM's autolink extension (and linkify) turn it into a live link.
_URL = re.compile(r":/(?=/)")
_WORD_JOINER = "\u2060"


def _visible(char: str) -> str:
    code = ord(char)
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def terminal(value: object) -> str:
    """Text safe to print on a terminal: no escape sequences, no line breaks."""
    text = str(value).replace("\r\n", "\n").replace("\n", "\\n").replace("\t", " ")
    return _CONTROL.sub(lambda m: _visible(m.group()), text)


def html_text(value: object) -> str:
    """Text safe as HTML element content or a quoted attribute value: :func:`terminal`,
    then ``& < > " '`` as entities."""
    return html.escape(terminal(value), quote=True)


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
