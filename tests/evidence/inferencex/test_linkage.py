from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from inferencex_fixtures import RepoBuilder

from provenance.errors import InputError, UsageError
from provenance.evidence.inferencex.blocks import block_origins, entry_digest, key_blocks
from provenance.evidence.inferencex.changelog import (
    _changelog_chunk,
    changelog_entries,
    changelog_links,
    key_glob_matches,
)
from provenance.evidence.inferencex.history import (
    HistoryCommit,
    first_parent_history,
    last_content_change,
    launcher_content,
    path_changes,
    pr_head,
    pr_of_subject,
    require_pr_commit,
)
from provenance.evidence.inferencex.lineage import Lineage
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


def test_history_and_file_changes_follow_moves(make_repo: Callable[[], RepoBuilder]) -> None:
    builder = make_repo()
    body = "".join(f"echo step {i}\n" for i in range(30)) + "vllm serve m --tp 2\n"
    script = "source ../benchmark_lib.sh\n" + body
    moved = "source ../../benchmark_lib.sh\n" + body
    builder.commit("add launcher (#10)", {"benchmarks/fixed/s.sh": script})
    builder.commit("tune (#11)", {"benchmarks/fixed/s.sh": script + "# more\n"})
    builder.commit("unrelated (#12)", {"benchmarks/other.sh": "x\n"})
    builder.commit("no pr here", {"README": "x\n"})
    builder.commit(
        "deprecate (#13)",
        {"benchmarks/fixed/deprecated/s.sh": moved + "# more\n"},
        renames={"benchmarks/fixed/s.sh": "benchmarks/fixed/deprecated/s.sh"},
    )
    repo = open_repo(builder.root)
    history = first_parent_history(repo, "HEAD")
    assert [c.pr for c in history.commits] == [13, None, 12, 11, 10]
    assert history.by_pr[11].title == "tune"
    changes = path_changes(repo, "HEAD", ["benchmarks"])
    last, every = last_content_change(
        repo, history, changes, "benchmarks/fixed/deprecated/s.sh", normalise=launcher_content
    )
    assert last is not None and last.pr == 11
    assert [c.pr for c in every] == [11, 10]
    raw, _ = last_content_change(repo, history, changes, "benchmarks/fixed/deprecated/s.sh")
    assert raw is not None and raw.pr == 13
    with pytest.raises(UsageError):
        require_pr_commit(history, 99, "HEAD")
    assert pr_head(repo, 11) is None


def test_block_origins_ignore_archiving(make_repo: Callable[[], RepoBuilder]) -> None:
    builder = make_repo()
    builder.commit(
        "add (#1)",
        {"configs/nvidia-master.yaml": ENTRY.format(n=1, v=1) + ENTRY.format(n=2, v=1)},
    )
    builder.commit(
        "bump key-2 (#2)",
        {"configs/nvidia-master.yaml": ENTRY.format(n=1, v=1) + ENTRY.format(n=2, v=2)},
    )
    builder.commit(
        "archive key-1 (#3)",
        {
            "configs/nvidia-master.yaml": ENTRY.format(n=2, v=2),
            "configs/deprecated/old-master.yaml": "# archived\n" + ENTRY.format(n=1, v=1),
        },
    )
    builder.commit("add key-3 (#4)", {"configs/amd-master.yaml": ENTRY.format(n=3, v=1)})
    repo = open_repo(builder.root)
    history = first_parent_history(repo, "HEAD")
    one = entry_digest(ENTRY.format(n=1, v=1), "key-1")
    two = entry_digest(ENTRY.format(n=2, v=2), "key-2")
    three = entry_digest(ENTRY.format(n=3, v=1), "key-3")
    assert one and two and three
    found = block_origins(
        repo,
        "HEAD",
        history,
        [
            ("key-1", one, True),
            ("key-2", two, False),
            ("key-3", three, False),
            ("nope", "0", False),
        ],
    )
    origin = {k: (v.origin.pr if v.origin else None) for k, v in found.items()}
    assert origin == {
        ("key-1", one): 1,
        ("key-2", two): 2,
        ("key-3", three): 4,
        ("nope", "0"): None,
    }
    archived = found[("key-1", one)].archived_since
    assert archived is not None and archived.pr == 3
    assert found[("key-2", two)].archived_since is None


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


def _shas(found: tuple[HistoryCommit | None, list[HistoryCommit]]) -> list[str]:
    return [c.sha for c in found[1]]


def test_one_lineage_serves_every_commit_on_it(make_repo: Callable[[], RepoBuilder]) -> None:
    """History, file changes and master states of the tip == those read at each commit."""
    builder = make_repo()
    master = "configs/nvidia-master.yaml"
    launcher = "benchmarks/fixed/s.sh"
    builder.commit("add (#1)", {master: ENTRY.format(n=1, v=1), launcher: "vllm serve a\n"})
    builder.commit("tune (#2)", {launcher: "vllm serve b\n"})
    builder.commit("bump (#3)", {master: ENTRY.format(n=1, v=2) + ENTRY.format(n=2, v=1)})
    builder.commit(
        "archive (#4)",
        {master: ENTRY.format(n=2, v=1), "configs/deprecated/old.yaml": ENTRY.format(n=1, v=2)},
        renames={launcher: "benchmarks/fixed/deprecated/s.sh"},
    )
    builder.commit("retune (#5)", {"benchmarks/fixed/deprecated/s.sh": "vllm serve c\n"})
    builder.commit("back to 1 (#4)", {master: ENTRY.format(n=2, v=1) + ENTRY.format(n=1, v=1)})
    repo = open_repo(builder.root)
    lineage = Lineage.of(repo, resolve_commit(repo, "HEAD").hexsha)
    wanted = [
        (f"key-{n}", entry_digest(ENTRY.format(n=n, v=v), f"key-{n}") or "", archived)
        for n, v, archived in ((1, 1, False), (1, 2, True), (2, 1, False))
    ]
    for commit in lineage.history.commits:
        direct = first_parent_history(repo, commit.sha)
        shared = lineage.history_of(commit.sha)
        assert [(c.sha, c.pr) for c in shared.commits] == [(c.sha, c.pr) for c in direct.commits]
        assert {n: c.sha for n, c in shared.by_pr.items()} == {
            n: c.sha for n, c in direct.by_pr.items()
        }
        own_changes = path_changes(repo, commit.sha, ["benchmarks"])
        for path in (launcher, "benchmarks/fixed/deprecated/s.sh"):
            for normalise in (None, launcher_content):
                mine = last_content_change(
                    repo, shared, lineage.path_changes(["benchmarks"]), path, normalise=normalise
                )
                theirs = last_content_change(repo, direct, own_changes, path, normalise=normalise)
                assert _shas(mine) == _shas(theirs), (commit.pr, path)
        fast = block_origins(repo, commit.sha, shared, wanted, states=lineage.master_states())
        slow = block_origins(repo, commit.sha, direct, wanted)
        assert {
            k: (v.origin and v.origin.sha, v.archived_since and v.archived_since.sha)
            for k, v in fast.items()
        } == {
            k: (v.origin and v.origin.sha, v.archived_since and v.archived_since.sha)
            for k, v in slow.items()
        }
