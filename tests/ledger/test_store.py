"""The content-addressed evidence store: round trips, idempotence, tamper detection."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from ledger_factories import make_record
from ledger_workspace import Workspace

from provenance.errors import IntegrityError
from provenance.model.record import canonical_json
from provenance.store.evidence import (
    MAX_RECORD_BYTES,
    EvidenceStore,
    RecordNotFoundError,
    record_file_bytes,
)


def test_put_get_round_trip(workspace: Workspace) -> None:
    store = workspace.store
    record = make_record(0)
    record_id, written = store.put(record)
    assert written
    assert record_id == record.compute_id()
    path = store.path_of(record_id)
    digest = record_id.removeprefix("sha256:")
    assert path == workspace.evidence_root / digest[:2] / f"{digest[2:]}.json"
    assert store.get(record_id) == record.with_id()
    assert store.ids() == [record_id]
    assert list(store.iter_records()) == [record.with_id()]
    assert record_id in store
    # pretty canonical JSON including the id
    data = json.loads(path.read_bytes())
    assert data["id"] == record_id
    assert path.read_bytes() == record_file_bytes(record.with_id())


def test_put_is_idempotent(workspace: Workspace) -> None:
    store = workspace.store
    first = store.put(make_record(1))
    before = store.path_of(first[0]).stat().st_mtime_ns
    assert store.put(make_record(1)) == (first[0], False)
    assert store.put(make_record(1).with_id()) == (first[0], False)
    assert store.path_of(first[0]).stat().st_mtime_ns == before
    assert len(store.ids()) == 1


def test_put_repairs_a_damaged_file(workspace: Workspace) -> None:
    store = workspace.store
    record_id, _ = store.put(make_record(2))
    store.path_of(record_id).write_text("{}")
    assert store.put(make_record(2)) == (record_id, True)
    assert store.get(record_id) == make_record(2).with_id()


def test_get_detects_a_modified_value(workspace: Workspace) -> None:
    store = workspace.store
    record_id, _ = store.put(make_record(3))
    path = store.path_of(record_id)
    text = path.read_text().replace('"kv_cache_dtype": "fp8"', '"kv_cache_dtype": "auto"')
    path.write_text(text)
    with pytest.raises(IntegrityError, match="modified"):
        store.get(record_id)
    with pytest.raises(IntegrityError, match="modified"):
        store.load_all()
    with pytest.raises(IntegrityError, match="modified"):
        list(store.iter_records())
    check = store.check_file(path)
    assert not check.ok


def test_get_detects_a_renamed_file(workspace: Workspace) -> None:
    store = workspace.store
    record_id, _ = store.put(make_record(4))
    other_id = "sha256:" + "0" * 64
    target = store.path_of(other_id)
    target.parent.mkdir(parents=True, exist_ok=True)
    store.path_of(record_id).rename(target)
    with pytest.raises(IntegrityError, match="does not match the file name"):
        store.get(other_id)
    with pytest.raises(RecordNotFoundError):
        store.get(record_id)


def test_id_field_rewritten_to_match_name_is_still_caught(workspace: Workspace) -> None:
    store = workspace.store
    record_id, _ = store.put(make_record(5))
    forged_id = "sha256:" + "f" * 64
    data = json.loads(store.path_of(record_id).read_bytes())
    data["id"] = forged_id
    target = store.path_of(forged_id)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(data))
    with pytest.raises(IntegrityError, match="hashes to"):
        store.get(forged_id)


@pytest.mark.parametrize(
    "content",
    [
        b"",
        b"not json",
        b"[1, 2]",
        b'{"id": 1}',
        b"\xff\xfe",
        b"[" * 100_000 + b"]" * 100_000,
        b'{"id": ' + b"9" * 10_000 + b"}",
        b" " * (MAX_RECORD_BYTES + 1),
    ],
    ids=["empty", "text", "list", "bad-id", "utf16", "deep", "huge-int", "oversized"],
)
def test_garbage_files_are_integrity_errors(workspace: Workspace, content: bytes) -> None:
    store = workspace.store
    record_id = "sha256:" + "a" * 64
    path = store.path_of(record_id)
    path.parent.mkdir(parents=True)
    path.write_bytes(content)
    with pytest.raises(IntegrityError):
        store.get(record_id)
    with pytest.raises(IntegrityError):
        store.load_all()


@pytest.mark.parametrize("role", [5, "serve", None, [1]])
def test_a_self_consistent_record_with_a_bad_role_is_an_integrity_error(
    workspace: Workspace, role: object
) -> None:
    """Content that hashes to its own name but is not a record (a role that is not a
    mapping of flags) is refused with the file named, never a bare exception."""
    content = record_file_bytes(make_record(0).with_id())
    data = json.loads(content)
    data.pop("id")
    data["roles"] = {"serve": role}
    record_id = "sha256:" + hashlib.sha256(canonical_json(data)).hexdigest()
    data["id"] = record_id
    path = workspace.store.path_of(record_id)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, sort_keys=True, indent=2) + "\n", encoding="utf-8")
    with pytest.raises(IntegrityError, match="not an evidence record"):
        workspace.store.load_all()
    with pytest.raises(IntegrityError, match="not an evidence record"):
        workspace.store.get(record_id)
    (check,) = workspace.store.check_all()
    assert check.problem is not None and "not an evidence record" in check.problem


def test_bad_ids_are_refused(workspace: Workspace) -> None:
    for bad in ("", "sha256:abc", "md5:" + "a" * 64, "sha256:" + "A" * 64, "../../etc/passwd"):
        with pytest.raises(IntegrityError, match="not a record id"):
            workspace.store.get(bad)


def test_load_all_matches_get(workspace: Workspace) -> None:
    store = workspace.store
    ids = [store.put(make_record(i))[0] for i in range(50)]
    loaded = store.load_all()
    assert sorted(loaded) == sorted(ids)
    assert all(loaded[i] == store.get(i) for i in ids)


def test_temp_files_are_invisible_to_readers(workspace: Workspace) -> None:
    store = workspace.store
    record_id, _ = store.put(make_record(6))
    leftover = store.path_of(record_id).parent / ".abc.json.123.deadbeef.tmp"
    leftover.write_text("{half")
    assert store.ids() == [record_id]
    assert list(store.load_all()) == [record_id]
    assert store.leftover_temp_files() == [leftover]


def test_missing_store_is_empty(tmp_path: Path) -> None:
    store = EvidenceStore(tmp_path / "nowhere")
    assert store.ids() == []
    assert store.load_all() == {}


_flag_text = st.text(alphabet=st.characters(codec="utf-8"), min_size=1, max_size=20)


@settings(
    max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(flags=st.dictionaries(_flag_text, _flag_text, max_size=8), conc=st.integers(0, 10_000))
def test_any_record_round_trips(workspace: Workspace, flags: dict[str, str], conc: int) -> None:
    record = make_record(conc, flags=flags or {"k": "v"})
    record_id, _ = workspace.store.put(record)
    assert workspace.store.get(record_id) == record.with_id()
    assert workspace.store.load_all()[record_id] == record.with_id()
    assert workspace.store.put(record) == (record_id, False)


# --- the fast bulk load against the full per-file check -----------------------------


def test_load_all_of_the_embedded_evidence_equals_the_full_check() -> None:
    """Every record ``load_all`` returns is the one ``check_file`` (name, JSON, model, id
    field, raw and model hashes) returns, for the 1,487 records of ``evidence/``."""
    root = Path(__file__).resolve().parents[2] / "evidence"
    store = EvidenceStore(root)
    loaded = store.load_all()
    assert len(loaded) > 1000
    checks = list(store.check_all())
    assert [check.name_id for check in checks] == list(loaded)
    for check in checks:
        assert check.ok and check.record is not None
        assert loaded[str(check.name_id)].model_dump(mode="json") == check.record.model_dump(
            mode="json"
        )


def test_the_bulk_listing_is_the_strict_listing(workspace: Workspace) -> None:
    """``load_all`` lists files with ``os.scandir`` strings; same files, same order and
    the same ids as ``_record_paths`` + ``id_of``, odd names included."""
    store = workspace.store
    for index in range(3):
        store.put(make_record(index))
    root = workspace.evidence_root
    (root / "ab").mkdir(exist_ok=True)
    (root / "ab" / "not-a-record.json").write_text("{}", encoding="utf-8")
    (root / "ab" / ".hidden.json").write_text("{}", encoding="utf-8")
    (root / "ab" / "notes.txt").write_text("x", encoding="utf-8")
    (root / "zz").mkdir()
    (root / "zz" / ("0" * 62 + ".json")).write_text("{}", encoding="utf-8")
    (root / ".git").mkdir()
    (root / "README.md").write_text("x", encoding="utf-8")
    expected = [(str(p), store.id_of(p)) for p in store._record_paths()]
    assert store._record_files() == expected
    assert any(record_id is None for _, record_id in expected)


def test_a_file_over_the_limit_is_refused_unread(workspace: Workspace) -> None:
    record_id = "sha256:" + "b" * 64
    path = workspace.store.path_of(record_id)
    path.parent.mkdir(parents=True)
    with path.open("wb") as handle:
        handle.truncate(MAX_RECORD_BYTES + 1)  # sparse: nothing to read
    with pytest.raises(IntegrityError, match=r"over the \d+-byte record limit"):
        workspace.store.load_all()
