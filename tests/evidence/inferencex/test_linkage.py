from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from inferencex_fixtures import RepoBuilder

from provenance.errors import InputError
from provenance.evidence.inferencex.blocks import key_blocks
from provenance.evidence.inferencex.changelog import (
    _changelog_chunk,
    changelog_entries,
    changelog_links,
    key_glob_matches,
)
from provenance.evidence.inferencex.history import (
    pr_of_subject,
)
from provenance.evidence.inferencex.snapshot import Snapshot, open_repo, resolve_commit

ENTRY = "key-{n}:\n  image: img:{v}\n  model: m\n"


def test_pr_subjects() -> None:
    assert pr_of_subject("Update tags (#2120)") == 2120
    assert pr_of_subject("Refresh (#2230) [skip-sweep]") == 2230
    assert pr_of_subject('Revert "x (#1837)" (#1857)') == 1857
    assert pr_of_subject("direct push") is None
    assert pr_of_subject("mentions (#12) in the middle") is None


def test_key_globs() -> None:
    assert key_glob_matches("dsr1*", "dsr1-fp4-b200-sglang")
    assert key_glob_matches("70b-fp8-*-vllm", "70b-fp8-h100-vllm")
    assert not key_glob_matches("70b-fp8-*-vllm", "70b-fp8-h100-vllm-mtp")
    assert not key_glob_matches("a.b", "axb")


def test_key_blocks_ignore_comments_and_location() -> None:
    one = "# header\na:\n  x: 1\n\n# comment about b\nb:\n  y: 2\n"
    two = "b:\n  y: 2\n# other\na:\n  # inline\n  x: 1\n"
    assert key_blocks(one) == key_blocks(two)
    assert key_blocks("a:\n  x: 2\n")["a"] != key_blocks(one)["a"]


def test_changelog_links(make_repo: Callable[[], RepoBuilder]) -> None:
    builder = make_repo()
    changelog = """\
- config-keys: [key-1, "key-*-mtp"]
  description: ["first"]
  pr-link: https://github.com/SemiAnalysisAI/InferenceX/pull/5
- config-keys: [key-2]
  description: ["bad link"]
  pr-link: https://github.com/SemiAnalysisAI/InferenceX/pull/XXX
"""
    builder.commit("changelog (#5)", {"perf-changelog.yaml": changelog})
    repo = open_repo(builder.root)
    snap = Snapshot(repo, resolve_commit(repo, "HEAD"))
    links, warnings = changelog_links(snap, ["key-1", "key-9-mtp", "key-2"])
    assert links == {5: {"key-1", "key-9-mtp"}}
    assert len(warnings) == 1 and "XXX" in warnings[0]


_KEY = st.from_regex(r"[a-z][a-z0-9-]{0,12}", fullmatch=True)
_VALUE = st.from_regex(r"[a-z0-9:./-]{1,12}", fullmatch=True)


@settings(deadline=None)
@given(st.dictionaries(_KEY, _VALUE, min_size=1, max_size=5), st.lists(st.booleans(), max_size=8))
def test_key_blocks_ignore_comment_noise(entries: dict[str, str], noise: list[bool]) -> None:
    plain = "".join(f"{k}:\n  image: {v}\n" for k, v in entries.items())
    lines = []
    for index, line in enumerate(plain.splitlines()):
        if index < len(noise):
            lines.append("  # note" if noise[index] else "")
        lines.append(line)
    assert key_blocks("\n".join(lines) + "\n") == key_blocks(plain)
    changed = dict(entries)
    first = next(iter(changed))
    changed[first] = changed[first] + "x"
    again = "".join(f"{k}:\n  image: {v}\n" for k, v in changed.items())
    assert key_blocks(again)[first] != key_blocks(plain)[first]


@settings(deadline=None)
@given(st.from_regex(r"[ab*-]{0,8}", fullmatch=True), st.from_regex(r"[ab-]{0,10}", fullmatch=True))
def test_key_globs_agree_with_a_reference_regex(pattern: str, key: str) -> None:
    import re

    reference = re.fullmatch(re.escape(pattern).replace(r"\*", ".*"), key) is not None
    assert key_glob_matches(pattern, key) == reference


# --- perf-changelog parsed item by item ---------------------------------------------------

_GLOB = st.sampled_from(["toy-*", '"*"', "a*b", "minimaxm3-fp4-*-vllm", '"*-vllm"', "'x*'"])
_PLAIN_TEXT_CHOICES = (
    '"plain"',
    "'single ''quoted'''",
    '"a && b, c: d"',
    '"- not an item"',
    "multi\n      line plain",
    "|\n      block\n      - still block",
    "!!str tagged",
    "[1, 2]",
)
# anchors, aliases and broken flow: the file is parsed whole (or refused) then
_TRICKY_TEXT_CHOICES = ('"colon: &anchor"', "&a value", "*a", "{bad: [")


@st.composite
def _changelog_item(draw: st.DrawFn) -> str:
    keys = draw(st.lists(_GLOB, min_size=0, max_size=3))
    lines = ["- config-keys:"]
    if draw(st.booleans()) and keys:
        lines[0] += " [" + ", ".join(keys) + "]"
    else:
        lines += [f"    - {k}" for k in keys] or ["    []"]
    # hypothesis favours 0 and the first choice: the plain texts come first
    text = draw(st.sampled_from([*_PLAIN_TEXT_CHOICES] * 2 + [*_TRICKY_TEXT_CHOICES]))
    lines += ["  description:", f"    - {text}"]
    if draw(st.booleans()):
        lines.append(f"  pr-link: https://github.com/o/r/pull/{draw(st.integers(1, 9))}")
    if draw(st.integers(0, 9)) == 9:
        lines.append("  pr-link: again")  # duplicate key
    if draw(st.integers(0, 5)) == 5:
        lines.insert(draw(st.integers(1, len(lines))), "# a comment at column 0")
    return "\n".join(lines) + "\n" + draw(st.sampled_from(["", "\n", "\n\n# note\n"]))


_HEAD = st.sampled_from(
    ["", "", "", "", "# header\n\n", "---\n", "key: value\n", "  indented\n", "\ufeff"]
)
_TAIL = st.sampled_from(["", "", "", "", "\n...\n", "\r\n"])


@st.composite
def _changelog_text(draw: st.DrawFn) -> str:
    """A few entries; now and then something at the top or the bottom that stops the split."""
    head, tail = draw(_HEAD), draw(_TAIL)
    return head + "".join(draw(st.lists(_changelog_item(), max_size=6))) + tail


@settings(deadline=None, max_examples=300)
@given(_changelog_text())
def test_changelog_item_by_item_equals_the_whole_file(text: str) -> None:
    """The split parse (memoised per item) gives what the whole-file parse gives, errors too."""
    raw = text.encode("utf-8")

    def outcome(split: bool) -> object:
        try:
            return changelog_entries(raw, split=split)
        except InputError as exc:
            return str(exc)

    assert outcome(True) == outcome(False)


def test_changelog_items_are_parsed_once_across_versions() -> None:
    """A new version of the file (one more entry) parses only the new entry."""
    old = "".join(
        f"- config-keys: [k{n}-*]\n  description: ['x']\n  pr-link: https://h/o/r/pull/{n}\n\n"
        for n in range(1, 30)
    )
    new = old + "- config-keys: [k30]\n  description: ['y']\n  pr-link: https://h/o/r/pull/30\n"
    first = changelog_entries(old.encode())
    before = _changelog_chunk.cache_info()
    second = changelog_entries(new.encode())
    after = _changelog_chunk.cache_info()
    assert (after.hits - before.hits, after.misses - before.misses) == (29, 1)
    assert second[:29] == first and second[29][1] == 117
    entry = second[29][0]
    assert entry is not None and entry.config_keys == ["k30"]
    assert changelog_entries(new.encode(), split=False) == second


@pytest.mark.corpus
@pytest.mark.slow
def test_changelog_item_by_item_on_every_real_version() -> None:
    """Every version of InferenceX's perf-changelog.yaml on the mirror's first-parent line."""
    mirror = Path(
        os.environ.get(
            "PROVENANCE_INFERENCEX",
            str(Path(__file__).resolve().parents[4] / ".mirror/SemiAnalysisAI+InferenceX/repo"),
        )
    )
    if not (mirror / "objects").is_dir():
        pytest.skip(f"InferenceX mirror not found at {mirror}")
    repo = open_repo(mirror)
    shas = repo.git.log("--format=%H", "--first-parent", "HEAD", "--", "perf-changelog.yaml")
    compared = 0
    for sha in shas.split()[::4]:
        raw = Snapshot(repo, repo.commit(sha)).read("perf-changelog.yaml")
        if raw is None:
            continue
        try:
            whole: object = changelog_entries(raw, split=False)
        except InputError as exc:
            whole = str(exc)
        try:
            split: object = changelog_entries(raw)
        except InputError as exc:
            split = str(exc)
        assert split == whole, sha
        compared += 1
    assert compared > 100
