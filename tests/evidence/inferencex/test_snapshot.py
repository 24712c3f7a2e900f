from __future__ import annotations

from collections.abc import Callable

import git
import pytest
from inferencex_fixtures import RepoBuilder

from provenance.errors import UnsafeInputError
from provenance.evidence.inferencex.snapshot import (
    Snapshot,
    check_relative_path,
    open_repo,
    resolve_commit,
    tree_entry,
)


def _snapshot(builder: RepoBuilder) -> Snapshot:
    repo = open_repo(builder.root)
    return Snapshot(repo, resolve_commit(repo, "HEAD"))


@pytest.mark.parametrize("path", ["/etc/passwd", "../x.yaml", "a/../../x", "a/..", "", "a\\b"])
def test_escaping_paths_are_refused(path: str) -> None:
    with pytest.raises(UnsafeInputError):
        check_relative_path(path)


def test_reads_blobs_and_records_their_sha(make_repo: Callable[[], RepoBuilder]) -> None:
    builder = make_repo()
    builder.commit("one (#1)", {"a/b.txt": "hello\n"})
    snap = _snapshot(builder)
    assert snap.read("a/b.txt") == b"hello\n"
    assert snap.read("a/missing.txt") is None
    assert snap.read_blobs == {"a/b.txt": snap.blob_sha("a/b.txt")}
    assert snap.list_files("a", ".txt") == ["a/b.txt"]
    assert snap.is_file("a/b.txt") and not snap.is_file("a")


def test_symlinks_are_refused(make_repo: Callable[[], RepoBuilder]) -> None:
    builder = make_repo()
    builder.commit(
        "links (#1)",
        {"real/r.yaml": "a: 1\n", "link.yaml": "->/etc/passwd", "dir": "->real"},
    )
    snap = _snapshot(builder)
    with pytest.raises(UnsafeInputError, match="symlink"):
        snap.read("link.yaml")
    with pytest.raises(UnsafeInputError, match="symlink"):
        snap.read("dir/r.yaml")
    assert not snap.is_file("link.yaml")
    with pytest.raises(UnsafeInputError, match="symlink"):
        snap.list_files("dir")
    assert snap.list_files("real", ".yaml") == ["real/r.yaml"]


def test_symlinked_file_in_a_listing_is_refused(make_repo: Callable[[], RepoBuilder]) -> None:
    builder = make_repo()
    builder.commit("links (#1)", {"conf/a.yaml": "a: 1\n", "conf/b.yaml": "->/etc/passwd"})
    snap = _snapshot(builder)
    assert snap.list_files("conf", ".txt") == []
    with pytest.raises(UnsafeInputError, match=r"conf/b\.yaml"):
        snap.list_files("conf", ".yaml")


def test_bare_clone_works(make_repo: Callable[[], RepoBuilder], tmp_path: object) -> None:
    import git

    builder = make_repo()
    builder.commit("one (#1)", {"x.txt": "1\n"})
    bare = builder.root.parent / "bare.git"
    git.Repo.clone_from(str(builder.root), str(bare), bare=True)
    repo = open_repo(bare)
    snap = Snapshot(repo, resolve_commit(repo, "HEAD"))
    assert snap.read("x.txt") == b"1\n"


def _gitpython_entry(root: git.Tree, path: str) -> tuple[str, str, int, str] | None:
    try:
        entry = root / path
    except KeyError:
        return None
    return (entry.type, entry.hexsha, entry.mode, str(entry.path))


def _cached_entry(repo: git.Repo, root: git.Tree, path: str) -> tuple[str, str, int, str] | None:
    entry = tree_entry(repo, root, path)
    return None if entry is None else (str(entry.type), entry.hexsha, entry.mode, entry.path)


def test_tree_entry_equals_gitpython_lookups(make_repo: Callable[[], RepoBuilder]) -> None:
    """The cached tree walk finds what ``tree / path`` finds, across commits sharing trees."""
    builder = make_repo()
    builder.commit("one (#1)", {"a/b.txt": "1\n", "a/c/d.sh": "2\n", "top": "3\n", "ln": "->a"})
    builder.commit("two (#2)", {"a/c/d.sh": "changed\n", "e/f.yaml": "4\n"})
    repo = open_repo(builder.root)
    paths = [
        *("a", "a/b.txt", "a/c", "a/c/d.sh", "top", "ln", "e/f.yaml", "ln/b.txt"),
        *("missing", "a/missing", "top/x", "a/b.txt/x", "a//b.txt", "a/", "", "/a", "a/c/"),
    ]
    for rev in ("HEAD~1", "HEAD", "HEAD~1"):
        root = repo.commit(rev).tree
        for path in paths:
            assert _cached_entry(repo, root, path) == _gitpython_entry(root, path), (rev, path)
        snapshot = Snapshot(repo, repo.commit(rev))
        for path in paths[:8]:
            found = _gitpython_entry(root, path)
            assert snapshot.blob_sha(path) == (found[1] if found and found[0] == "blob" else None)
