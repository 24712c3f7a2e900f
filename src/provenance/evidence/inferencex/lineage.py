"""One first-parent line read from git once, shared by every ``--pr`` commit of an ingest."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from provenance.evidence.inferencex.content_trace import PathLog
from provenance.evidence.inferencex.history import History, first_parent_history
from provenance.evidence.inferencex.master import is_master_path, master_roots
from provenance.sources.git import Repo


@dataclass
class Lineage:
    """The first-parent line of one tip revision, read from git once for every commit on it.

    The first-parent history of a commit on the line is the line from that commit
    on (same :class:`HistoryCommit` objects: indexes are positions on the tip's
    line, and only their order is ever compared). The path logs of the tip cover
    every older commit too, and :func:`~provenance.evidence.inferencex.content_trace.trace`
    undoes the commits newer than the history it is given, so one walk of each
    serves every ``--pr`` commit instead of one walk per commit.
    """

    repo: Repo
    history: History
    _logs: dict[tuple[str, ...], PathLog] = field(default_factory=dict)

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

    def file_log(self, roots: Iterable[str]) -> PathLog:
        """Every file under ``roots``: at the tip, and each first-parent change to them."""
        token = tuple(sorted(set(roots)))
        if token not in self._logs:
            self._logs[token] = PathLog.read(self.repo, self.tip, token, lambda _path: True)
        return self._logs[token]

    def master_log(self) -> PathLog:
        """The master-config files: at the tip, and each first-parent change to them."""
        token = ("<master>",)
        if token not in self._logs:
            self._logs[token] = PathLog.read(self.repo, self.tip, master_roots(), is_master_path)
        return self._logs[token]
