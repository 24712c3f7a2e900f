"""``redact`` removes tokens, token-shaped words and Authorization values from any text."""

from __future__ import annotations

import string

from hypothesis import assume, given
from hypothesis import strategies as st

from provenance.sources.redaction import REDACTED, redact

SENTINEL = "ghp_SENTINEL0123456789abcdefSENTINEL0123"


def test_exact_secret_is_removed() -> None:
    text = f"GET /repos failed with token {SENTINEL} (retrying {SENTINEL})"
    out = redact(text, [SENTINEL])
    assert SENTINEL not in out
    assert out.count(REDACTED) == 2


def test_unknown_token_shapes_are_removed() -> None:
    others = [
        "ghp_abcdefABCDEF0123456789abcdefABCDEF01",
        "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz",
        "gho_0123456789abcdefghij",
        "ghs_0123456789abcdefghij",
    ]
    out = redact("leaked: " + " and ".join(others))
    for token in others:
        assert token not in out


def test_authorization_header_values_are_removed() -> None:
    cases = [
        "Authorization: token s3cr3t-value",
        "authorization: Bearer s3cr3t-value",
        "{'Authorization': 'Basic s3cr3t-value'}",
        '"authorization": "s3cr3t-value"',
    ]
    for case in cases:
        out = redact(case)
        assert "s3cr3t-value" not in out, out
        assert REDACTED in out


def test_text_without_secrets_is_unchanged() -> None:
    text = "HTTP 404: Not Found for /repos/SemiAnalysisAI/InferenceX/pulls/2120"
    assert redact(text, [None, ""]) == text


_TOKEN_CHARS = string.ascii_letters + string.digits + "_"


@given(
    prefix=st.text(max_size=40),
    suffix=st.text(max_size=40),
    secret=st.text(alphabet=_TOKEN_CHARS, min_size=8, max_size=60),
)
def test_a_known_secret_never_survives(prefix: str, suffix: str, secret: str) -> None:
    assume(secret not in REDACTED)
    out = redact(f"{prefix}{secret}{suffix}", [secret])
    assert secret not in out
