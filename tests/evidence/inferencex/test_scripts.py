from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest
from inferencex_fixtures import (
    LAUNCH_B300,
    LAUNCH_H100,
    RUNNERS,
    TOY_SCRIPT,
    WORKFLOW_PATH,
    RepoBuilder,
    toy_base_files,
    workflow,
)

from provenance.evidence.inferencex.ingest import extract
from provenance.evidence.inferencex.master import load_master_configs
from provenance.evidence.inferencex.scripts import (
    ScriptResolution,
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
            WORKFLOW_PATH: workflow(),
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
    builder.commit("setup (#1)", {"configs/nvidia-master.yaml": MASTER, WORKFLOW_PATH: workflow()})
    snap = _snapshot(builder)
    entry = load_master_configs(snap).by_key("toy-fp4-b300-vllm")[0]
    res = resolve_script(snap, entry, entry.single_points[0])
    assert res.path is None and "launch_b300.sh not in the tree" in (res.reason or "")
    assert res.subdir_unknown is None


def _subdir_repo(make_repo: Callable[[], RepoBuilder], workflow_text: str | None) -> Snapshot:
    """b300 launcher, one script at the pre-move place and one under fixed_seq_len/."""
    builder = make_repo()
    builder.commit(
        "setup (#1)",
        {
            "configs/nvidia-master.yaml": MASTER,
            "configs/runners.yaml": RUNNERS,
            "runners/launch_b300-nv.sh": LAUNCH_B300,
            "benchmarks/single_node/toy_fp4_b300_mtp.sh": "vllm serve old\n",
            "benchmarks/single_node/fixed_seq_len/toy_fp4_b300_vllm_mtp.sh": "vllm serve new\n",
            **({WORKFLOW_PATH: workflow_text} if workflow_text is not None else {}),
        },
    )
    return _snapshot(builder)


def _resolve_vllm(snap: Snapshot) -> ScriptResolution:
    entry = load_master_configs(snap).by_key("toy-fp4-b300-vllm")[0]
    return resolve_script(snap, entry, entry.single_points[0])


def test_pre_move_workflow_gives_the_empty_subdir(make_repo: Callable[[], RepoBuilder]) -> None:
    """Before the fixed_seq_len/ move the workflow gave '' (InferenceX at bce10f7f3)."""
    res = _resolve_vllm(_subdir_repo(make_repo, workflow("")))
    assert res.path == "benchmarks/single_node/toy_fp4_b300_mtp.sh"
    assert res.scenario_subdir == "" and not res.via_deprecated
    assert res.tried == (
        "benchmarks/single_node/toy_fp4_b300_vllm_mtp.sh",
        "benchmarks/single_node/toy_fp4_b300_mtp.sh",
    )


def test_post_move_workflow_gives_fixed_seq_len(make_repo: Callable[[], RepoBuilder]) -> None:
    res = _resolve_vllm(_subdir_repo(make_repo, workflow("fixed_seq_len/")))
    assert res.path == "benchmarks/single_node/fixed_seq_len/toy_fp4_b300_vllm_mtp.sh"
    assert res.scenario_subdir == "fixed_seq_len/"


def test_workflow_without_scenario_subdir_leaves_it_unset(
    make_repo: Callable[[], RepoBuilder],
) -> None:
    res = _resolve_vllm(_subdir_repo(make_repo, "env:\n  SCENARIO_TYPE: x\njobs: {}\n"))
    assert res.path == "benchmarks/single_node/toy_fp4_b300_mtp.sh"


def test_subdir_decided_by_another_input_tries_each_value(
    make_repo: Callable[[], RepoBuilder],
) -> None:
    text = "env:\n  SCENARIO_SUBDIR: ${{ inputs.layout == 'new' && 'fixed_seq_len/' || '' }}\n"
    res = _resolve_vllm(_subdir_repo(make_repo, text))
    assert res.path == "benchmarks/single_node/fixed_seq_len/toy_fp4_b300_vllm_mtp.sh"
    assert res.tried[:2] == (
        "benchmarks/single_node/fixed_seq_len/toy_fp4_b300_vllm_mtp.sh",
        "benchmarks/single_node/fixed_seq_len/toy_fp4_b300_mtp.sh",
    )


def test_unknown_subdir_is_a_reason_not_a_guess(make_repo: Callable[[], RepoBuilder]) -> None:
    missing = _resolve_vllm(_subdir_repo(make_repo, None))
    assert missing.path is None and missing.tried == ()
    assert (missing.subdir_unknown or "").startswith(f"{WORKFLOW_PATH} not in the tree at ")
    text = "env:\n  SCENARIO_SUBDIR: ${{ vars.SUBDIR }}\n"
    opaque = _resolve_vllm(_subdir_repo(make_repo, text))
    assert opaque.path is None
    assert "context 'vars.SUBDIR' is not modelled" in (opaque.subdir_unknown or "")


def test_unresolved_reason_names_every_path_looked_for(
    make_repo: Callable[[], RepoBuilder],
) -> None:
    builder = make_repo()
    builder.commit(
        "setup (#1)",
        {
            "configs/nvidia-master.yaml": MASTER,
            "configs/runners.yaml": RUNNERS,
            "runners/launch_b300-nv.sh": LAUNCH_B300,
            WORKFLOW_PATH: workflow(),
        },
    )
    res = _resolve_vllm(_snapshot(builder))
    assert res.path is None and res.subdir_unknown is None
    assert res.reason == (
        "b300-nv: runners/launch_b300-nv.sh composes "
        "benchmarks/single_node/fixed_seq_len/toy_fp4_b300_vllm_mtp.sh, "
        "benchmarks/single_node/fixed_seq_len/toy_fp4_b300_mtp.sh "
        "(and each in its deprecated/ sibling directory); none exists"
    )


def test_env_matches_the_benchmark_workflow(make_repo: Callable[[], RepoBuilder]) -> None:
    builder = make_repo()
    builder.commit("setup (#1)", {"configs/nvidia-master.yaml": MASTER})
    entry = load_master_configs(_snapshot(builder)).by_key("toy-fp4-b300-vllm")[0]
    env = launcher_env(entry, entry.single_points[0], "b300-nv", "fixed_seq_len/")
    assert env["TP"] == "2" and env["EP_SIZE"] == "2" and env["DP_ATTENTION"] == "true"
    assert env["CONC"] == "128" and env["ISL"] == "8192" and env["MAX_MODEL_LEN"] == "9472"
    assert env["SPEC_DECODING"] == "mtp" and env["EXP_NAME"] == "toy_8k1k"
    assert env["SCENARIO_SUBDIR"] == "fixed_seq_len/" and env["RUNNER_NAME"] == "b300-nv_00"
    assert env["MODEL"] == "org/Toy-NVFP4" and env["MODEL_PATH"] == "/models/Toy-NVFP4"
    assert env["RUN_EVAL"] == "false" and env["GPU_COUNT"] == "2"


_DEFAULT_MIRROR = (
    Path(__file__).resolve().parents[4] / ".mirror" / "SemiAnalysisAI+InferenceX" / "repo"
)
MIRROR = Path(os.environ.get("PROVENANCE_INFERENCEX", str(_DEFAULT_MIRROR)))


@pytest.mark.skipif(not MIRROR.is_dir(), reason="InferenceX mirror not available")
def test_mirror_before_the_move_resolves_the_top_level_script() -> None:
    """bce10f7f3 (PR #1457): the workflow gave '' for fixed-seq-len, the scripts were
    at benchmarks/single_node/ (no fixed_seq_len/ yet)."""
    repo = open_repo(MIRROR)
    snap = Snapshot(repo, resolve_commit(repo, "bce10f7f3"))
    entry = load_master_configs(snap).by_key("dsr1-fp4-b200-sglang")[0]
    point = entry.single_points[0]
    assert point.scenario == "fixed-seq-len"
    res = resolve_script(snap, entry, point)
    assert res.path == "benchmarks/single_node/dsr1_fp4_b200.sh"
    assert res.scenario_subdir == "" and not res.via_deprecated


def test_ingest_names_the_commit_and_the_paths_looked_for(
    make_repo: Callable[[], RepoBuilder],
) -> None:
    builder = make_repo()
    files = toy_base_files()
    del files[TOY_SCRIPT]
    sha = builder.commit("no script (#1)", files)
    summary = extract(builder.root, "HEAD", None, "toy-fp4-b300-vllm-mtp", []).summary
    assert summary.skip_counts() == {"launcher-not-found": 5}
    assert summary.unresolved_scripts == [
        f"toy-fp4-b300-vllm-mtp (fixed-seq-len, spec-decoding mtp) at {sha[:12]}: b300-nv: "
        "runners/launch_b300-nv.sh composes "
        "benchmarks/single_node/fixed_seq_len/toy_fp4_b300_vllm_mtp.sh, "
        "benchmarks/single_node/fixed_seq_len/toy_fp4_b300_mtp.sh "
        "(and each in its deprecated/ sibling directory); none exists"
    ]
    files[WORKFLOW_PATH] = "env:\n  SCENARIO_SUBDIR: ${{ github.ref }}\n"
    builder.commit("opaque workflow (#2)", files)
    summary = extract(builder.root, "HEAD", None, "toy-fp4-b300-vllm-mtp", []).summary
    assert summary.skip_counts() == {"scenario-subdir-unknown": 5}
    assert "context 'github.ref' is not modelled" in summary.unresolved_scripts[0]
