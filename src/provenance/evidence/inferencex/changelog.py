"""``perf-changelog.yaml``: which PRs re-swept which config keys.

Each entry names ``config-keys`` (globs, ``*`` only) and a ``pr-link``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from provenance.errors import InputError
from provenance.evidence.inferencex.snapshot import Snapshot
from provenance.safe_yaml import MAX_YAML_BYTES, load_yaml_bytes, load_yaml_text

PR_LINK = re.compile(r"/pull/(\d+)(?:/|$)")
PERF_CHANGELOG = "perf-changelog.yaml"


class _ChangelogEntry(BaseModel):
    model_config = ConfigDict(extra="ignore", populate_by_name=True)

    config_keys: list[str] = Field(alias="config-keys")
    pr_link: str | None = Field(default=None, alias="pr-link")


def key_glob_matches(pattern: str, key: str) -> bool:
    """InferenceX changelog globs: ``*`` is the only wildcard, matched against the whole key.

    Two-pointer matching without regexes: at most about ``len(pattern) * len(key)``
    steps for any pattern, so a hostile glob in ``perf-changelog.yaml`` cannot
    backtrack exponentially.
    """
    p = k = 0
    star = -1  # pattern position just after the last '*' seen
    mark = 0  # key position that '*' is currently stretched to
    while k < len(key):
        if p < len(pattern) and pattern[p] == "*":
            star, mark = p + 1, k
            p += 1
        elif p < len(pattern) and pattern[p] == key[k]:
            p += 1
            k += 1
        elif star >= 0:
            mark += 1
            p, k = star, mark
        else:
            return False
    return all(ch == "*" for ch in pattern[p:])


#: Where an anchor (``&name``) can stand: at a node's start — after the indentation,
#: ``- ``, ``? ``, ``: ``, a flow indicator or a tag. A file with one is not split into
#: items (an alias could then resolve in one item's text alone, and the whole file's
#: alias limits would no longer apply). ``&&`` inside a quoted description is no match.
_ANCHOR = re.compile(r"(?:^[ \t]*|[-?:][ \t]+|[\[{,][ \t]*|![^\s]*[ \t]+)&", re.MULTILINE)
#: Line breaks other than ``\n`` that YAML (1.1) knows: the file is not split on ``\n`` then.
_OTHER_BREAKS = re.compile("[\r\x85\u2028\u2029]")

#: A changelog entry, or None for an item that is no entry, and its line in the file.
ChangelogItem = tuple["_ChangelogEntry | None", int | None]


def _changelog_entry(item: Any) -> _ChangelogEntry | None:
    try:
        return _ChangelogEntry.model_validate(item)
    except ValidationError:
        return None


@lru_cache(maxsize=8192)
def _changelog_chunk(chunk: str) -> tuple[_ChangelogEntry | None, int | None] | None:
    """One top-level item's text parsed and validated (line relative to the chunk);
    None when the text alone is not a one-item sequence (the whole file decides then)."""
    try:
        loaded = load_yaml_text(chunk, PERF_CHANGELOG)
    except InputError:
        return None
    if not isinstance(loaded.data, list) or len(loaded.data) != 1:
        return None
    return _changelog_entry(loaded.data[0]), loaded.line_of((0,))


def _split_changelog(raw: bytes) -> list[ChangelogItem] | None:
    """The entries of ``perf-changelog.yaml`` parsed item by item, or None.

    ``perf-changelog.yaml`` only grows, and every PR's merge commit has its own
    blob of it: parsing each top-level item's text once (memoised by that text)
    instead of the whole file at every commit is what makes it cheap. Only a
    plain block sequence is split — every non-blank, non-comment line at column
    0 starts an item (``- ``), no anchors, ``\n`` line breaks, strict UTF-8 —
    and only when every item's text parses on its own as a one-item sequence.
    Otherwise None: the caller parses the whole file, so anything unusual
    (errors with their lines included) is exactly what the whole-file parse says.
    """
    if len(raw) > MAX_YAML_BYTES or raw.startswith(b"\xef\xbb\xbf"):
        return None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return None
    if _ANCHOR.search(text) or _OTHER_BREAKS.search(text):
        return None
    lines = text.split("\n")
    starts: list[int] = []
    for number, line in enumerate(lines):
        if line == "-" or line.startswith("- "):
            starts.append(number)
        elif line.strip() and not line.startswith(("#", " ")):
            return None
        elif not starts and line.strip() and not line.startswith("#"):
            return None  # indented text before the first item
    items: list[ChangelogItem] = []
    for index, start in enumerate(starts):
        end = starts[index + 1] if index + 1 < len(starts) else len(lines)
        parsed = _changelog_chunk("\n".join(lines[start:end]).rstrip("\n") + "\n")
        if parsed is None:
            return None
        entry, relative = parsed
        items.append((entry, None if relative is None else start + relative))
    return items


def changelog_entries(raw: bytes, *, split: bool = True) -> list[ChangelogItem]:
    """Every top-level item of ``perf-changelog.yaml`` (entry or None) with its line.

    InputError when the file is not valid YAML. Items are parsed one by one when
    the file allows it (:func:`_split_changelog`), else (or with ``split=False``)
    the whole file is parsed; both give the same result.
    """
    items = _split_changelog(raw) if split else None
    if items is not None:
        return items
    loaded = load_yaml_bytes(raw, PERF_CHANGELOG)
    items = loaded.data if isinstance(loaded.data, list) else []
    return [
        (_changelog_entry(item), loaded.line_of((position,))) for position, item in enumerate(items)
    ]


@lru_cache(maxsize=1 << 16)
def _glob_matches(pattern: str, key: str) -> bool:
    return key_glob_matches(pattern, key)


def changelog_links(
    snapshot: Snapshot, keys: Iterable[str]
) -> tuple[dict[int, set[str]], list[str]]:
    """PR number → the given keys its ``perf-changelog.yaml`` entries name; plus warnings."""
    wanted = sorted(set(keys))
    links: dict[int, set[str]] = {}
    warnings: list[str] = []
    raw = snapshot.read(PERF_CHANGELOG)
    if raw is None:
        return links, warnings
    try:
        items = snapshot.memo(("changelog", PERF_CHANGELOG), lambda: changelog_entries(raw))
    except InputError as exc:
        # A malformed changelog at one commit (real history has a duplicated key) costs
        # only the changelog links of that commit, not the whole ingest.
        warnings.append(f"{exc}; changelog links skipped at this commit")
        return links, warnings
    for entry, line in items:
        if entry is None:
            warnings.append(f"{PERF_CHANGELOG}:{line}: entry skipped")
            continue
        match = PR_LINK.search(entry.pr_link or "")
        if match is None:
            warnings.append(f"{PERF_CHANGELOG}:{line}: pr-link {entry.pr_link!r} names no PR")
            continue
        number = int(match.group(1))
        for pattern in entry.config_keys:
            for key in wanted:
                if _glob_matches(str(pattern), key):
                    links.setdefault(number, set()).add(key)
    return links, warnings
