"""Proven record files remembered by raw digest: the same records as the full proof,
every changed byte proven again, a damaged or foreign cache file worth nothing."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from ledger_factories import make_record
from ledger_workspace import Workspace

import provenance
from provenance.errors import IntegrityError
from provenance.model.record import EvidenceRecord
from provenance.store import verified as verified_module
from provenance.store.evidence import EvidenceStore
from provenance.store.extraction_cache import source_closure
from provenance.store.local_cache import NO_CACHE_ENV, module_source
from provenance.store.verified import CHECKER_MODULES, VerifiedRecords, checker_version

REPO_ROOT = Path(__file__).resolve().parents[2]


def _filled(workspace: Workspace, count: int = 5) -> list[str]:
    return [workspace.store.put(make_record(i))[0] for i in range(count)]


def _cache_file(cache: Path) -> Path:
    return cache / "verified-records" / f"{checker_version()}.txt"


def test_checker_modules_are_the_static_closure_of_the_store() -> None:
    root = Path(provenance.__file__).parent
    closure = source_closure(root, "provenance", "provenance.store.evidence")
    assert set(CHECKER_MODULES) == set(closure)
    assert {name: module_source(name) for name in CHECKER_MODULES} == closure


def test_first_load_proves_and_remembers_the_second_only_hashes(
    workspace: Workspace, tmp_path: Path
) -> None:
    ids = _filled(workspace)
    cache = tmp_path / "cache"
    first = VerifiedRecords.open(cache)
    records = workspace.store.load_all(first)
    lines = _cache_file(cache).read_text(encoding="ascii").splitlines()
    assert len(lines) == len(ids)
    assert {line.split()[0] for line in lines} == {i.removeprefix("sha256:") for i in ids}
    second = VerifiedRecords.open(cache)
    assert all(second.known(*line.split()) for line in lines)
    assert workspace.store.load_all(VerifiedRecords.open(cache)) == records
    assert records == workspace.store.load_all()
    # nothing new proven: the file is not rewritten
    before = _cache_file(cache).stat().st_mtime_ns
    workspace.store.load_all(VerifiedRecords.open(cache))
    assert _cache_file(cache).stat().st_mtime_ns == before


def test_a_changed_byte_is_proven_again_and_refused(workspace: Workspace, tmp_path: Path) -> None:
    record_id = _filled(workspace, 2)[0]
    cache = tmp_path / "cache"
    workspace.store.load_all(VerifiedRecords.open(cache))
    path = workspace.store.path_of(record_id)
    data = json.loads(path.read_bytes())
    data["config_key"] = "forged"
    path.write_text(json.dumps(data, sort_keys=True, indent=2) + "\n", encoding="utf-8")
    with pytest.raises(IntegrityError, match="modified"):
        workspace.store.load_all(VerifiedRecords.open(cache))


def test_proven_bytes_under_another_name_are_refused(workspace: Workspace, tmp_path: Path) -> None:
    first, second = _filled(workspace, 2)
    cache = tmp_path / "cache"
    workspace.store.load_all(VerifiedRecords.open(cache))
    # the bytes of the first record under the name of the second: both pairs are known
    # apart, but not this one
    workspace.store.path_of(second).write_bytes(workspace.store.path_of(first).read_bytes())
    with pytest.raises(IntegrityError, match="does not match the file name"):
        workspace.store.load_all(VerifiedRecords.open(cache))


@pytest.mark.parametrize(
    "content",
    [
        b"not a pair\n",
        b"ab cd\n",
        ("0" * 64 + " " + "g" * 64 + "\n").encode(),
        b"\xff\xfe",
    ],
)
def test_a_malformed_cache_file_counts_as_empty(
    workspace: Workspace, tmp_path: Path, content: bytes
) -> None:
    _filled(workspace, 3)
    cache = tmp_path / "cache"
    workspace.store.load_all(VerifiedRecords.open(cache))
    path = _cache_file(cache)
    good = path.read_text(encoding="ascii").splitlines()
    path.write_bytes(path.read_bytes() + content)
    reopened = VerifiedRecords.open(cache)
    assert not any(reopened.known(*line.split()) for line in good)
    # the next load proves everything and writes a good file again
    assert len(workspace.store.load_all(reopened)) == 3
    assert len(path.read_text(encoding="ascii").splitlines()) == 3


def test_a_record_the_cache_vouches_for_must_still_validate(
    workspace: Workspace, tmp_path: Path
) -> None:
    """A pair in the cache only skips the hash: bytes that do not validate as a record
    with the id of their name fall back to the full proof, which names the problem."""
    record_id = _filled(workspace, 1)[0]
    path = workspace.store.path_of(record_id)
    path.write_bytes(b"[]")
    cache = tmp_path / "cache"
    vouched = VerifiedRecords(_cache_file(cache))
    vouched.proven(record_id.removeprefix("sha256:"), hashlib.sha256(b"[]").hexdigest())
    vouched.save()
    with pytest.raises(IntegrityError, match="not a JSON object"):
        workspace.store.load_all(VerifiedRecords.open(cache))


def test_no_cache_reads_and_writes_nothing(
    workspace: Workspace, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _filled(workspace, 2)
    monkeypatch.setenv(NO_CACHE_ENV, "1")
    cache = tmp_path / "cache"
    off = VerifiedRecords.open(cache)
    assert off.path is None
    assert len(workspace.store.load_all(off)) == 2
    assert not cache.exists()


def test_default_location_follows_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PROVENANCE_CACHE_DIR", str(tmp_path / "here"))
    assert VerifiedRecords.open().path == _cache_file(tmp_path / "here")


def test_an_unwritable_cache_costs_nothing_but_the_cache(
    workspace: Workspace, tmp_path: Path
) -> None:
    _filled(workspace, 2)
    blocked = tmp_path / "blocked"
    blocked.write_text("a file where the cache directory should be", encoding="utf-8")
    assert len(workspace.store.load_all(VerifiedRecords.open(blocked))) == 2


def test_too_many_pairs_keep_only_the_last_load(
    workspace: Workspace, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = tmp_path / "cache"
    path = _cache_file(cache)
    path.parent.mkdir(parents=True)
    old = [f"{i:064x} {i:064x}" for i in range(10)]
    path.write_text("".join(f"{line}\n" for line in old), encoding="ascii")
    monkeypatch.setattr(verified_module, "MAX_PAIRS", 11)
    ids = _filled(workspace, 3)
    workspace.store.load_all(VerifiedRecords.open(cache))
    kept = path.read_text(encoding="ascii").splitlines()
    assert {line.split()[0] for line in kept} == {i.removeprefix("sha256:") for i in ids}


def test_the_version_changes_with_the_checking_code(monkeypatch: pytest.MonkeyPatch) -> None:
    before = checker_version()
    checker_version.cache_clear()
    monkeypatch.setattr(verified_module, "CHECKER_MODULES", CHECKER_MODULES[:-1])
    try:
        assert checker_version() != before
    finally:
        checker_version.cache_clear()


def test_json_validation_equals_the_full_proof_on_the_embedded_store() -> None:
    """The fast path validates a record from its bytes; the full proof from the parsed
    dict: on every embedded record, both give the same record."""
    store = EvidenceStore(REPO_ROOT / "evidence")
    paths = store._record_paths()
    assert len(paths) > 1000
    for path in paths:
        raw = path.read_bytes()
        assert EvidenceRecord.model_validate_json(raw) == EvidenceRecord.model_validate(
            json.loads(raw)
        ), path


def test_cache_file_is_written_atomically_beside_nothing_else(
    workspace: Workspace, tmp_path: Path
) -> None:
    _filled(workspace, 2)
    cache = tmp_path / "cache"
    workspace.store.load_all(VerifiedRecords.open(cache))
    assert os.listdir(cache / "verified-records") == [f"{checker_version()}.txt"]


_HEX_PAIR = st.tuples(
    st.text(alphabet="0123456789abcdef", min_size=64, max_size=64),
    st.text(alphabet="0123456789abcdef", min_size=64, max_size=64),
).map(" ".join)


@given(st.lists(_HEX_PAIR, max_size=40, unique=True))
def test_the_file_format_round_trips(pairs: list[str]) -> None:
    outcomes = dict.fromkeys(sorted(pairs), True)
    assert VerifiedRecords.decode(VerifiedRecords.encode(outcomes)) == outcomes


@given(
    st.lists(_HEX_PAIR, min_size=1, max_size=10, unique=True),
    st.data(),
)
def test_any_foreign_byte_makes_the_file_worthless(pairs: list[str], data: st.DataObject) -> None:
    raw = bytearray(VerifiedRecords.encode(dict.fromkeys(pairs, True)))
    position = data.draw(st.integers(0, len(raw) - 1))
    hex_digits = set(b"0123456789abcdef")
    allowed = {raw[position]} | (hex_digits if raw[position] in hex_digits else set())
    raw[position] = data.draw(st.integers(0, 255).filter(lambda b: b not in allowed))
    assert VerifiedRecords.decode(bytes(raw)) is None


@pytest.mark.parametrize("cut", [1, 64, 129])
def test_a_truncated_file_is_worthless(cut: int) -> None:
    raw = VerifiedRecords.encode({f"{'a' * 64} {'b' * 64}": True, f"{'c' * 64} {'d' * 64}": True})
    assert VerifiedRecords.decode(raw[:-cut]) is None
