"""The extraction cache: a re-run reuses extractions, never serves stale or broken ones."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from inferencex_fixtures import RepoBuilder, toy_history

from provenance.cli.main import cli
from provenance.evidence.inferencex import ingest
from provenance.evidence.inferencex.ingest import IngestResult, extract
from provenance.ingest.inferencex import IngestOptions, IngestReport, ingest_inferencex
from provenance.store import extraction_cache as cache_module
from provenance.store.extraction_cache import ExtractionCache, source_digest

PRS = (1, 2, 3, 4)

Tree = dict[str, tuple[bytes, int, int]]


@pytest.fixture
def history(make_repo: Callable[[], RepoBuilder]) -> RepoBuilder:
    return toy_history(make_repo())


@pytest.fixture
def extractions(monkeypatch: pytest.MonkeyPatch) -> list[int | None]:
    """The PR (None: a whole revision) of every extraction actually run (the seam)."""
    calls: list[int | None] = []
    real = ingest._ingest_commit

    def counting(*args: Any) -> Any:
        calls.append(args[4])
        return real(*args)

    monkeypatch.setattr(ingest, "_ingest_commit", counting)
    return calls


def _options(repo: RepoBuilder, out: Path, cache: Path | None, **extra: Any) -> IngestOptions:
    return IngestOptions(
        repo=repo.root,
        ledger=out / "ledger",
        evidence=out / "evidence",
        cache_dir=cache,
        **({"jobs": 1} | extra),  # in process: the ``extractions`` seam sees every call
    )


def _tree(root: Path) -> Tree:
    """Every file under ``root``: bytes, inode and mtime (a rewrite changes the inode)."""
    found: Tree = {}
    for path in sorted(root.rglob("*")):
        if path.is_file() and path.name != ".lock":
            stat = path.stat()
            found[str(path.relative_to(root))] = (path.read_bytes(), stat.st_ino, stat.st_mtime_ns)
    return found


def _cache_files(cache: Path) -> list[Path]:
    return sorted((cache / "inferencex").rglob("*.json"))


def _same_result(one: IngestResult, two: IngestResult) -> None:
    assert one.records == two.records
    assert one.entries == two.entries
    assert one.summary == two.summary


@pytest.mark.parametrize("prs", [PRS, ()], ids=["pr-mode", "revision"])
def test_warm_cache_rerun_extracts_nothing_and_writes_nothing(
    history: RepoBuilder, tmp_path: Path, extractions: list[int | None], prs: tuple[int, ...]
) -> None:
    cache = tmp_path / "cache"
    first = ingest_inferencex(_options(history, tmp_path, cache, prs=prs))
    expected_runs = list(prs) if prs else [None]
    assert extractions == expected_runs
    assert first.extractions_cached == 0 and first.extractions_run == len(expected_runs)
    assert len(_cache_files(cache)) == len(expected_runs)
    before = _tree(tmp_path / "ledger") | _tree(tmp_path / "evidence")
    assert before

    second = ingest_inferencex(_options(history, tmp_path, cache, prs=prs))
    assert extractions == expected_runs  # no extraction ran again
    assert second.extractions_cached == len(expected_runs) and second.extractions_run == 0
    assert second.records_written == 0 and second.entries_written == []
    assert second.summary == first.summary
    # byte-identical, and no file rewritten (same inode and mtime)
    assert _tree(tmp_path / "ledger") | _tree(tmp_path / "evidence") == before


def test_cached_extraction_equals_a_fresh_one(history: RepoBuilder, tmp_path: Path) -> None:
    fresh = extract(history.root, "HEAD", None, None, list(PRS))
    cache = ExtractionCache(tmp_path / "cache")
    filled = extract(history.root, "HEAD", None, None, list(PRS), cache=cache)
    reused = extract(history.root, "HEAD", None, None, list(PRS), cache=cache)
    assert (cache.hits, cache.misses, cache.warnings) == (len(PRS), len(PRS), [])
    _same_result(fresh, filled)
    _same_result(fresh, reused)


def test_pr_head_ref_is_looked_up_again(history: RepoBuilder, tmp_path: Path) -> None:
    """``refs/pull/N/head`` is not part of any commit: a cached entry gets the current one."""
    cache = ExtractionCache(tmp_path / "cache")
    before = extract(history.root, "HEAD", None, None, [2], cache=cache)
    assert before.entries[0].pr_head is None
    head = history.repo.head.commit.hexsha
    history.repo.git.update_ref("refs/pull/2/head", head)
    after = extract(history.root, "HEAD", None, None, [2], cache=cache)
    assert cache.hits == 1
    _same_result(after, extract(history.root, "HEAD", None, None, [2]))
    assert after.entries[0].pr_head == head
    assert after.entries[0].sources[-1] == "refs/pull/2/head"


def test_filters_are_part_of_the_key(
    history: RepoBuilder, tmp_path: Path, extractions: list[int | None]
) -> None:
    cache = ExtractionCache(tmp_path / "cache")
    extract(history.root, "HEAD", None, None, [3], cache=cache)
    narrowed = extract(history.root, "HEAD", None, "toy-fp4-b300-dynamo-vllm", [3], cache=cache)
    other = extract(history.root, "HEAD", "other", None, [3], cache=cache)
    assert extractions == [3, 3, 3] and cache.hits == 0
    assert narrowed.records == [] and other.records == []


def test_another_extractor_version_invalidates(
    history: RepoBuilder,
    tmp_path: Path,
    extractions: list[int | None],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    cache = tmp_path / "cache"
    ingest_inferencex(_options(history, tmp_path, cache, prs=PRS))
    assert len(extractions) == len(PRS)
    monkeypatch.setattr(cache_module, "extractor_version", lambda: "0" * 64)
    report = ingest_inferencex(_options(history, tmp_path, cache, prs=PRS))
    assert len(extractions) == 2 * len(PRS)
    assert report.extractions_cached == 0 and report.records_written == 0
    assert len(_cache_files(cache)) == 2 * len(PRS)  # the old entries are never read again


def _package(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / "pkg" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def test_extractor_version_follows_the_source_of_every_imported_module(tmp_path: Path) -> None:
    _package(
        tmp_path,
        {
            "__init__.py": "",
            "main.py": "from pkg.a import f\nfrom . import rel\n\ndef g():\n    import pkg.lazy\n",
            "a.py": "import os\nfrom pkg.sub import deep\n",
            "rel.py": "",
            "lazy.py": "",
            "sub/__init__.py": "",
            "sub/deep.py": "",
            "unrelated.py": "",
        },
    )

    def digest() -> str:
        return source_digest(tmp_path / "pkg", "pkg", "pkg.main")

    seen = {digest()}
    for name in ("main.py", "a.py", "rel.py", "lazy.py", "sub/__init__.py", "sub/deep.py"):
        with (tmp_path / "pkg" / name).open("a", encoding="utf-8") as handle:
            handle.write("# changed\n")
        new = digest()
        assert new not in seen, name
        seen.add(new)
    (tmp_path / "pkg" / "unrelated.py").write_text("x = 1\n")
    assert digest() in seen


def test_the_real_extractor_version_covers_its_modules() -> None:
    import provenance

    root = Path(provenance.__file__).parent
    closure = cache_module.source_closure(root, "provenance", cache_module.EXTRACTOR_MODULE)
    for module in (
        "provenance.evidence.inferencex.blocks",
        "provenance.evidence.inferencex.changelog",
        "provenance.evidence.inferencex.history",
        "provenance.evidence.inferencex.scripts",
        "provenance.evidence.inferencex.srt_slurm",
        "provenance.model.record",
        "provenance.normalise.canonical",
        "provenance.safe_yaml",
    ):
        assert module in closure
    assert "provenance.audit" not in closure


def _tamper_record(data: bytes) -> bytes:
    payload = json.loads(data)
    payload["records"][0]["hardware"] = "h100"  # content changed, id kept
    return json.dumps(payload).encode()


def _other_commit(data: bytes) -> bytes:
    payload = json.loads(data)
    payload["summary"]["commits"] = ["0" * 40]
    return json.dumps(payload).encode()


CORRUPTIONS: dict[str, Callable[[bytes], bytes]] = {
    "truncated": lambda data: data[: len(data) // 2],
    "empty": lambda data: b"",
    "binary": lambda data: b"\xff\xfe\x00garbage",
    "not-an-object": lambda data: b"[]",
    "unknown-field": lambda data: data[:-1] + b',"extra":1}',
    "record-tampered": _tamper_record,
    "other-commit": _other_commit,
    "other-key": lambda data: data.replace(b'"key":"', b'"key":"0'),
}


@pytest.mark.parametrize("corrupt", sorted(CORRUPTIONS))
def test_a_corrupt_entry_is_ignored_with_a_warning(
    history: RepoBuilder,
    tmp_path: Path,
    extractions: list[int | None],
    corrupt: str,
) -> None:
    cache = tmp_path / "cache"
    clean = ingest_inferencex(_options(history, tmp_path / "clean", None, prs=PRS))
    ingest_inferencex(_options(history, tmp_path / "first", cache, prs=PRS))
    damaged = _cache_files(cache)[0]
    damaged.write_bytes(CORRUPTIONS[corrupt](damaged.read_bytes()))
    extractions.clear()

    report = ingest_inferencex(_options(history, tmp_path / "second", cache, prs=PRS))
    assert len(extractions) == 1  # only the damaged entry is extracted again
    assert report.extractions_cached == len(PRS) - 1 and report.extractions_run == 1
    [warning] = [w for w in report.summary.warnings if w.startswith("extraction cache:")]
    assert str(damaged) in warning and "ignored, extracting again" in warning
    # the result is what an uncached ingest gives
    assert _tree_bytes(tmp_path / "second") == _tree_bytes(tmp_path / "clean")
    assert _without_cache_warnings(report) == _without_cache_warnings(clean)
    # the entry was replaced: the next run reuses it
    again = ingest_inferencex(_options(history, tmp_path / "second", cache, prs=PRS))
    assert again.extractions_cached == len(PRS) and len(extractions) == 1


def _tree_bytes(root: Path) -> dict[str, bytes]:
    return {name: data for name, (data, _, _) in _tree(root).items()}


def _without_cache_warnings(report: IngestReport) -> dict[str, Any]:
    data = report.summary.model_dump()
    data["warnings"] = [w for w in data["warnings"] if not w.startswith("extraction cache:")]
    return data


def test_an_unwritable_cache_costs_only_the_cache(history: RepoBuilder, tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("x")
    report = ingest_inferencex(_options(history, tmp_path, blocker, prs=(1,)))
    assert report.records_written == 5 and report.entries_written == [1]
    assert any("cannot write" in w for w in report.summary.warnings)


def _cli(repo: RepoBuilder, out: Path, *extra: str) -> str:
    """``ingest inferencex`` of PRs #1 and #4 into ``out``."""
    dirs = ["--ledger", str(out / "ledger"), "--evidence", str(out / "evidence")]
    prs = ["--pr", "1", "--pr", "4", "--jobs", "1"]  # in process: the seam sees every call
    result = CliRunner().invoke(cli, ["ingest", "inferencex", str(repo.root), *dirs, *prs, *extra])
    assert result.exit_code == 0, result.output
    return result.stdout  # progress lines go to stderr


def test_cli_no_cache_and_cache_dir(
    history: RepoBuilder,
    tmp_path: Path,
    extractions: list[int | None],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    default = tmp_path / "env-cache"
    monkeypatch.setenv("PROVENANCE_CACHE_DIR", str(default))
    explicit = tmp_path / "explicit"

    first = _cli(history, tmp_path, "--no-cache", "--cache-dir", str(explicit))
    second = _cli(history, tmp_path, "--no-cache")
    assert extractions == [1, 4, 1, 4]
    assert not default.exists() and not explicit.exists()
    assert "extractions:" not in first and "(0 new, 6 already stored)" in second

    assert "extractions: 0 from the cache, 2 run" in _cli(history, tmp_path)
    assert len(_cache_files(default)) == 2
    assert "extractions: 2 from the cache, 0 run" in _cli(history, tmp_path)
    assert extractions == [1, 4, 1, 4, 1, 4]

    data = json.loads(_cli(history, tmp_path, "--cache-dir", str(explicit), "--format", "json"))
    assert (data["extractions_cached"], data["extractions_run"]) == (0, 2)
    assert len(_cache_files(explicit)) == 2
    assert os.environ["PROVENANCE_CACHE_DIR"] == str(default)
