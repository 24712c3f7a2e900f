"""One first-parent line read from git once, shared by every ``--pr`` commit of an ingest."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from provenance.evidence.inferencex.blocks import MasterState, master_states
from provenance.evidence.inferencex.history import (
    FileChange,
    History,
    first_parent_history,
    path_changes,
)
from provenance.sources.git import Repo


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

    repo: Repo
    history: History
    _changes: dict[tuple[str, ...], dict[str, list[FileChange]]] = field(default_factory=dict)
    _states: list[MasterState] | None = None

    @classmethod
    def of(cls, repo: Repo, tip: str) -> Lineage:
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
            self._states = master_states(self.repo, self.tip)
        return self._states
