"""The issue's "Done when", checked against the real InferenceX history (read-only mirror)."""

from __future__ import annotations

import os
from pathlib import Path

import git
import pytest

from provenance.evidence.inferencex.ingest import IngestResult, extract
from provenance.model.record import EvidenceRecord

pytestmark = pytest.mark.corpus

_DEFAULT = Path(__file__).resolve().parents[4] / ".mirror" / "SemiAnalysisAI+InferenceX" / "repo"
MIRROR = Path(os.environ.get("PROVENANCE_INFERENCEX", str(_DEFAULT)))

PR2120 = "7a428f813f26fb3db96c4746f8ab72bd6a7b3a16"
PR2314 = "37ead2ac060d5451c8e23a2e48303ce773558bd1"
PR2310 = "483773590b0d0a53b9acbbefab2433482aaba331"

# Per-point num_speculative_tokens of the NVFP4 MTP launchers at #2120 (spec §3.4), 8k1k,
# keyed by (tp, ep, dp-attn, conc); every other point uses the map's default 3.
K_B300 = {
    (2, 1, False, 2): 2,
    (2, 1, False, 32): 2,
    (2, 1, False, 256): 2,
    (2, 2, False, 128): 2,
    (2, 1, False, 4): 4,
    (2, 2, False, 32): 4,
    (2, 2, True, 128): 4,
    (4, 1, False, 1): 4,
    (4, 1, False, 2): 4,
    (4, 4, False, 1): 4,
    (8, 1, False, 1): 4,
}
K_B200 = {
    (2, 1, False, 1): 4,
    (2, 1, False, 256): 4,
    **{(2, 2, False, c): 4 for c in (1, 16, 64, 128, 256)},
    (4, 4, False, 256): 4,
    (8, 1, False, 1): 4,
    (8, 1, False, 2): 4,
    (2, 2, False, 32): 2,
    (2, 2, False, 512): 2,
    (4, 1, False, 256): 2,
}


def _require_mirror() -> git.Repo:
    if not (MIRROR / "objects").is_dir() and not (MIRROR / ".git").exists():
        pytest.skip(f"InferenceX mirror not found at {MIRROR}")
    repo = git.Repo(MIRROR)
    repo.git.update_environment(GIT_DIR=str(MIRROR))
    return repo


@pytest.fixture(scope="module")
def at_2120() -> IngestResult:
    _require_mirror()
    return extract(MIRROR, "843c625", None, "minimaxm3-fp4-b[23]00-vllm*", [2120])


def _points(
    records: list[EvidenceRecord], key: str
) -> dict[tuple[int, int, bool, int], EvidenceRecord]:
    found: dict[tuple[int, int, bool, int], EvidenceRecord] = {}
    for record in records:
        if record.config_key != key:
            continue
        for w in record.workloads:
            assert w.tp is not None and w.ep is not None and w.conc is not None
            point = (w.tp, w.ep, bool(w.dp_attn), w.conc)
            assert point not in found
            found[point] = record
    return found


@pytest.mark.parametrize("hw", ["b200", "b300"])
@pytest.mark.parametrize("mtp", [False, True])
def test_2120_argv_per_point(at_2120: IngestResult, hw: str, mtp: bool) -> None:
    key = f"minimaxm3-fp4-{hw}-vllm{'-mtp' if mtp else ''}"
    points = _points(at_2120.records, key)
    assert points, key
    for (tp, ep, dp_attn, conc), record in points.items():
        flags = record.roles["serve"]
        assert not record.partial
        assert record.source.commit == PR2120
        if dp_attn:
            # an explicit parallel size of 1 is vLLM's default; the normaliser drops it
            tp_flag = flags.get("tensor_parallel_size", "1")
            assert (tp_flag, flags["data_parallel_size"]) == ("1", str(tp))
            assert flags["enable_expert_parallel"] == "true"
        else:
            assert flags.get("tensor_parallel_size", "1") == str(tp)
            assert "data_parallel_size" not in flags
            assert ("enable_expert_parallel" in flags) == (ep > 1)
        assert flags["max_num_batched_tokens"] == "16384"
        assert flags["block_size"] == "128"
        if mtp:
            assert "attention_config.indexer_kv_dtype" not in flags
            assert "kv_cache_dtype" not in flags
            assert flags["speculative_config.method"] == "eagle3"
            assert flags["speculative_config.model"].endswith("MiniMax-M3-EAGLE3")
            expected = (K_B300 if hw == "b300" else K_B200).get((tp, ep, dp_attn, conc), 3)
            assert flags["speculative_config.num_speculative_tokens"] == str(expected), (
                tp,
                ep,
                dp_attn,
                conc,
            )
        else:
            assert flags["attention_config.indexer_kv_dtype"] == "fp8"
            assert flags["kv_cache_dtype"] == "fp8"
            assert not any(k.startswith("speculative_config") for k in flags)


def test_2120_links_pr_merge_commit_and_blobs(at_2120: IngestResult) -> None:
    repo = _require_mirror()
    [entry] = at_2120.entries
    assert entry.pr.number == 2120 and entry.merge_commit == PR2120
    assert set(entry.records) == {r.id for r in at_2120.records}
    assert set(entry.config_keys) >= {
        "minimaxm3-fp4-b200-vllm",
        "minimaxm3-fp4-b300-vllm",
        "minimaxm3-fp4-b200-vllm-mtp",
        "minimaxm3-fp4-b300-vllm-mtp",
    }
    for file in entry.files:
        assert repo.git.rev_parse(f"{PR2120}:{file.path}") == file.blob_sha
    assert "benchmarks/single_node/fixed_seq_len/minimaxm3_fp4_b300_mtp.sh" in {
        f.path for f in entry.files
    }
    # 8k1k points only: the archived 1k1k entries were not swept with #2120's launchers
    assert sum(len(r.workloads) for r in at_2120.records) == 89


def test_2314_disagg_eagle3_gqa_roles() -> None:
    _require_mirror()
    result = extract(MIRROR, "843c625", None, "minimaxm3-fp4-b300-dynamo-vllm-mtp*", [2314])
    assert result.entries and result.entries[0].merge_commit == PR2314
    assert len(result.records) == 6
    for record in result.records:
        for role, k in (("prefill", "1"), ("decode", "3")):
            flags = record.roles[role]
            assert flags["speculative_config.num_speculative_tokens"] == k
            assert flags["speculative_config.model"].endswith("MiniMax-M3-EAGLE3-GQA")
            assert flags["attention_config.backend"] == "FLASHINFER"
            assert flags["attention_config.use_trtllm_attention"] == "true"
            assert flags["attention_config.indexer_kv_dtype"] == "fp8"


def test_2310_4p1d_topology() -> None:
    _require_mirror()
    result = extract(
        MIRROR, "843c625", None, "minimaxm3-fp4-b300-dynamo-vllm-8k1k-tp1-tep4", [2310]
    )
    [record] = result.records
    topo = record.topology
    prefill, decode = topo.roles["prefill"], topo.roles["decode"]
    assert (prefill.workers, prefill.gpus_per_worker, prefill.tp, prefill.expert_parallel) == (
        4,
        1,
        1,
        False,
    )
    assert (decode.workers, decode.gpus_per_worker, decode.tp, decode.ep) == (1, 4, 4, 4)
    assert decode.expert_parallel and not decode.dp_attention
    assert topo.nodes == 1 and topo.colocated and topo.total_gpus == 8
    assert [w.conc for w in record.workloads] == [4096]
    [entry] = result.entries
    assert entry.pr.number == 2310 and entry.merge_commit == PR2310
    assert record.id in entry.records
