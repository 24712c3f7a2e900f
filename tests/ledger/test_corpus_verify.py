"""``verify`` against the real InferenceX history (read-only bare mirror)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from ledger_factories import make_entry, make_record
from ledger_workspace import Workspace

from provenance.model.flags import FlagSet
from provenance.model.ledger import LedgerEntry, LedgerFile, PrRef
from provenance.model.record import EvidenceRecord
from provenance.store.verify import Status, verify

pytestmark = pytest.mark.corpus

_DEFAULT = Path(__file__).resolve().parents[3] / ".mirror" / "SemiAnalysisAI+InferenceX" / "repo"
MIRROR = Path(os.environ.get("PROVENANCE_INFERENCEX", str(_DEFAULT)))

PR2120_MERGE = "7a428f813f26fb3db96c4746f8ab72bd6a7b3a16"
B200_LAUNCHER = "benchmarks/single_node/fixed_seq_len/minimaxm3_fp4_b200.sh"
B200_LAUNCHER_BLOB = "95a53a829740903f4c7b320fa1d622c8cd45ea40"
PR2120 = PrRef(repo="SemiAnalysisAI/InferenceX", number=2120)


@pytest.fixture(scope="module")
def mirror() -> Path:
    if not MIRROR.is_dir():
        pytest.skip(f"InferenceX mirror not found at {MIRROR}")
    return MIRROR


def _unchanged(record: EvidenceRecord) -> EvidenceRecord:
    return record


def test_real_blobs_check_out_and_a_wrong_blob_is_suspect(
    workspace: Workspace, mirror: Path
) -> None:
    good = make_record(0, commit=PR2120_MERGE, path=B200_LAUNCHER, blob_sha=B200_LAUNCHER_BLOB)
    wrong = make_record(1, commit=PR2120_MERGE, path=B200_LAUNCHER, blob_sha="0" * 40)
    ids = tuple(workspace.store.put(r)[0] for r in (good, wrong))
    launcher = LedgerFile(path=B200_LAUNCHER, blob_sha=B200_LAUNCHER_BLOB, commit=PR2120_MERGE)
    workspace.ledger.write_entry(
        make_entry(ids, pr=PR2120, merge_commit=PR2120_MERGE, files=(launcher,))
    )
    report = verify(workspace.ledger_root, workspace.evidence_root, mirror, reextract=_unchanged)
    assert {r.id: r.status for r in report.records} == {
        ids[0]: Status.OK,
        ids[1]: Status.SUSPECT,
    }
    assert (
        "is blob 95a53a829740"
        in report.records[[r.id for r in report.records].index(ids[1])].problems[0]
    )
    assert report.exit_code == 4


@pytest.mark.slow
def test_real_ingest_verifies_and_a_forged_record_is_suspect(
    workspace: Workspace, mirror: Path
) -> None:
    """Ingest one config key of #2120 plus a forged record; verify re-extracts both.

    The forged record is self-consistent (its id is the hash of its forged
    content), so only re-extraction from the InferenceX history can catch it.
    """
    from provenance.evidence.inferencex.ingest import extract

    result = extract(mirror, PR2120_MERGE, None, "minimaxm3-fp4-b200-vllm", [2120])
    assert result.records
    original = result.records[0]
    serve = dict(original.roles["serve"])
    serve["kv_cache_dtype"] = "auto" if serve.get("kv_cache_dtype") != "auto" else "fp8"
    forged = original.model_copy(update={"roles": {"serve": FlagSet(serve)}})
    forged_id, _ = workspace.store.put(forged)
    for record in result.records:
        workspace.store.put(record)
    for entry in result.entries:
        workspace.ledger.merge_entry(entry)
    workspace.ledger.merge_entry(LedgerEntry(pr=PR2120, records=(forged_id,)))

    report = verify(workspace.ledger_root, workspace.evidence_root, mirror, extract=extract)
    assert report.reextraction == "done"
    assert report.summary.reextracted == len(result.records) + 1
    statuses = {r.id: r.status for r in report.records}
    assert statuses.pop(forged_id) is Status.SUSPECT
    assert set(statuses) == {r.with_id().id for r in result.records}
    assert set(statuses.values()) == {Status.OK}
    assert report.exit_code == 4
