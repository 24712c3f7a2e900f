"""removing_commit: which earlier commit took a path out of the tree."""

from __future__ import annotations

from provenance.evidence.inferencex.history import History, HistoryCommit, removing_commit
from provenance.sources.git import FileChange


def _history(*subjects: str) -> History:
    return History(
        commits=[
            HistoryCommit(sha=f"c{i}", index=i, timestamp=0, subject=s, pr=i + 1)
            for i, s in enumerate(subjects)
        ]
    )


HISTORY = _history("newest (#1)", "middle (#2)", "oldest (#3)")


def test_deleted_path_names_the_deleting_commit() -> None:
    changes = {"r.yaml": [FileChange("c1", "D", "r.yaml"), FileChange("c2", "A", "r.yaml")]}
    found = removing_commit(HISTORY, changes, "r.yaml")
    assert found is not None and found.sha == "c1"


def test_path_renamed_away_counts_as_removed() -> None:
    changes = {
        "new.yaml": [FileChange("c0", "R", "new.yaml", old="r.yaml")],
        "r.yaml": [FileChange("c2", "A", "r.yaml")],
    }
    found = removing_commit(HISTORY, changes, "r.yaml")
    assert found is not None and found.sha == "c0"


def test_re_added_or_never_present_path_is_not_removed() -> None:
    changes = {"r.yaml": [FileChange("c0", "A", "r.yaml"), FileChange("c1", "D", "r.yaml")]}
    assert removing_commit(HISTORY, changes, "r.yaml") is None
    assert removing_commit(HISTORY, changes, "other.yaml") is None


def test_changes_off_the_history_are_ignored() -> None:
    changes = {"r.yaml": [FileChange("elsewhere", "D", "r.yaml"), FileChange("c2", "A", "r.yaml")]}
    assert removing_commit(HISTORY, changes, "r.yaml") is None
