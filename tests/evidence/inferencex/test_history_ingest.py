"""Whole-history ingest: planned, parallel, resumable, and incremental (``--since-ledger``)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from inferencex_fixtures import SCRIPT_MTP, TOY_SCRIPT, RepoBuilder, toy_history

from provenance.cli import ingest_inferencex as cli_ingest
from provenance.cli.main import cli
from provenance.errors import UsageError
from provenance.evidence.inferencex import ingest
from provenance.ingest.inferencex import IngestOptions, ingest_inferencex
from provenance.store.ledger import Ledger


@pytest.fixture
def history(make_repo: Callable[[], RepoBuilder]) -> RepoBuilder:
    return toy_history(make_repo())


def _options(repo: RepoBuilder, out: Path, **extra: Any) -> IngestOptions:
    return IngestOptions(
        repo=repo.root,
        ledger=out / "ledger",
        evidence=out / "evidence",
        cache_dir=out / "cache",
        **extra,
    )


def _store(out: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(out)): p.read_bytes()
        for folder in ("ledger", "evidence")
        for p in sorted((out / folder).rglob("*"))
        if p.is_file() and p.name != ".lock"
    }


def test_history_in_a_pool_equals_the_planned_prs_one_by_one(
    history: RepoBuilder, tmp_path: Path
) -> None:
    pooled = ingest_inferencex(_options(history, tmp_path / "a", vllm_history=True, jobs=2))
    assert pooled.planned == 4 and pooled.planned_without_pr == []
    assert pooled.extractions_run == 4 and pooled.manifest_written
    serial = ingest_inferencex(_options(history, tmp_path / "b", prs=(1, 2, 3, 4), jobs=1))
    assert pooled.summary == serial.summary
    a, b = _store(tmp_path / "a"), _store(tmp_path / "b")
    manifest = a.pop("ledger/manifest.yaml")
    assert a == b  # same records and entries whatever the pool's order
    assert history.repo.head.commit.hexsha.encode() in manifest


def test_an_interrupted_run_resumes_from_the_cache(
    history: RepoBuilder, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = ingest._ingest_commit
    seen: list[int | None] = []

    def dies_at_the_third(*args: Any) -> Any:
        seen.append(args[4])
        if len(seen) == 3:
            raise KeyboardInterrupt
        return real(*args)

    monkeypatch.setattr(ingest, "_ingest_commit", dies_at_the_third)
    with pytest.raises(KeyboardInterrupt):
        ingest_inferencex(_options(history, tmp_path, vllm_history=True, jobs=1))
    assert not (tmp_path / "ledger" / "manifest.yaml").exists()  # nothing claims completion
    seen.clear()
    monkeypatch.setattr(ingest, "_ingest_commit", real)
    resumed = ingest_inferencex(_options(history, tmp_path, vllm_history=True, jobs=1))
    assert (resumed.extractions_cached, resumed.extractions_run) == (2, 2)
    fresh = ingest_inferencex(_options(history, tmp_path / "fresh", vllm_history=True, jobs=1))
    assert _store(tmp_path) == _store(tmp_path / "fresh")
    assert fresh.summary == resumed.summary


def test_since_ledger_takes_only_newer_merges(history: RepoBuilder, tmp_path: Path) -> None:
    ingest_inferencex(_options(history, tmp_path, vllm_history=True, jobs=1))
    before = Ledger(tmp_path / "ledger").manifest()
    assert before is not None
    again = ingest_inferencex(_options(history, tmp_path, since_ledger=True))
    assert again.planned == 0 and not again.manifest_written and again.summary.commits == []

    tuned = SCRIPT_MTP.replace("--max-model-len", "--enforce-eager --max-model-len")
    head = history.commit("Eager toy (#10)", {TOY_SCRIPT: tuned})
    history.commit("Docs (#11)", {"README.md": "more\n"})
    new = ingest_inferencex(_options(history, tmp_path, since_ledger=True))
    assert new.since_revision == before.inferencex.revision
    assert new.planned == 1 and new.summary.commits == [head]
    assert new.entries_written == [10] and new.manifest_written
    after = Ledger(tmp_path / "ledger").manifest()
    assert after is not None and after.inferencex.revision == history.repo.head.commit.hexsha


def test_since_ledger_needs_a_manifest_on_the_line(history: RepoBuilder, tmp_path: Path) -> None:
    with pytest.raises(UsageError, match=r"no manifest\.yaml"):
        ingest_inferencex(_options(history, tmp_path, since_ledger=True))
    result = CliRunner().invoke(
        cli,
        [
            "ingest", "inferencex", str(history.root), "--since-ledger", "--pr", "1",
            "--ledger", str(tmp_path / "l"), "--evidence", str(tmp_path / "e"),
        ],
    )  # fmt: skip
    assert result.exit_code == 2 and "--pr cannot be combined" in result.output


def test_plain_progress_lines_without_a_terminal(
    history: RepoBuilder, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(cli_ingest, "PLAIN_PROGRESS_EVERY", 0.0)
    result = CliRunner().invoke(
        cli,
        [
            "ingest", "inferencex", str(history.root), "--vllm-history", "--jobs", "1",
            "--ledger", str(tmp_path / "l"), "--evidence", str(tmp_path / "e"),
            "--cache-dir", str(tmp_path / "c"),
        ],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "ingest: 4/4 #4 " in result.stderr
    assert "planned: 4 merge(s) changed vLLM evidence" in result.stdout
