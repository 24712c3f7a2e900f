"""Which merges of the first-parent line reverted which, read from their messages.

A merge R *reverts* an earlier merge C of the same line when

* its message says ``This reverts commit <C>`` (git's own revert text, kept in the
  squash message; a full or abbreviated SHA of a commit on the line, older than R),
* or its subject is git's ``Revert "<C's subject>"`` and the quoted subject ends with
  C's ``(#N)`` (a subject GitHub shortened with ``…`` names no number and is not
  matched by this rule),
* or its subject starts ``Revert #N`` (e.g. ``Revert #2127: contains …``).

A partial revert (``revert b200 portion of #1158``, ``revert to #1143 …``) matches none
of these and is not one. When R reverts a merge that itself was a revert of P, R
re-lands P. The messages come from one ``git log --grep`` of the line
(:func:`~provenance.sources.git.first_parent_messages`).

:func:`mark_reverts` writes what was found onto ledger entries (``reverted_by``,
``relanded_by``, ``reverts``); each fact names the reverting merge as its source.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from provenance.evidence.inferencex.history import History, HistoryCommit
from provenance.model.ledger import LedgerEntry, RevertLink
from provenance.sources.git import Repo, first_parent_messages

_REVERTS_COMMIT = re.compile(r"This reverts commit ([0-9a-f]{7,40})\b")
_QUOTED = re.compile(r'^Revert\s+"(?P<quoted>.*)"')
_QUOTED_PR = re.compile(r"\(#(\d+)\)(?:\s*\[[^\]]*\])*\s*$")
_REVERT_NUMBER = re.compile(r"^Revert\s+#(\d+)\b", re.IGNORECASE)


@dataclass
class Reverts:
    """What each merge of a line reverted: reverting SHA -> the reverted merges."""

    reverted: dict[str, list[HistoryCommit]] = field(default_factory=dict)
    commits: dict[str, HistoryCommit] = field(default_factory=dict)

    def reverted_by(self, sha: str) -> HistoryCommit | None:
        """The oldest merge that reverted ``sha``'s merge, if any."""
        found = [
            self.commits[r] for r, done in self.reverted.items() if any(c.sha == sha for c in done)
        ]
        return max(found, key=lambda c: c.index) if found else None


def reverted_targets(commit: HistoryCommit, message: str, history: History) -> list[HistoryCommit]:
    """The merges of ``history`` older than ``commit`` that ``commit`` reverts (see the
    module docstring), oldest last; empty when it reverts none."""
    older = [c for c in history.commits if c.index > commit.index]
    found: dict[str, HistoryCommit] = {}
    for short in _REVERTS_COMMIT.findall(message):
        for candidate in older:
            if candidate.sha.startswith(short):
                found.setdefault(candidate.sha, candidate)
                break
    numbers: list[int] = []
    quoted = _QUOTED.match(commit.subject)
    in_quotes = _QUOTED_PR.search(quoted["quoted"]) if quoted else None
    if in_quotes:
        numbers.append(int(in_quotes.group(1)))
    named = _REVERT_NUMBER.match(commit.subject)
    if named:
        numbers.append(int(named.group(1)))
    for number in numbers:
        target = next((c for c in older if c.pr == number), None)
        if target is not None:
            found.setdefault(target.sha, target)
    return sorted(found.values(), key=lambda c: c.index)


def find_reverts(history: History, messages: Mapping[str, str]) -> Reverts:
    """Every revert on ``history`` (``messages``: SHA -> message of candidate commits;
    commits absent from it are judged by their subject alone)."""
    result = Reverts()
    for commit in history.commits:
        if "revert" not in commit.subject.lower() and commit.sha not in messages:
            continue
        targets = reverted_targets(commit, messages.get(commit.sha, ""), history)
        if targets:
            result.reverted[commit.sha] = targets
            result.commits[commit.sha] = commit
    return result


def read_reverts(repo: Repo, history: History) -> Reverts:
    """:func:`find_reverts` over ``history`` with the messages read from git at its tip."""
    if not history.commits:
        return Reverts()
    messages = first_parent_messages(repo, history.commits[0].sha, "revert")
    return find_reverts(history, messages)


def link(commit: HistoryCommit) -> RevertLink:
    return RevertLink(
        pr=commit.pr, commit=commit.sha, merged_at=commit.date, source=f"git:{commit.sha}"
    )


def mark_reverts(
    entries: Iterable[LedgerEntry], history: History, reverts: Reverts
) -> list[LedgerEntry]:
    """``entries`` with ``reverted_by``, ``relanded_by`` and ``reverts`` set from
    ``reverts`` (an entry's merge: its ``merge_commit``, else its PR's merge on
    ``history``); the other fields untouched."""
    out = []
    for entry in entries:
        merge = history.by_sha.get(entry.merge_commit or "") or history.by_pr.get(entry.pr.number)
        if merge is None:
            out.append(entry)
            continue
        update: dict[str, object] = {}
        reverter = reverts.reverted_by(merge.sha)
        if reverter is not None:
            update["reverted_by"] = link(reverter)
            relander = reverts.reverted_by(reverter.sha)
            if relander is not None:
                update["relanded_by"] = link(relander)
        targets = reverts.reverted.get(merge.sha, [])
        if targets:
            update["reverts"] = tuple(link(c) for c in targets)
        out.append(entry.model_copy(update=update) if update else entry)
    return out
