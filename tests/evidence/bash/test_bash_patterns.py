"""Glob matching without backtracking agrees with fnmatch, and stays fast on hostile patterns."""

from __future__ import annotations

import fnmatch

from hypothesis import given, settings
from hypothesis import strategies as st

from provenance.evidence.bash.patterns import glob_match, remove_affix, substitute
from provenance.evidence.bash.values import Piece

ALPHABET = "ab/._-*?"


def unquoted(pattern: str) -> list[Piece]:
    return [Piece(pattern, quoted=False)]


@settings(max_examples=400)
@given(st.text(alphabet="ab/._-", max_size=12), st.text(alphabet=ALPHABET, max_size=8))
def test_glob_match_agrees_with_fnmatch(subject: str, pattern: str) -> None:
    assert glob_match(subject, unquoted(pattern)) == fnmatch.fnmatchcase(subject, pattern)


def test_bracket_classes_and_quoted_stars() -> None:
    assert glob_match("fp8", unquoted("fp[48]")) is True
    assert glob_match("fp6", unquoted("fp[!48]")) is True
    assert glob_match("a*b", [Piece("a", False), Piece("*", True), Piece("b", False)]) is True
    assert glob_match("axb", [Piece("a", False), Piece("*", True), Piece("b", False)]) is False


def test_hostile_pattern_is_fast() -> None:
    subject = "a" * 4000
    pattern = unquoted("*a" * 200 + "*b")
    assert glob_match(subject, pattern) is False
    assert remove_affix(subject, unquoted("*a*b"), "##") == subject


def test_affix_and_substitution() -> None:
    assert remove_affix("org/sub/Name", unquoted("*/"), "##") == "Name"
    assert remove_affix("org/sub/Name", unquoted("*/"), "#") == "sub/Name"
    assert remove_affix("a_b_c", unquoted("_*"), "%") == "a_b"
    assert remove_affix("a_b_c", unquoted("_*"), "%%") == "a"
    assert substitute("a/b/c", unquoted("/"), "--", "//") == "a--b--c"
    assert substitute("a/b/c", unquoted("/"), "--", "/") == "a--b/c"
    assert substitute("abc", unquoted("a"), "x", "/#") == "xbc"
    assert substitute("abc", unquoted("c"), "x", "/%") == "abx"
