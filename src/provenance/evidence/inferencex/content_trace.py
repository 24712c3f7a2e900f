"""Where a piece of content came from along the first-parent history, followed by content.

A record is determined by contents, not by paths: its master-config points (the
entry's image, model, runner, precision, framework and the search-space point)
and its launcher or srt-slurm recipe text. Each content has a *content key*
(:func:`point_key`, :func:`file_key`); :func:`trace` walks the first-parent
commits that touched the files holding such contents, newest first, and finds

* the **origin**: the newest commit at whose first parent the content exists
  nowhere under the roots — the merge that introduced what the record runs;
* the **moves**: commits where the content existed on both sides but in other
  places (a file renamed or moved, a directory renamed, an entry moved to another
  master config, to ``configs/deprecated`` or to another key). They changed
  nothing that ran.

One ``git ls-tree`` and one ``git log --raw`` per set of roots serve every commit
of an ingest (:class:`PathLog`, kept by
:class:`~provenance.evidence.inferencex.lineage.Lineage`); the same walk answers
which commit removed a path an entry names (:meth:`PathLog.removing_commit`).
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from provenance.errors import InputError
from provenance.evidence.inferencex.history import History, HistoryCommit, launcher_content
from provenance.evidence.inferencex.master import (
    DEPRECATED_MASTER_DIR,
    MasterEntry,
    MultiNodePoint,
    SingleNodePoint,
    TextFilter,
    file_entries,
)
from provenance.model.record import canonical_json
from provenance.safe_yaml import load_yaml_bytes
from provenance.sources.git import RawChange, Repo, first_parent_raw, read_object, tree_blobs

#: A content's location: (path, config key; "" for a whole file).
Place = tuple[str, str]
#: content key -> the config keys holding it in one file ("" for a whole file)
Contents = Mapping[str, frozenset[str]]
_ABSENT = "0" * 40
_WHOLE_FILE = frozenset({""})


@dataclass(frozen=True, slots=True)
class Move:
    """A commit that changed where a content lives, not the content."""

    commit: HistoryCommit
    before: frozenset[Place]
    after: frozenset[Place]


@dataclass(slots=True)
class Trace:
    """A content's origin (None when it predates the history read) and moves, newest first."""

    origin: HistoryCommit | None = None
    moves: list[Move] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class PathLog:
    """The files under some roots at a tip, and every first-parent change to them."""

    tip: dict[str, str]
    log: list[tuple[str, list[RawChange]]]

    @classmethod
    def read(
        cls, repo: Repo, tip: str, roots: Iterable[str], accept: Callable[[str], bool]
    ) -> PathLog:
        wanted = sorted(set(roots))
        state = {p: sha for p, sha in tree_blobs(repo, tip, wanted).items() if accept(p)}
        log = [
            (commit, [c for c in changes if accept(c.path)])
            for commit, changes in first_parent_raw(repo, tip, wanted)
        ]
        return cls(state, [(commit, changes) for commit, changes in log if changes])

    def removing_commit(self, history: History, path: str) -> HistoryCommit | None:
        """The commit of ``history`` that removed ``path``, when its newest change there is
        a removal (a rename away is one: the log has no rename detection).

        None when ``path`` never changed on ``history`` (never existed there) or its
        newest change there added or modified it. The commits of the log newer than
        ``history``'s first are not on it and are passed over.
        """
        for sha, changes in self.log:  # newest first
            commit = history.by_sha.get(sha)
            if commit is None:
                continue
            for change in changes:
                if change.path == path:
                    return commit if change.new_sha == _ABSENT else None
        return None


def trace(
    history: History,
    log: PathLog,
    contents: Callable[[str, str], Contents],
    wanted: Iterable[str],
) -> dict[str, Trace]:
    """Each wanted content key's :class:`Trace` along ``history`` (a line ``log`` covers).

    ``contents(path, blob)`` gives the content keys one file version holds. Commits
    of ``log`` newer than ``history``'s first commit are undone without a verdict;
    a content absent at that commit gets an empty trace.
    """
    pending = set(wanted)
    result = {key: Trace() for key in pending}
    state = dict(log.tip)
    places: dict[str, set[Place]] | None = None

    def holders(path: str, blob: str) -> Iterable[tuple[str, Place]]:
        for key, config_keys in contents(path, blob).items():
            if key in pending:
                yield from ((key, (path, config_key)) for config_key in config_keys)

    for sha, changes in log.log:
        commit = history.by_sha.get(sha)
        if commit is not None and places is None:
            places = {key: set() for key in pending}
            for path, blob in state.items():
                for key, place in holders(path, blob):
                    places[key].add(place)
            pending = {key for key in pending if places[key]}
        if places is not None:
            newer = {key: frozenset(places[key]) for key in pending}
        for change in changes:
            if places is not None:
                for key in pending:
                    places[key] = {p for p in places[key] if p[0] != change.path}
            if change.old_sha == _ABSENT:
                state.pop(change.path, None)
                continue
            state[change.path] = change.old_sha
            if places is not None:
                for key, place in holders(change.path, change.old_sha):
                    places[key].add(place)
        if commit is None or places is None:
            continue
        for key in sorted(pending):
            older = frozenset(places[key])
            if not older:
                result[key].origin = commit
                pending.discard(key)
            elif older != newer[key]:
                result[key].moves.append(Move(commit, older - newer[key], newer[key] - older))
        if not pending:
            break
    return result


# --- content keys ---------------------------------------------------------------------


def point_key(entry: MasterEntry, point: SingleNodePoint | MultiNodePoint) -> str:
    """The content key of one master-config point: what it makes the benchmark run.

    The entry's image, model, runner, precision, framework and shape, and the
    point itself (without its line). Not the config key's name, not the file.
    """
    content = {
        "image": entry.image,
        "model": entry.model,
        "model_prefix": entry.model_prefix,
        "runner": entry.runner,
        "precision": entry.precision,
        "framework": entry.framework,
        "multinode": entry.multinode,
        "disagg": entry.disagg,
        "point": point.model_dump(mode="json", exclude={"line"}),
    }
    return "point:" + hashlib.sha256(canonical_json(content)).hexdigest()


def file_key(path: str, blob: str, read: Callable[[], bytes]) -> str:
    """The content key of a launcher or recipe: what it makes the benchmark run.

    A launcher's text without its ``benchmark_lib.sh`` source line (whose relative
    path changes when moved) and comment lines; a YAML file's data (comments and
    formatting aside; its blob when it does not parse); any other file's blob.
    """
    if path.endswith(".sh"):
        return "sh:" + hashlib.sha256(launcher_content(read())).hexdigest()
    if path.endswith((".yaml", ".yml")):
        try:
            data = load_yaml_bytes(read(), path).data
            return "yaml:" + hashlib.sha256(canonical_json(data)).hexdigest()
        except (InputError, TypeError, ValueError):
            pass  # not YAML we can read (or not JSON-like): compare the bytes
    return "blob:" + blob


class _Kept(OrderedDict[tuple[str, ...], Contents]):
    """The most recently used ``kept`` content maps (shared by every commit of an ingest)."""

    def __init__(self, kept: int) -> None:
        super().__init__()
        self.kept = kept

    def remember(self, key: tuple[str, ...], build: Callable[[], Contents]) -> Contents:
        if key in self:
            self.move_to_end(key)
            return self[key]
        value = build()
        self[key] = value
        while len(self) > self.kept:
            self.popitem(last=False)
        return value


_FILES = _Kept(kept=8192)
_MASTERS = _Kept(kept=512)


def file_contents(repo: Repo) -> Callable[[str, str], Contents]:
    """``contents`` for :func:`trace` over launchers and recipes (each blob read once)."""

    def contents(path: str, blob: str) -> Contents:
        if not path.endswith((".sh", ".yaml", ".yml")):
            return {file_key(path, blob, bytes): _WHOLE_FILE}

        def build() -> Contents:
            key = file_key(path, blob, lambda: read_object(repo, bytes.fromhex(blob)))
            return {key: _WHOLE_FILE}

        return _FILES.remember((blob, path.rpartition(".")[2]), build)

    return contents


def master_contents(repo: Repo, prefixes: frozenset[str]) -> Callable[[str, str], Contents]:
    """``contents`` for :func:`trace` over master configs: point key → config keys.

    Only entries whose ``model-prefix`` is one of ``prefixes`` are parsed (a point
    key includes the prefix, so no other entry can hold a wanted point). A file or
    entry that does not parse holds no points.
    """
    token = tuple(sorted(prefixes))

    def keep(_key: str, prefix: str | None) -> bool:
        return prefix is None or prefix in prefixes

    prefilter: TextFilter = keep

    def contents(path: str, blob: str) -> Contents:
        def build() -> Contents:
            raw = read_object(repo, bytes.fromhex(blob))
            try:
                entries, _ = file_entries(
                    raw, path, blob, lambda _k, v: str(v.get("model-prefix")) in prefixes, prefilter
                )
            except InputError:
                return {}
            found: dict[str, set[str]] = {}
            for entry in entries:
                points: list[SingleNodePoint | MultiNodePoint] = [
                    *entry.single_points,
                    *entry.multi_points,
                ]
                for point in points:
                    found.setdefault(point_key(entry, point), set()).add(entry.key)
            return {key: frozenset(keys) for key, keys in found.items()}

        return _MASTERS.remember((blob, *token), build)

    return contents


def move_kind(move: Move) -> str:
    """``deprecated`` (into ``configs/deprecated`` or a ``deprecated/`` directory),
    ``renamed`` (another file or key name) or ``moved`` (same names in another
    directory, or a copy of the content added or dropped while another remains)."""

    def deprecated(place: Place) -> bool:
        path = place[0]
        return path.startswith(DEPRECATED_MASTER_DIR + "/") or "/deprecated/" in f"/{path}"

    if any(deprecated(p) for p in move.after) and not any(deprecated(p) for p in move.before):
        return "deprecated"
    if not move.before or not move.after:
        return "moved"  # a copy made elsewhere, or one of several copies dropped
    names_before = {(p.rpartition("/")[2], k) for p, k in move.before}
    names_after = {(p.rpartition("/")[2], k) for p, k in move.after}
    return "moved" if names_before == names_after else "renamed"
