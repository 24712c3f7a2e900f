"""Keep secrets out of every message: ``redact`` removes tokens and ``Authorization`` values.

Every text that leaves :mod:`provenance.github` as an error message passes through
``redact`` with the token in use. Besides the exact token it removes anything shaped
like a GitHub token (``ghp_…``, ``github_pat_…``, ``gho_…``, ``ghs_…``, ``ghu_…``,
``ghr_…``) and the value of any ``Authorization`` header, so a token the process does
not know about (another variable, an echoed header) is not printed either.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

REDACTED = "[REDACTED]"

_TOKEN_SHAPES = re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9_]{6,}|github_pat_[A-Za-z0-9_]{6,})")
_AUTH_HEADER = re.compile(
    r"(?P<name>authorization['\"]?\s*[:=]\s*['\"]?)"
    r"(?:(?P<scheme>token|bearer|basic)\s+)?"
    r"[^\s'\",}]+",
    re.IGNORECASE,
)


def redact(text: str, secrets: Iterable[str | None] = ()) -> str:
    """``text`` with every given secret, token-shaped word and Authorization value removed."""
    for secret in secrets:
        if secret:
            text = text.replace(secret, REDACTED)
    text = _AUTH_HEADER.sub(_auth_replacement, text)
    return _TOKEN_SHAPES.sub(REDACTED, text)


def _auth_replacement(match: re.Match[str]) -> str:
    scheme = match["scheme"]
    return f"{match['name']}{scheme + ' ' if scheme else ''}{REDACTED}"
