"""Which InferenceX PRs introduced or changed an evidence file or config key.

Three sources (spec §5):

* git history: squash commits on the first-parent line whose subject ends in
  ``(#N)`` (optionally followed by ``[skip-sweep]``; reverts name two numbers,
  the last one counts). One ``git log`` walk per file set, not per point.
* ``refs/pull/N/head`` when the repository has it (the PR head commit).
* ``perf-changelog.yaml`` entries: ``config-keys`` (globs, ``*`` only) →
  ``pr-link``.

"Changed" means changed *content*: a launcher whose only change is its
``source .../benchmark_lib.sh`` line (scripts moved to ``deprecated/`` get a
longer relative path) or a file moved unchanged is followed across the move,
not attributed to the move; a config key's entry is compared as text (comment
and blank lines ignored) wherever it lives, so archiving a key into
``configs/deprecated`` does not count as a change either.
"""

from __future__ import annotations

import datetime as dt
import fnmatch
import hashlib
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import git
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from provenance.errors import InputError, UsageError
from provenance.evidence.inferencex.master import (
    ACTIVE_MASTER_PATHS,
    DEPRECATED_MASTER_DIR,
    LEGACY_MASTER_PATHS,
)
from provenance.evidence.inferencex.snapshot import ParsedObjects, Snapshot
from provenance.safe_yaml import MAX_YAML_BYTES, load_yaml_bytes, load_yaml_text

PR_SUBJECT = re.compile(r"\(#(\d+)\)(?:\s*\[skip-sweep\])?\s*$")
PR_LINK = re.compile(r"/pull/(\d+)(?:/|$)")
PERF_CHANGELOG = "perf-changelog.yaml"
_SOURCE_LINE = re.compile(r"^\s*(?:source|\.)\s+\S*benchmark_lib\.sh")
_TOP_KEY = re.compile(r"^([^\s#'\"][^:#]*|'[^']*'|\"[^\"]*\"):\s*(?:#.*)?$")

Normaliser = Callable[[bytes], bytes]


def pr_of_subject(subject: str) -> int | None:
    """The PR number of a squash-commit subject (``... (#2120)``), else None."""
    match = PR_SUBJECT.search(subject)
    return int(match.group(1)) if match else None


class HistoryCommit(BaseModel):
    """A commit on the first-parent line of the ingested revision (index 0 = newest)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    sha: str
    index: int
    timestamp: int
    subject: str
    pr: int | None

    @property
    def date(self) -> dt.date:
        return dt.datetime.fromtimestamp(self.timestamp, tz=dt.UTC).date()

    @property
    def title(self) -> str:
        match = PR_SUBJECT.search(self.subject)
        return self.subject[: match.start()].rstrip() if match else self.subject


@dataclass
class History:
    """The first-parent history of one revision."""

    commits: list[HistoryCommit]
    by_sha: dict[str, HistoryCommit] = field(default_factory=dict)
    by_pr: dict[int, HistoryCommit] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for commit in self.commits:
            self.by_sha[commit.sha] = commit
            # Newest first: the first commit naming a PR is its latest squash.
            if commit.pr is not None and commit.pr not in self.by_pr:
                self.by_pr[commit.pr] = commit


def first_parent_history(repo: git.Repo, rev: str) -> History:
    """Every commit on the first-parent line of ``rev``, newest first (one ``git log``)."""
    # NUL-separated records: a subject may hold any other separator (\r, \u2028 …).
    out = repo.git.log("--first-parent", "-z", "--format=%H%x1f%ct%x1f%s", rev)
    commits = []
    for index, line in enumerate(item for item in out.split("\0") if item):
        sha, stamp, subject = line.split("\x1f", 2)
        commits.append(
            HistoryCommit(
                sha=sha,
                index=index,
                timestamp=int(stamp),
                subject=subject,
                pr=pr_of_subject(subject),
            )
        )
    return History(commits=commits)


@dataclass
class Lineage:
    """The first-parent line of one tip revision, read from git once for every commit on it.

    The first-parent history of a commit on the line is the line from that commit
    on (same :class:`HistoryCommit` objects: indexes are positions on the tip's
    line, and only their order is ever compared). :func:`path_changes` and the
    master-config states of the tip cover every older commit too, and their users
    skip commits that are not in the history they are given, so one walk of each
    serves every ``--pr`` commit instead of one walk per commit.
    """

    repo: git.Repo
    history: History
    _changes: dict[tuple[str, ...], dict[str, list[FileChange]]] = field(default_factory=dict)
    _states: list[MasterState] | None = None

    @classmethod
    def of(cls, repo: git.Repo, tip: str) -> Lineage:
        return cls(repo, first_parent_history(repo, tip))

    @property
    def tip(self) -> str:
        return self.history.commits[0].sha if self.history.commits else ""

    def history_of(self, sha: str) -> History:
        """The first-parent history of ``sha`` (a commit on this line)."""
        start = self.history.by_sha[sha].index  # the tip's history: index == position
        return History(commits=self.history.commits[start:])

    def path_changes(self, roots: Iterable[str]) -> dict[str, list[FileChange]]:
        token = tuple(sorted(set(roots)))
        if token not in self._changes:
            self._changes[token] = path_changes(self.repo, self.tip, token)
        return self._changes[token]

    def master_states(self) -> list[MasterState]:
        if self._states is None:
            self._states = _master_states(self.repo, self.tip)
        return self._states


class FileChange(BaseModel):
    """One first-parent commit's change to a path (``status`` A/M/D/R/C; ``old`` for R/C)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    commit: str
    status: str
    path: str
    old: str | None = None


def path_changes(repo: git.Repo, rev: str, roots: Iterable[str]) -> dict[str, list[FileChange]]:
    """Changes under ``roots`` along the first-parent line of ``rev``: path → changes, newest first.

    One ``git log --name-status -M`` walk for the whole file set; renames are
    indexed under their new path with ``old`` set.
    """
    wanted = sorted(set(roots))
    if not wanted:
        return {}
    out = repo.git.log("--first-parent", "--name-status", "-M", "--format=@@%H", rev, "--", *wanted)
    changes: dict[str, list[FileChange]] = {}
    commit = ""
    for line in out.split("\n"):
        if line.startswith("@@"):
            commit = line[2:].strip()
            continue
        if not line.strip():
            continue
        parts = line.split("\t")
        status = parts[0][:1]
        if status in {"R", "C"} and len(parts) == 3:
            change = FileChange(commit=commit, status=status, path=parts[2], old=parts[1])
        else:
            change = FileChange(commit=commit, status=status, path=parts[-1])
        changes.setdefault(change.path, []).append(change)
    return changes


def launcher_content(data: bytes) -> bytes:
    """Launcher text for change detection: the ``benchmark_lib.sh`` source line dropped."""
    lines = data.split(b"\n")
    return b"\n".join(
        line for line in lines if not _SOURCE_LINE.match(line.decode("utf-8", "replace"))
    )


def _blob(repo: git.Repo, sha: str, path: str) -> bytes | None:
    try:
        entry = repo.commit(sha).tree / path
    except KeyError:
        return None
    data: bytes = entry.data_stream.read()
    return data


def last_content_change(
    repo: git.Repo,
    history: History,
    changes: Mapping[str, list[FileChange]],
    path: str,
    *,
    normalise: Normaliser | None = None,
) -> tuple[HistoryCommit | None, list[HistoryCommit]]:
    """(newest commit that changed ``path``'s content, every commit that did, newest first).

    Follows renames; a rename or modification whose normalised content is
    unchanged (see :func:`launcher_content`) is not a content change.
    """
    norm = normalise or (lambda data: data)
    found: list[HistoryCommit] = []
    current = path
    floor = -1  # only changes older than this history index apply to ``current``
    while True:
        step = None
        for change in changes.get(current, []):
            commit = history.by_sha.get(change.commit)
            if commit is None or commit.index <= floor:
                continue
            step = (change, commit)
            break
        if step is None:
            break
        change, commit = step
        floor = commit.index
        if change.status == "D":
            break
        parent_path = change.old if change.status in {"R", "C"} and change.old else current
        if change.status == "A":
            found.append(commit)
            break
        parents = repo.commit(commit.sha).parents
        before = _blob(repo, parents[0].hexsha, parent_path) if parents else None
        after = _blob(repo, commit.sha, current)
        if before is None or after is None or norm(before) != norm(after):
            found.append(commit)
        current = parent_path
    return (found[0] if found else None), found


# --- config-key entries ---------------------------------------------------------------


def _master_files_at(tree: git.Tree) -> list[git.Blob]:
    blobs: list[git.Blob] = []
    for path in (*ACTIVE_MASTER_PATHS, *LEGACY_MASTER_PATHS):
        try:
            entry = tree / path
        except KeyError:
            continue
        if entry.type == "blob":
            blobs.append(entry)
    try:
        folder = tree / DEPRECATED_MASTER_DIR
    except KeyError:
        folder = None
    if folder is not None and folder.type == "tree":
        blobs.extend(b for b in folder if b.type == "blob" and b.name.endswith(".yaml"))
    return blobs


def key_blocks(text: str) -> dict[str, list[str]]:
    """Top-level key → hash of its entry text (comment and blank lines ignored)."""
    blocks: dict[str, list[str]] = {}
    key: str | None = None
    body: list[str] = []

    def flush() -> None:
        if key is not None:
            digest = hashlib.sha256("\n".join(body).encode("utf-8")).hexdigest()
            blocks.setdefault(key, []).append(digest)

    for line in text.splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        match = _TOP_KEY.match(line) if not line[0].isspace() else None
        if match:
            flush()
            key = match.group(1).strip("'\"")
            body = []
        else:
            body.append(line.rstrip())
    flush()
    return blocks


@dataclass
class _MasterVersion:
    """Entry digests of one commit's master configs: everywhere, and in archived files only."""

    anywhere: dict[str, set[str]]
    archived: dict[str, set[str]]


def _is_master_path(path: str) -> bool:
    if path in ACTIVE_MASTER_PATHS or path in LEGACY_MASTER_PATHS:
        return True
    folder, _, name = path.rpartition("/")
    return folder == DEPRECATED_MASTER_DIR and name.endswith(".yaml")


def _blob_blocks(data: bytes) -> dict[str, list[str]]:
    return key_blocks(data.decode("utf-8", "replace"))


#: Entry digests of master-config blobs, shared by every ``--pr`` commit of an ingest
#: (their master configs are mostly the same few hundred blobs).
_BLOCKS = ParsedObjects(_blob_blocks, kept=512)


@dataclass
class _KeyIndex:
    """Entry digests per master-config blob, read once per blob (see ``_BLOCKS``)."""

    repo: git.Repo
    versions: dict[tuple[tuple[str, str], ...], _MasterVersion] = field(default_factory=dict)

    def blocks(self, sha: str) -> dict[str, list[str]]:
        return _BLOCKS.get(self.repo, bytes.fromhex(sha))

    def version(self, state: Mapping[str, str]) -> _MasterVersion:
        token = tuple(sorted(state.items()))
        known = self.versions.get(token)
        if known is not None:
            return known
        version = _MasterVersion(anywhere={}, archived={})
        for path, sha in state.items():
            archived = path.startswith(DEPRECATED_MASTER_DIR + "/")
            for key, digests in self.blocks(sha).items():
                version.anywhere.setdefault(key, set()).update(digests)
                if archived:
                    version.archived.setdefault(key, set()).update(digests)
        self.versions = {token: version}  # consecutive states share one side
        return version


#: (commit, master files -> blob at it, ... at its first parent)
MasterState = tuple[str, dict[str, str], dict[str, str]]


def _master_states(repo: git.Repo, rev: str) -> list[MasterState]:
    """(commit, master files → blob at it, … at its first parent), newest first.

    One ``git log --raw`` walk: the state at ``rev`` is read from its tree, each
    older state by undoing the next commit's changes — no tree is read again.
    """
    state = {str(blob.path): str(blob.hexsha) for blob in _master_files_at(repo.commit(rev).tree)}
    out = repo.git.log(
        "--first-parent",
        "--raw",
        "--no-abbrev",
        "--no-renames",
        "--format=@@%H",
        rev,
        "--",
        *master_roots(),
    )
    states: list[MasterState] = []
    commit: str | None = None
    newer = dict(state)
    for line in [*out.split("\n"), "@@"]:
        if line.startswith("@@"):
            if commit is not None:
                states.append((commit, newer, dict(state)))
                newer = dict(state)
            commit = line[2:].strip() or None
            continue
        if not line.startswith(":"):
            continue
        meta, _, path = line.partition("\t")
        fields = meta.split()
        old_sha, status = fields[2], fields[4][:1]
        if not _is_master_path(path):
            continue
        if status == "A":
            state.pop(path, None)
        else:
            state[path] = old_sha
    return states


def changed_by(repo: git.Repo, sha: str) -> tuple[set[str], set[str]]:
    """(paths, config keys) commit ``sha`` changed relative to its first parent."""
    commit = repo.commit(sha)
    if not commit.parents:
        paths = set(repo.git.ls_tree("-r", "--name-only", sha).split("\n"))
        parent_state: dict[str, str] = {}
    else:
        parent = commit.parents[0]
        paths = set(
            repo.git.diff_tree(
                "--no-commit-id", "--name-only", "-r", "--no-renames", parent.hexsha, sha
            ).split("\n")
        )
        parent_state = {str(b.path): str(b.hexsha) for b in _master_files_at(parent.tree)}
    state = {str(b.path): str(b.hexsha) for b in _master_files_at(commit.tree)}
    index = _KeyIndex(repo)
    after, before = index.version(state).anywhere, index.version(parent_state).anywhere
    keys = {k for k in after.keys() | before.keys() if after.get(k) != before.get(k)}
    return paths, keys


def master_roots() -> list[str]:
    return [*ACTIVE_MASTER_PATHS, *LEGACY_MASTER_PATHS, DEPRECATED_MASTER_DIR]


class BlockOrigin(BaseModel):
    """Where a config entry's text came from along the first-parent history.

    ``origin``: the newest commit whose parent does not have this exact entry
    text anywhere (the change that made it). ``archived_since``: for an entry
    in ``configs/deprecated`` at the ingested revision, the commit that moved
    it there.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    origin: HistoryCommit | None = None
    archived_since: HistoryCommit | None = None


def entry_digest(text: str, key: str) -> str | None:
    """The digest :func:`block_origins` tracks for ``key``'s entry in one master file's text."""
    digests = key_blocks(text).get(key)
    return digests[0] if digests else None


def block_origins(
    repo: git.Repo,
    rev: str,
    history: History,
    wanted: Iterable[tuple[str, str, bool]],
    *,
    states: list[MasterState] | None = None,
) -> dict[tuple[str, str], BlockOrigin]:
    """For each (key, entry digest, archived?) at ``rev``: its :class:`BlockOrigin`.

    One walk over the first-parent commits that touched master configs,
    newest first, stopping when every entry's origin is found. Archiving an
    entry (moving its text to ``configs/deprecated``) does not change it.
    ``states``: the master-config states of a newer revision on the same line
    (:meth:`Lineage.master_states`); its commits not in ``history`` are skipped.
    """
    pending = {(key, digest): archived for key, digest, archived in wanted}
    result: dict[tuple[str, str], BlockOrigin] = {k: BlockOrigin() for k in pending}
    if not pending:
        return result
    index = _KeyIndex(repo)
    if states is None:
        states = _master_states(repo, rev)
    for sha, newer_state, older_state in states:
        commit = history.by_sha.get(sha)
        if commit is None:
            continue
        newer, older = index.version(newer_state), index.version(older_state)
        for (key, digest), archived in list(pending.items()):
            current = result[(key, digest)]
            if (
                archived
                and current.archived_since is None
                and digest in newer.archived.get(key, set())
                and digest not in older.archived.get(key, set())
            ):
                current = current.model_copy(update={"archived_since": commit})
            if digest not in newer.anywhere.get(key, set()):
                del pending[(key, digest)]  # not in the newest version: nothing to trace
            elif digest not in older.anywhere.get(key, set()):
                current = current.model_copy(update={"origin": commit})
                del pending[(key, digest)]
            result[(key, digest)] = current
        if not pending:
            break
    return result


# --- perf-changelog -------------------------------------------------------------------


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


def pr_head(repo: git.Repo, number: int) -> str | None:
    """The commit ``refs/pull/<N>/head`` points at, when the repository has the ref."""
    try:
        out = repo.git.rev_parse("--verify", "--quiet", f"refs/pull/{number}/head^{{commit}}")
    except git.GitCommandError:
        return None
    return out.strip() or None


def glob_filter(pattern: str | None) -> Callable[[str], bool]:
    if pattern is None:
        return lambda _key: True
    return lambda key: fnmatch.fnmatchcase(key, pattern)


def require_pr_commit(history: History, number: int, rev: str) -> HistoryCommit:
    commit = history.by_pr.get(number)
    if commit is None:
        raise UsageError(
            f"no commit with subject ending in (#{number}) on the first-parent history of {rev}"
        )
    return commit
