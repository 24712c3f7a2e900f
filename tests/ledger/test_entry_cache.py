"""Ledger entries remembered by file name and raw digest: the same entries as the full
parse, every changed byte or name parsed again (errors with file:line), a damaged or
foreign cache file worth nothing."""

from __future__ import annotations

import itertools
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from ledger_factories import PR, make_entry, make_record, make_sweep
from ledger_workspace import Workspace

import provenance
from provenance.errors import InputError
from provenance.model.ledger import EvalScore, LedgerEntry, PrRef
from provenance.store import entry_cache as entry_cache_module
from provenance.store.entry_cache import LOADER_MODULES, ParsedEntries, loader_version
from provenance.store.extraction_cache import source_closure
from provenance.store.ledger import Ledger
from provenance.store.local_cache import NO_CACHE_ENV, module_source

REPO_ROOT = Path(__file__).resolve().parents[2]
R1, R2 = ("sha256:" + c * 64 for c in "12")
OTHER = PrRef(repo="SemiAnalysisAI/InferenceX", number=2121)


def _cache_file(cache: Path) -> Path:
    return cache / "ledger-entries" / f"{loader_version()}.json"


def _cached_keys(cache: Path) -> set[str]:
    return set(json.loads(_cache_file(cache).read_bytes())["entries"])


def _filled(workspace: Workspace) -> list[LedgerEntry]:
    entries = [make_entry((R1,)), make_entry((R2,), pr=OTHER, sweeps=(make_sweep(),))]
    for entry in entries:
        workspace.ledger.write_entry(entry)
    return entries


def test_loader_modules_are_the_static_closure_of_the_ledger_dir() -> None:
    root = Path(provenance.__file__).parent
    closure = source_closure(root, "provenance", "provenance.store.ledger")
    assert set(LOADER_MODULES) == set(closure)
    assert {name: module_source(name) for name in LOADER_MODULES} == closure


def test_every_embedded_entry_from_the_cache_equals_its_full_parse(tmp_path: Path) -> None:
    ledger = Ledger(REPO_ROOT / "ledger")
    paths = ledger.entry_paths()
    assert len(paths) > 50
    full = ledger.entries()
    assert ledger.entries(ParsedEntries.open(tmp_path)) == full  # parses and remembers
    cached = ParsedEntries.open(tmp_path)
    for path, entry in zip(paths, full, strict=True):
        from_cache = cached.entry(path.name, path.read_bytes())
        assert from_cache is not None, path
        assert from_cache == entry == ledger.load_entry_file(path), path
        assert from_cache.model_dump() == entry.model_dump(), path
    assert ledger.entries(ParsedEntries.open(tmp_path)) == full


def test_first_load_parses_and_remembers_the_second_reads_the_cache(
    workspace: Workspace, tmp_path: Path
) -> None:
    entries = _filled(workspace)
    cache = tmp_path / "cache"
    assert workspace.ledger.entries(ParsedEntries.open(cache)) == entries
    names = [path.name for path in workspace.ledger.entry_paths()]
    assert {key.split()[0] for key in _cached_keys(cache)} == set(names)
    before = _cache_file(cache).stat().st_mtime_ns
    assert workspace.ledger.entries(ParsedEntries.open(cache)) == entries
    # nothing new parsed: the file is not rewritten
    assert _cache_file(cache).stat().st_mtime_ns == before
    assert os.listdir(cache / "ledger-entries") == [_cache_file(cache).name]


def test_a_changed_file_is_parsed_again(workspace: Workspace, tmp_path: Path) -> None:
    _filled(workspace)
    cache = tmp_path / "cache"
    workspace.ledger.entries(ParsedEntries.open(cache))
    path = workspace.ledger.path_of(PR)
    path.write_bytes(path.read_bytes().replace(b"FP8 indexer cache", b"FP8 indexer cachE"))
    entries = workspace.ledger.entries(ParsedEntries.open(cache))
    assert entries[0].title == "MiniMax-M3 NVFP4 B200: FP8 indexer cachE"
    assert entries == workspace.ledger.entries()
    assert len(_cached_keys(cache)) == 3  # the old bytes' entry is kept beside the new


@pytest.mark.parametrize(
    ("change", "message", "line"),
    [
        ((b"merged_at: 2026-10-02", b"merged_at: 2026-13-45"), "invalid YAML value", 11),
        ((b"title:", b"titel:"), "unknown key", 9),
        ((b"number: 2120", b"number: 2120\n  number: 2120"), "duplicate", 9),
    ],
)
def test_a_broken_file_is_refused_with_its_line(
    workspace: Workspace, tmp_path: Path, change: tuple[bytes, bytes], message: str, line: int
) -> None:
    _filled(workspace)
    cache = tmp_path / "cache"
    workspace.ledger.entries(ParsedEntries.open(cache))
    path = workspace.ledger.path_of(PR)
    path.write_bytes(path.read_bytes().replace(*change, 1))
    with pytest.raises(InputError, match=message) as caught:
        workspace.ledger.entries(ParsedEntries.open(cache))
    assert caught.value.location is not None
    assert caught.value.location.path == str(path)
    assert caught.value.location.line == line
    with pytest.raises(InputError, match=message):
        workspace.ledger.entries()


def test_remembered_bytes_under_another_name_are_refused(
    workspace: Workspace, tmp_path: Path
) -> None:
    _filled(workspace)
    cache = tmp_path / "cache"
    workspace.ledger.entries(ParsedEntries.open(cache))
    path = workspace.ledger.path_of(PR)
    path.rename(path.with_name("SemiAnalysisAI__InferenceX__9.yaml"))
    with pytest.raises(InputError, match="file name does not match") as caught:
        workspace.ledger.entries(ParsedEntries.open(cache))
    assert caught.value.location is not None and caught.value.location.line is not None


def _bad_key(document: dict[str, Any]) -> bytes:
    document["entries"]["a.yaml 12"] = "{}"
    return json.dumps(document).encode()


def _bad_value(document: dict[str, Any]) -> bytes:
    document["entries"][f"a.yaml {0:064x}"] = 1
    return json.dumps(document).encode()


def _foreign_format(document: dict[str, Any]) -> bytes:
    document["format"] = "provenance.ledger-entries/v0"
    return json.dumps(document).encode()


def _extra_field(document: dict[str, Any]) -> bytes:
    document["x"] = 1
    return json.dumps(document).encode()


def _entries_list(document: dict[str, Any]) -> bytes:
    document["entries"] = list(document["entries"].items())
    return json.dumps(document).encode()


def _too_deep(document: dict[str, Any]) -> bytes:
    text = json.dumps(document).encode()
    return text[:-1] + b', "x": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"


def _trailing(document: dict[str, Any]) -> bytes:
    return json.dumps(document).encode() + b"x"


def _utf16(document: dict[str, Any]) -> bytes:
    return json.dumps(document).encode("utf-16")


@pytest.mark.parametrize(
    "damage",
    [
        _bad_key,
        _bad_value,
        _foreign_format,
        _extra_field,
        _entries_list,
        _too_deep,
        _trailing,
        _utf16,
    ],
)
def test_a_malformed_cache_file_counts_as_empty(
    workspace: Workspace, tmp_path: Path, damage: Callable[[dict[str, Any]], bytes]
) -> None:
    entries = _filled(workspace)
    cache = tmp_path / "cache"
    workspace.ledger.entries(ParsedEntries.open(cache))
    good = _cached_keys(cache)
    path = _cache_file(cache)
    path.write_bytes(damage(json.loads(path.read_bytes())))
    reopened = ParsedEntries.open(cache)
    assert all(reopened._lookup(key) is None for key in good)
    # the next load parses everything and writes a good file again
    assert workspace.ledger.entries(reopened) == entries
    assert _cached_keys(cache) == good
    assert all(ParsedEntries.open(cache)._lookup(key) is not None for key in good)


def test_an_oversized_cache_file_counts_as_empty(
    workspace: Workspace, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _filled(workspace)
    cache = tmp_path / "cache"
    workspace.ledger.entries(ParsedEntries.open(cache))
    good = _cached_keys(cache)
    monkeypatch.setattr(entry_cache_module, "MAX_FILE_BYTES", _cache_file(cache).stat().st_size - 1)
    reopened = ParsedEntries.open(cache)
    assert all(reopened._lookup(key) is None for key in good)


def test_an_entry_the_cache_vouches_for_must_still_validate(
    workspace: Workspace, tmp_path: Path
) -> None:
    """A remembered text that is not a ledger entry falls back to the full parse."""
    entries = _filled(workspace)
    cache = tmp_path / "cache"
    workspace.ledger.entries(ParsedEntries.open(cache))
    path = _cache_file(cache)
    document = json.loads(path.read_bytes())
    document["entries"] = {key: '{"pr": "forged"}' for key in document["entries"]}
    path.write_text(json.dumps(document), encoding="utf-8")
    assert workspace.ledger.entries(ParsedEntries.open(cache)) == entries
    assert workspace.ledger.entries(ParsedEntries.open(cache)) == entries


def test_an_entry_json_cannot_reproduce_is_not_remembered(
    workspace: Workspace, tmp_path: Path
) -> None:
    """An infinity is written ``null`` by JSON: that entry is parsed every time."""
    sweep = make_sweep().model_copy(
        update={"evals": (EvalScore(name="x", low=float("-inf"), high=1, source="manual"),)}
    )
    entry = make_entry((R1,), sweeps=(sweep,))
    workspace.ledger.write_entry(entry)
    workspace.ledger.write_entry(make_entry((R2,), pr=OTHER))
    cache = tmp_path / "cache"
    assert workspace.ledger.entries(ParsedEntries.open(cache))[0] == entry
    assert {key.split()[0] for key in _cached_keys(cache)} == {f"{OTHER.file_stem}.yaml"}
    assert workspace.ledger.entries(ParsedEntries.open(cache))[0] == entry


def test_no_cache_reads_and_writes_nothing(
    workspace: Workspace, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    entries = _filled(workspace)
    monkeypatch.setenv(NO_CACHE_ENV, "1")
    cache = tmp_path / "cache"
    off = ParsedEntries.open(cache)
    assert off.path is None
    assert workspace.ledger.entries(off) == entries
    assert not cache.exists()


def test_default_location_follows_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PROVENANCE_CACHE_DIR", str(tmp_path / "here"))
    assert ParsedEntries.open().path == _cache_file(tmp_path / "here")


def test_an_unwritable_cache_costs_nothing_but_the_cache(
    workspace: Workspace, tmp_path: Path
) -> None:
    entries = _filled(workspace)
    blocked = tmp_path / "blocked"
    blocked.write_text("a file where the cache directory should be", encoding="utf-8")
    assert workspace.ledger.entries(ParsedEntries.open(blocked)) == entries
    assert workspace.ledger.entries(ParsedEntries.open(blocked)) == entries


def test_too_many_entries_keep_only_the_last_load(
    workspace: Workspace, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = tmp_path / "cache"
    path = _cache_file(cache)
    path.parent.mkdir(parents=True)
    old = {f"old{i}.yaml {i:064x}": "{}" for i in range(10)}
    path.write_text(json.dumps({"format": entry_cache_module.FORMAT, "entries": old}))
    monkeypatch.setattr(entry_cache_module, "MAX_ENTRIES", 11)
    _filled(workspace)
    workspace.ledger.entries(ParsedEntries.open(cache))
    names = {key.split()[0] for key in _cached_keys(cache)}
    assert names == {path.name for path in workspace.ledger.entry_paths()}


def test_the_version_changes_with_the_loading_code(monkeypatch: pytest.MonkeyPatch) -> None:
    before = loader_version()
    loader_version.cache_clear()
    monkeypatch.setattr(entry_cache_module, "LOADER_MODULES", LOADER_MODULES[:-1])
    try:
        assert loader_version() != before
    finally:
        loader_version.cache_clear()


def test_the_audit_loads_the_ledger_through_the_cache(
    workspace: Workspace, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from provenance.audit.normaliser import PolicyNormaliser
    from provenance.audit.pipeline import load_graph

    # the audit refuses an entry citing a record the store lacks, so store the cited ones
    ids = [workspace.store.put(make_record(i))[0] for i in range(2)]
    workspace.ledger.write_entry(make_entry((ids[0],)))
    workspace.ledger.write_entry(make_entry((ids[1],), pr=OTHER, sweeps=(make_sweep(),)))
    monkeypatch.setenv("PROVENANCE_CACHE_DIR", str(tmp_path / "cache"))
    load_graph(workspace.ledger_root, workspace.evidence_root, PolicyNormaliser())
    assert len(_cached_keys(tmp_path / "cache")) == 2


_text = st.text(alphabet=st.characters(codec="utf-8"), max_size=40)
_examples = itertools.count()


@settings(
    max_examples=int(os.environ.get("PROVENANCE_FUZZ_EXAMPLES", "100")),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(title=_text, notes=_text, low=st.floats(allow_nan=False), number=st.integers(1, 10**9))
def test_any_entry_reads_back_the_same_through_the_cache(
    tmp_path: Path, title: str, notes: str, low: float, number: int
) -> None:
    pr = PrRef(repo="o/r", number=number)
    sweep = make_sweep().model_copy(
        update={"evals": (EvalScore(name="x", low=low, high=1.5, source="manual"),)}
    )
    entry = make_entry((R1,), pr=pr, title=title, notes=notes, sweeps=(sweep,))
    root = tmp_path / f"ledger-{next(_examples)}"
    ledger = Ledger(root)
    ledger.prs_dir.mkdir(parents=True)
    ledger.write_entry(entry)
    cache = root / "cache"
    assert ledger.entries(ParsedEntries.open(cache)) == [entry]
    assert ledger.entries(ParsedEntries.open(cache)) == [entry] == ledger.entries()
