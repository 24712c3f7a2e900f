from __future__ import annotations

from collections.abc import Callable

from inferencex_fixtures import LAUNCH_B300, LAUNCH_H100, RUNNERS, RepoBuilder

from provenance.evidence.inferencex.master import load_master_configs
from provenance.evidence.inferencex.scripts import (
    fleets_for_runner,
    launcher_env,
    resolve_script,
    script_candidates,
)
from provenance.evidence.inferencex.snapshot import Snapshot, open_repo, resolve_commit

MASTER = """\
toy-fp4-b300-vllm:
  image: img:1
  model: org/Toy-NVFP4
  model-prefix: toy
  runner: b300
  precision: fp4
  framework: vllm
  multinode: false
  scenarios:
    fixed-seq-len:
    - isl: 8192
      osl: 1024
      search-space:
      - { tp: 2, ep: 2, dp-attn: true, conc-list: [128], spec-decoding: mtp }
toy-fp4-b300-trt:
  image: img:1
  model: org/Toy-NVFP4
  model-prefix: toy
  runner: cluster:b300-nv
  precision: fp4
  framework: trt
  multinode: false
  scenarios:
    agentic-coding:
    - search-space:
      - { tp: 4, conc-list: [8] }
toy-fp8-h100-vllm:
  image: img:1
  model: org/Toy
  model-prefix: toy
  runner: h100
  precision: fp8
  framework: vllm
  multinode: false
  scenarios:
    fixed-seq-len:
    - isl: 1024
      osl: 1024
      search-space:
      - { tp: 8, conc-list: [4] }
"""


def _snapshot(builder: RepoBuilder) -> Snapshot:
    repo = open_repo(builder.root)
    return Snapshot(repo, resolve_commit(repo, "HEAD"))


def test_candidates_follow_the_launcher_text() -> None:
    routing = {
        "SCENARIO_SUBDIR": "fixed_seq_len/",
        "EXP_NAME": "toy_8k1k",
        "PRECISION": "fp4",
        "FRAMEWORK": "vllm",
        "SPEC_SUFFIX": "_mtp",
        "LEGACY_FW_SUFFIX": "",
    }
    assert script_candidates(LAUNCH_B300, routing) == [
        "benchmarks/single_node/fixed_seq_len/toy_fp4_b300_vllm_mtp.sh",
        "benchmarks/single_node/fixed_seq_len/toy_fp4_b300_mtp.sh",
    ]
    short = dict(routing, PRECISION="fp8", SPEC_SUFFIX="")
    assert script_candidates(LAUNCH_H100, short) == [
        "benchmarks/single_node/fixed_seq_len/toy_fp8_h100.sh"
    ]


def test_resolution_prefers_existing_framework_tagged_script(
    make_repo: Callable[[], RepoBuilder],
) -> None:
    builder = make_repo()
    builder.commit(
        "setup (#1)",
        {
            "configs/nvidia-master.yaml": MASTER,
            "configs/runners.yaml": RUNNERS,
            "runners/launch_b300-nv.sh": LAUNCH_B300,
            "runners/launch_h100-cw.sh": LAUNCH_H100,
            "benchmarks/single_node/fixed_seq_len/toy_fp4_b300_mtp.sh": "vllm serve x\n",
            "benchmarks/single_node/agentic/toy_fp4_b300_trt.sh": "trtllm-serve x\n",
            "benchmarks/single_node/agentic/toy_fp4_b300_trt_trt.sh": "trtllm-serve y\n",
            "benchmarks/single_node/fixed_seq_len/deprecated/toy_fp8_h100.sh": "vllm serve z\n",
        },
    )
    snap = _snapshot(builder)
    assert fleets_for_runner(snap, "b300") == ["b300-nv"]
    assert fleets_for_runner(snap, "cluster:b300-nv") == ["b300-nv"]
    assert fleets_for_runner(snap, "b300-nv") == ["b300-nv"]
    masters = load_master_configs(snap)
    vllm = masters.by_key("toy-fp4-b300-vllm")[0]
    res = resolve_script(snap, vllm, vllm.single_points[0])
    assert res.path == "benchmarks/single_node/fixed_seq_len/toy_fp4_b300_mtp.sh"
    assert res.launcher == "runners/launch_b300-nv.sh" and not res.via_deprecated
    trt = masters.by_key("toy-fp4-b300-trt")[0]
    res = resolve_script(snap, trt, trt.single_points[0])
    assert res.path == "benchmarks/single_node/agentic/toy_fp4_b300_trt.sh"
    h100 = masters.by_key("toy-fp8-h100-vllm")[0]
    res = resolve_script(snap, h100, h100.single_points[0])
    assert res.path == "benchmarks/single_node/fixed_seq_len/deprecated/toy_fp8_h100.sh"
    assert res.via_deprecated


def test_unknown_launcher_is_unresolved(make_repo: Callable[[], RepoBuilder]) -> None:
    builder = make_repo()
    builder.commit("setup (#1)", {"configs/nvidia-master.yaml": MASTER})
    snap = _snapshot(builder)
    entry = load_master_configs(snap).by_key("toy-fp4-b300-vllm")[0]
    res = resolve_script(snap, entry, entry.single_points[0])
    assert res.path is None and "launch_b300.sh not in the tree" in (res.reason or "")


def test_env_matches_the_benchmark_workflow(make_repo: Callable[[], RepoBuilder]) -> None:
    builder = make_repo()
    builder.commit("setup (#1)", {"configs/nvidia-master.yaml": MASTER})
    entry = load_master_configs(_snapshot(builder)).by_key("toy-fp4-b300-vllm")[0]
    env = launcher_env(entry, entry.single_points[0], "b300-nv")
    assert env["TP"] == "2" and env["EP_SIZE"] == "2" and env["DP_ATTENTION"] == "true"
    assert env["CONC"] == "128" and env["ISL"] == "8192" and env["MAX_MODEL_LEN"] == "9472"
    assert env["SPEC_DECODING"] == "mtp" and env["EXP_NAME"] == "toy_8k1k"
    assert env["SCENARIO_SUBDIR"] == "fixed_seq_len/" and env["RUNNER_NAME"] == "b300-nv_00"
    assert env["MODEL"] == "org/Toy-NVFP4" and env["MODEL_PATH"] == "/models/Toy-NVFP4"
    assert env["RUN_EVAL"] == "false" and env["GPU_COUNT"] == "2"
