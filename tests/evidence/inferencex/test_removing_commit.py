"""PathLog.removing_commit: which earlier commit took a path out of the tree."""

from __future__ import annotations

from provenance.evidence.inferencex.content_trace import PathLog
from provenance.evidence.inferencex.history import History, HistoryCommit
from provenance.sources.git import RawChange

ABSENT = "0" * 40
BLOB_A, BLOB_B = "a" * 40, "b" * 40


def _history(*subjects: str) -> History:
    return History(
        commits=[
            HistoryCommit(sha=f"c{i}", index=i, timestamp=0, subject=s, pr=i + 1)
            for i, s in enumerate(subjects)
        ]
    )


HISTORY = _history("newest (#1)", "middle (#2)", "oldest (#3)")


def _added(path: str, blob: str = BLOB_A) -> RawChange:
    return RawChange("A", path, ABSENT, blob)


def _deleted(path: str, blob: str = BLOB_A) -> RawChange:
    return RawChange("D", path, blob, ABSENT)


def test_deleted_path_names_the_deleting_commit() -> None:
    log = PathLog({}, [("c1", [_deleted("r.yaml")]), ("c2", [_added("r.yaml")])])
    found = log.removing_commit(HISTORY, "r.yaml")
    assert found is not None and found.sha == "c1"


def test_path_renamed_away_counts_as_removed() -> None:
    """Without rename detection a rename is the old path deleted, the new one added."""
    log = PathLog(
        {"new.yaml": BLOB_A},
        [("c0", [_deleted("r.yaml"), _added("new.yaml")]), ("c2", [_added("r.yaml")])],
    )
    found = log.removing_commit(HISTORY, "r.yaml")
    assert found is not None and found.sha == "c0"


def test_re_added_modified_or_never_present_path_is_not_removed() -> None:
    log = PathLog({"r.yaml": BLOB_A}, [("c0", [_added("r.yaml")]), ("c1", [_deleted("r.yaml")])])
    assert log.removing_commit(HISTORY, "r.yaml") is None
    assert log.removing_commit(HISTORY, "other.yaml") is None
    modified = PathLog({"r.yaml": BLOB_B}, [("c0", [RawChange("M", "r.yaml", BLOB_A, BLOB_B)])])
    assert modified.removing_commit(HISTORY, "r.yaml") is None


def test_changes_off_the_history_are_ignored() -> None:
    log = PathLog({}, [("elsewhere", [_deleted("r.yaml")]), ("c2", [_added("r.yaml")])])
    assert log.removing_commit(HISTORY, "r.yaml") is None


def test_commits_newer_than_the_history_are_passed_over() -> None:
    """At an older commit's history, a later deletion is not yet the path's removal."""
    older = History(commits=HISTORY.commits[1:])
    log = PathLog({}, [("c0", [_deleted("r.yaml")]), ("c2", [_added("r.yaml")])])
    assert log.removing_commit(older, "r.yaml") is None
    assert log.removing_commit(HISTORY, "r.yaml") is not None
