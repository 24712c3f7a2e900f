from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from provenance.escaping import markdown_code, markdown_inline, terminal

HOSTILE = [
    "\x1b[31mred\x1b[0m",
    "line1\nline2\r\n",
    "<script>alert(1)</script>",
    "@octocat please merge",
    "`rm -rf /`",
    "<!-- provenance:audit -->",
    "[click](javascript:alert(1))",
    "| col | injection |",
]


def test_terminal_neutralises_escape_sequences_and_newlines() -> None:
    assert terminal("\x1b[31mred\x1b[0m") == "\\x1b[31mred\\x1b[0m"
    assert terminal("a\nb\r\nc") == "a\\nb\\nc"
    assert terminal("\u202eevil") == "\\u202eevil"


def test_markdown_inline_examples() -> None:
    assert markdown_inline("<script>") == "&lt;script&gt;"
    assert "@\u2060octocat" in markdown_inline("@octocat")
    assert markdown_inline("a|b") == "a\\|b"
    assert markdown_inline("<!-- provenance:audit -->").count("<") == 0


def test_markdown_code_examples() -> None:
    assert markdown_code("fp8") == "`fp8`"
    assert markdown_code("a`b") == "``a`b``"
    assert markdown_code("`x`") == "`` `x` ``"


@given(st.text())
def test_terminal_output_has_no_control_characters(value: str) -> None:
    out = terminal(value)
    assert not re.search(r"[\x00-\x1f\x7f-\x9f]", out)


@given(st.text())
def test_markdown_inline_is_inert(value: str) -> None:
    out = markdown_inline(value)
    assert "<" not in out and ">" not in out and "\n" not in out and "\r" not in out
    assert not re.search(r"@[A-Za-z0-9]", out)
    assert not re.search(r"(?<!\\)[`|\[\]]", out)


@given(st.text())
def test_markdown_code_fence_is_longer_than_any_inner_run(value: str) -> None:
    out = markdown_code(value)
    fence = re.match(r"`+", out)
    assert fence is not None
    inner = out[len(fence.group()) : -len(fence.group())]
    assert all(len(run) < len(fence.group()) for run in re.findall(r"`+", inner))
    assert "\n" not in out


def test_hostile_corpus_round() -> None:
    for value in HOSTILE:
        assert "\x1b" not in markdown_inline(value)
        assert "\n" not in markdown_code(value)


@given(st.text())
def test_markdown_block_cannot_be_closed_from_inside(text: str) -> None:
    from provenance.escaping import markdown_block

    block = markdown_block(text, "diff")
    lines = block.split("\n")
    fence = lines[0].removesuffix("diff")
    assert set(fence) == {"`"} and lines[-1] == fence
    assert all(fence not in line for line in lines[1:-1])
    assert not re.search(r"[\x00-\x08\x0b-\x1f\x7f]", block)


def test_markdown_block_keeps_lines() -> None:
    from provenance.escaping import markdown_block

    assert markdown_block("a\n```\nb\n", "diff") == "````diff\na\n```\nb\n````"
