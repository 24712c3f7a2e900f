"""Invisible and direction-changing characters are escaped the same way on every
human-facing output, through ``provenance.escaping``.

The round-3 red team found the HTML report showing a raw right-to-left override
(U+202E) taken from PR text: the page embedded its strings as JSON and the page's
script inserted them verbatim. Every output now shows such a character as a visible
``\\uNNNN`` (or ``\\xNN``) escape: bidi embeddings, overrides and isolates
(U+202A-202E, U+2066-2069), the marks U+200E/U+200F/U+061C, zero-width characters
(U+200B-200D, U+FEFF), tag characters (U+E0000-E007F), line/paragraph separators, and
C0/C1 controls. JSON output keeps the exact value (it is data).

Two payloads: the recipe's (a variant name and a flag value; YAML refuses C0/C1
controls, so only the invisible ones) and the evidence's (an InferenceX commit subject
— the PR title — and a launcher flag value, every class).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from click.testing import CliRunner
from sec_fixtures import m3_repo, reduced_recipes_root, strings_of

from provenance import escaping
from provenance.cli.main import cli

INVISIBLE = (
    "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"  # embeddings, overrides, isolates
    "\u200e\u200f\u061c"  # direction marks
    "\u200b\u200c\u200d\ufeff\u00ad\u2061\u2062\u2063\u2064"  # zero-width, invisible operators
    "\U000e0041\U000e007f"  # tag characters
    "\u2028\u2029"  # line and paragraph separators
)
CONTROLS = "\x01\x08\x0b\x0c\x1b\x7f\x80\x85\x9b\x9f"
RECIPE_VALUE = f"note{INVISIBLE}end"
VARIANT = f"nv{INVISIBLE}x"
EVIDENCE_VALUE = f"fp8{CONTROLS}{INVISIBLE}z"
TITLE = f"Evil {CONTROLS.replace(chr(0x0B), '').replace(chr(0x0C), '')}{INVISIBLE} title"

#: what must never appear raw on a human-facing surface (tab and newline are layout)
RAW = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u00ad\u061c\u200b-\u200f\u2028-\u202e\u2061-\u2064"
    "\u2066-\u2069\ufeff\U000e0000-\U000e007f]"
)


@dataclass
class Surfaces:
    shown: dict[str, str]
    json_report: str


def _invoke(args: list[str]) -> str:
    result = CliRunner().invoke(cli, args)
    assert result.exit_code in (0, 1), (args, result.output)
    return result.output


@pytest.fixture(scope="module")
def surfaces(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Surfaces]:
    tmp = tmp_path_factory.mktemp("invisible")
    recipes = reduced_recipes_root(
        tmp / "recipes", extra_args=["--hostile-note", RECIPE_VALUE], twin_variant=VARIANT
    )
    builder = m3_repo(tmp / "inferencex", f"{TITLE} (#66)", EVIDENCE_VALUE)
    dirs = ["--ledger", str(tmp / "ledger"), "--evidence", str(tmp / "evidence")]
    inputs = ["--recipes-root", str(recipes), *dirs]
    shown = {"ingest": _invoke(["ingest", "inferencex", str(builder.root), *dirs])}
    audit = ["audit", "MiniMaxAI/MiniMax-M3", *inputs]
    for fmt in ("text", "markdown", "sarif", "html"):
        shown[f"audit-{fmt}"] = _invoke([*audit, "--format", fmt])
    explain = ["explain", "MiniMaxAI/MiniMax-M3", *inputs, "--variant", VARIANT]
    shown["explain"] = _invoke([*explain, "--hardware", "b300", "--strategy", "single_node_tp"])
    shown["evidence-list"] = _invoke(["evidence", "list", *dirs])
    shown["verify"] = _invoke(["verify", *dirs])
    shown["cite"] = _invoke(["cite", "MiniMaxAI/MiniMax-M3", *inputs])
    shown["combos-table"] = _invoke(
        ["combos", "MiniMaxAI/MiniMax-M3", "--recipes-root", str(recipes), "--format", "table"]
    )
    shown["flags"] = _invoke(["flags", "--", "vllm", "serve", "m", "--x", EVIDENCE_VALUE])
    shown["graph-dot"] = _invoke(["graph", *dirs, "--format", "dot"])
    yield Surfaces(shown, _invoke([*audit, "--format", "json"]))


def test_json_keeps_the_exact_values(surfaces: Surfaces) -> None:
    strings = set(strings_of(json.loads(surfaces.json_report)))
    assert VARIANT in strings
    assert any(RECIPE_VALUE in s for s in strings)
    assert any(EVIDENCE_VALUE in s for s in strings)


@pytest.mark.parametrize(
    "name",
    [
        "ingest",
        "audit-text",
        "audit-markdown",
        "audit-sarif",
        "audit-html",
        "explain",
        "evidence-list",
        "verify",
        "cite",
        "combos-table",
        "flags",
        "graph-dot",
    ],
)
def test_no_invisible_or_control_character_is_shown_raw(surfaces: Surfaces, name: str) -> None:
    text = surfaces.shown[name]
    found = sorted({f"U+{ord(c):04X}" for c in RAW.findall(text)})
    assert not found, (name, found)


@pytest.mark.parametrize(
    "name", ["audit-text", "audit-markdown", "audit-sarif", "audit-html", "explain", "combos-table"]
)
def test_the_payload_is_shown_escaped(surfaces: Surfaces, name: str) -> None:
    """Guard: the surfaces above really carry the payload, as visible escapes."""
    text = surfaces.shown[name]
    # SARIF and the HTML page are JSON inside: their backslashes are doubled
    assert "u202e" in text and ("\\u202e" in text or "\\\\u202e" in text), name


def test_every_surface_escapes_the_same_way() -> None:
    """One module, one rule: the terminal, markdown, HTML and SARIF helpers show each
    character by the same visible escape."""
    for char in {*INVISIBLE, *CONTROLS}:
        shown = escaping.terminal(char)
        assert not RAW.search(shown) and shown.startswith("\\"), repr(char)
        assert escaping.html_text(char) == shown
        assert escaping.markdown_inline(char).replace("\\\\", "\\") == shown
        assert RAW.search(escaping.markdown_code(char)) is None


def test_the_escaped_class_is_every_control_and_format_character() -> None:
    """``escaping`` escapes exactly the controls (but newline and tab, which it flattens),
    the separators and the format characters :mod:`unicodedata` knows, but U+2060 (the
    word joiner markdown_inline inserts); a character a newer Unicode assigns elsewhere
    shows here first."""
    import sys
    import unicodedata

    missed, extra = [], []
    for code in range(sys.maxunicode + 1):
        char = chr(code)
        category = unicodedata.category(char)
        wanted = category in {"Cc", "Cf", "Zl", "Zp"} and char not in "\n\t\u2060"
        escaped = escaping.terminal(char) != char
        if wanted and not escaped:
            missed.append(f"U+{code:04X}")
        elif escaped and not wanted and category != "Cn" and char not in "\n\t":
            extra.append(f"U+{code:04X} {category}")
    assert not missed, missed
    assert not extra, extra
