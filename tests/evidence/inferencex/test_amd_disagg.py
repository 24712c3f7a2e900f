"""AMD vllm-disagg points read through the launcher chain (hand-made fixture; mirror case
at InferenceX 843c6254f skips without the mirror)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest
from inferencex_fixtures import RepoBuilder, toy_base_files

from provenance.evidence.inferencex.amd_disagg import (
    AMD_UTILS,
    MODELS_VLLM,
    SERVER_VLLM,
    NotUnderstoodError,
    read_point,
)
from provenance.evidence.inferencex.ingest import extract
from provenance.evidence.inferencex.master import WorkerSpec, load_master_configs
from provenance.evidence.inferencex.snapshot import Snapshot
from provenance.sources.git import open_repo, resolve_commit

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "amd_disagg"
_DEFAULT = Path(__file__).resolve().parents[4] / ".mirror" / "SemiAnalysisAI+InferenceX" / "repo"
MIRROR = Path(os.environ.get("PROVENANCE_INFERENCEX", str(_DEFAULT)))
KEY = "toy-fp4-mi355x-vllm-disagg"

MASTER = f"""\
{KEY}:
  image: vllm/vllm-openai-rocm:nightly-1
  model: amd/Toy-MXFP4
  model-prefix: toy
  runner: mi355x-disagg
  precision: fp4
  framework: vllm-disagg
  multinode: true
  disagg: true
  scenarios:
    fixed-seq-len:
    - isl: 8192
      osl: 1024
      search-space:
      - conc-list: [8, 64]
        prefill:
          num-worker: 2
          tp: 4
          ep: 1
          dp-attn: false
          additional-settings:
          - "PREFILL_NODES=2"
        decode:
          num-worker: 1
          tp: 8
          ep: 8
          dp-attn: true
          additional-settings:
          - "DECODE_NODES=1"
"""


def _files() -> dict[str, str | None]:
    files = toy_base_files()
    files["configs/amd-master.yaml"] = MASTER
    files["runners/launch_mi355x-disagg.sh"] = (FIXTURE / "launch_mi355x.sh").read_text()
    files["benchmarks/multi_node/toy_fp4_mi355x_vllm-disagg.sh"] = (
        FIXTURE / "toy_fp4_mi355x_vllm-disagg.sh"
    ).read_text()
    for name in ("submit.sh", "job.slurm", "server.sh", "server_vllm.sh", "models_vllm.yaml"):
        files[AMD_UTILS + name] = (FIXTURE / name).read_text()
    return files


def test_flags_per_role_follow_the_chain(make_repo: Callable[[], RepoBuilder]) -> None:
    builder = make_repo()
    builder.commit("amd disagg toy (#1)", _files())
    result = extract(builder.root, "HEAD", None, KEY, [])
    assert result.summary.skipped == []
    (record,) = result.records
    prefill, decode = record.roles["prefill"], record.roles["decode"]
    # prefill: the yaml's TP 8 rewritten to 2 nodes * 4 / 2 workers; its own EP flag kept
    assert prefill["tensor_parallel_size"] == "4"
    assert prefill["block_size"] == "64"
    assert prefill["enable_expert_parallel"] == "true"
    assert "enable_dp_attention" not in prefill
    assert prefill["env:VLLM_TOY"] == "common"
    # decode: TP appended (absent from the yaml), EP and DP-attention appended
    assert decode["tensor_parallel_size"] == "8"
    assert decode["enable_expert_parallel"] == "true"
    assert decode["enable_dp_attention"] == "true"
    assert decode["max_num_seqs"] == "128"
    assert decode["env:VLLM_TOY"] == "decode"
    topology = record.topology
    assert topology.kind == "disaggregated"
    assert (topology.roles["prefill"].workers, topology.roles["prefill"].tp) == (2, 4)
    assert topology.roles["decode"].expert_parallel and topology.roles["decode"].dp_attention
    assert (topology.nodes, topology.total_gpus) == (3, 16)
    assert [w.conc for w in record.workloads] == [8, 64]
    kinds = {f.path: f.kind for f in record.source.files}
    assert kinds[SERVER_VLLM] == "launcher" and kinds[MODELS_VLLM] == "other"
    assert record.partial == ()


def test_unrecognised_server_keeps_the_skip(make_repo: Callable[[], RepoBuilder]) -> None:
    builder = make_repo()
    files = _files()
    files[AMD_UTILS + "server_vllm.sh"] = (
        (FIXTURE / "server_vllm.sh")
        .read_text()
        .replace("m.get('decode_flags', '--tensor-parallel-size 8')", "m.get('decode_flags', '')")
    )
    builder.commit("amd disagg toy (#1)", files)
    result = extract(builder.root, "HEAD", None, KEY, [])
    assert result.records == []
    assert result.summary.skip_counts() == {"amd-disagg-python-eval": 1}
    assert any("decode_flags" in w for w in result.summary.warnings)


def test_model_missing_from_models_vllm_is_not_read(make_repo: Callable[[], RepoBuilder]) -> None:
    builder = make_repo()
    files = _files()
    files[AMD_UTILS + "models_vllm.yaml"] = 'Other-Model:\n  prefill_flags: "-x"\n'
    builder.commit("amd disagg toy (#1)", files)
    repo = open_repo(builder.root)
    snapshot = Snapshot(repo, resolve_commit(repo, "HEAD"))
    (entry,) = [e for e in load_master_configs(snapshot).entries if e.key == KEY]
    with pytest.raises(NotUnderstoodError, match="no entry 'Toy-MXFP4'"):
        read_point(snapshot, entry, entry.multi_points[0])


#: Keys whose models_vllm.yaml flags carry --enable-expert-parallel themselves (at 843c6254f)
MIRROR_KEYS = {
    "kimik2.5-fp4-mi355x-vllm-disagg": False,
    "minimaxm2.5-fp8-mi355x-vllm-disagg": True,
    "minimaxm3-fp4-mi355x-vllm-disagg": False,
    "minimaxm3-fp8-mi355x-vllm-disagg": False,
}


def _expected(worker: WorkerSpec, nodes_setting: str, yaml_ep: bool) -> tuple[str, bool, bool]:
    nodes = int(worker.setting(nodes_setting) or "0")
    return str(nodes * worker.tp // worker.num_worker), yaml_ep or worker.ep > 1, worker.dp_attn


@pytest.mark.corpus
def test_mirror_points_yield_prefill_and_decode_flags() -> None:
    if not (MIRROR / "objects").is_dir() and not (MIRROR / ".git").exists():
        pytest.skip(f"InferenceX mirror not found at {MIRROR}")
    repo = open_repo(MIRROR)
    snapshot = Snapshot(repo, resolve_commit(repo, "843c6254f"))
    entries = [e for e in load_master_configs(snapshot).entries if e.key in MIRROR_KEYS]
    read = 0
    for entry in entries:
        for point in entry.multi_points:
            evidence = read_point(snapshot, entry, point)
            assert point.prefill is not None and point.decode is not None
            for role, worker, nodes in (
                ("prefill", point.prefill, "PREFILL_NODES"),
                ("decode", point.decode, "DECODE_NODES"),
            ):
                tp, ep, dp = _expected(worker, nodes, MIRROR_KEYS[entry.key])
                flags = evidence.roles[role].flags
                where = f"{entry.key} {point.isl}/{point.osl} {role}"
                assert flags["tensor_parallel_size"] == tp, where
                assert ("enable_expert_parallel" in flags) == ep, where
                assert ("enable_dp_attention" in flags) == dp, where
                assert evidence.roles[role].topology.workers == worker.num_worker, where
            assert evidence.partial == ()
            read += 1
    assert read == 10
