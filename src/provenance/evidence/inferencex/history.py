"""The first-parent history of an InferenceX revision, and launcher text to compare.

Squash commits on the first-parent line carry their PR in the subject: ``... (#N)``
(optionally followed by ``[skip-sweep]``; reverts name two numbers, the last one
counts). ``refs/pull/N/head`` gives a PR's head commit when the repository has it.

:func:`launcher_content` is a launcher's text without its ``source
.../benchmark_lib.sh`` line (scripts moved to ``deprecated/`` get a longer relative
path) and comment lines, the text :mod:`~provenance.evidence.inferencex.content_trace` follows.
Every git call goes through :mod:`provenance.sources.git`.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass, field

from pydantic import BaseModel, ConfigDict

from provenance.errors import UsageError
from provenance.sources.git import (
    Repo,
    first_parent_log,
    ref_commit,
)

__all__ = [
    "History",
    "HistoryCommit",
    "first_parent_history",
    "launcher_content",
    "pr_head",
    "pr_of_subject",
    "require_pr_commit",
]

PR_SUBJECT = re.compile(r"\(#(\d+)\)(?:\s*\[skip-sweep\])?\s*$")
_SOURCE_LINE = re.compile(r"^\s*(?:source|\.)\s+.*benchmark_lib\.sh[\"']?\s*$")


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


def first_parent_history(repo: Repo, rev: str) -> History:
    """Every commit on the first-parent line of ``rev``, newest first (one ``git log``)."""
    commits = [
        HistoryCommit(
            sha=entry.sha,
            index=index,
            timestamp=entry.timestamp,
            subject=entry.subject,
            pr=pr_of_subject(entry.subject),
        )
        for index, entry in enumerate(first_parent_log(repo, rev))
    ]
    return History(commits=commits)


def launcher_content(data: bytes) -> bytes:
    """Launcher text for change detection: the ``benchmark_lib.sh`` source line, whole-line
    comments and blank lines dropped (editing a comment, e.g. a path it names when
    scripts are deprecated, changes nothing that runs)."""
    lines = (line.decode("utf-8", "replace") for line in data.split(b"\n"))
    kept = (
        line
        for line in lines
        if line.strip() and not line.lstrip().startswith("#") and not _SOURCE_LINE.match(line)
    )
    return "\n".join(kept).encode("utf-8")


def pr_head(repo: Repo, number: int) -> str | None:
    """The commit ``refs/pull/<N>/head`` points at, when the repository has the ref."""
    return ref_commit(repo, f"refs/pull/{number}/head")


def require_pr_commit(history: History, number: int, rev: str) -> HistoryCommit:
    commit = history.by_pr.get(number)
    if commit is None:
        raise UsageError(
            f"no commit with subject ending in (#{number}) on the first-parent history of {rev}"
        )
    return commit
