"""Agentic DRAM-offload arms: TOTAL_CPU_DRAM_GB from runners.yaml, then the launcher's flags."""

from __future__ import annotations

from collections.abc import Callable

from inferencex_fixtures import WORKFLOW_PATH, RepoBuilder, workflow

from provenance.evidence.bash import evaluate_launcher
from provenance.evidence.inferencex.dram_budget import dram_offload_gb
from provenance.evidence.inferencex.master import load_master_configs
from provenance.evidence.inferencex.scripts import evaluate_point, resolve_script
from provenance.evidence.inferencex.snapshot import Snapshot, open_repo, resolve_commit

MASTER = """\
toy-fp4-b200-vllm-agentic:
  image: img:1
  model: org/Toy
  model-prefix: toy
  runner: cluster:b200-dgxc
  precision: fp4
  framework: vllm
  multinode: false
  scenarios:
    agentic-coding:
    - dram-utilization: 0.80
      search-space:
      - { tp: 4, conc-list: [8], kv-offloading: dram, kv-offload-backend: {name: vllm-simple} }
      - { tp: 8, conc-list: [8], kv-offloading: none }
"""

RUNNERS = """\
labels:
  cluster:b200-dgxc:
    - b200-dgxc_00
hardware:
  cluster:b200-dgxc:
    available-cpu-dram-mib: 3_095_781
    gpus-per-node: 8
"""

GENERATOR = "MAX_AGENTIC_AVAILABLE_CPU_DRAM_MIB = 2_861_022\n"

LAUNCH = """\
#!/usr/bin/env bash
bash benchmarks/single_node/${SCENARIO_SUBDIR}${EXP_NAME%%_*}_${PRECISION}_b200_${FRAMEWORK}.sh
"""

SCRIPT = """\
#!/usr/bin/env bash
OFFLOAD_ARGS=()
if [ "$KV_OFFLOADING" = "dram" ]; then
    if [ -z "$TOTAL_CPU_DRAM_GB" ]; then
        echo "TOTAL_CPU_DRAM_GB required" >&2
        exit 1
    fi
    PER_RANK=$(( TOTAL_CPU_DRAM_GB * 1000 * 1000 * 1000 / GPU_COUNT ))
    CONFIG=$(cat <<CFG
{"kv_connector": "SimpleCPUOffloadConnector", "cpu_bytes_to_use_per_rank": ${PER_RANK}}
CFG
)
    OFFLOAD_ARGS=(--kv-transfer-config "$CONFIG")
fi
vllm serve "$MODEL" -tp "$TP" "${OFFLOAD_ARGS[@]}"
"""


def _snapshot(builder: RepoBuilder, **extra: str) -> Snapshot:
    files: dict[str, str | None] = {
        "configs/nvidia-master.yaml": MASTER,
        "configs/runners.yaml": RUNNERS,
        WORKFLOW_PATH: workflow(),
        "runners/launch_b200-dgxc.sh": LAUNCH,
        "benchmarks/single_node/agentic/toy_fp4_b200_vllm.sh": SCRIPT,
        "utils/matrix_logic/generate_sweep_configs.py": GENERATOR,
        **extra,
    }
    builder.commit("setup (#1)", files)
    repo = open_repo(builder.root)
    return Snapshot(repo, resolve_commit(repo, "HEAD"))


def test_budget_follows_the_generator(make_repo: Callable[[], RepoBuilder]) -> None:
    snap = _snapshot(make_repo())
    entry = load_master_configs(snap).by_key("toy-fp4-b200-vllm-agentic")[0]
    dram, plain = entry.single_points
    # min(3_095_781, 2_861_022) MiB * 2**20 * 0.80 * 4/8 GPUs -> decimal GB, truncated
    assert dram_offload_gb(snap, entry, dram) == 1199
    assert dram_offload_gb(snap, entry, plain) == 0


def test_dram_arm_serves_with_the_offload_config(make_repo: Callable[[], RepoBuilder]) -> None:
    snap = _snapshot(make_repo())
    entry = load_master_configs(snap).by_key("toy-fp4-b200-vllm-agentic")[0]
    point = entry.single_points[0]
    evidence = evaluate_point(snap, entry, point, resolve_script(snap, entry, point))
    assert evidence.served and evidence.partial == ()
    text = repr(evidence.flags)
    assert "SimpleCPUOffloadConnector" in text
    assert str(1199 * 10**9 // 4) in text


def test_missing_hardware_fact_is_a_specific_reason(make_repo: Callable[[], RepoBuilder]) -> None:
    runners = RUNNERS.split("hardware:")[0]
    snap = _snapshot(make_repo(), **{"configs/runners.yaml": runners})
    entry = load_master_configs(snap).by_key("toy-fp4-b200-vllm-agentic")[0]
    point = entry.single_points[0]
    assert dram_offload_gb(snap, entry, point) == (
        "runner 'cluster:b200-dgxc' has no hardware entry in configs/runners.yaml"
    )
    evidence = evaluate_point(snap, entry, point, resolve_script(snap, entry, point))
    assert not evidence.served
    assert [m.construct_name for m in evidence.partial] == ["dram-budget"]


def test_cat_heredoc_substitution_is_its_content() -> None:
    script = (
        'N=5\nC=$(cat <<EOF\n{"a": ${N}}\n\nEOF\n)\n'
        "D=$(cat <<'EOF'\n$x\nEOF\n)\n"
        'vllm serve m --c "$C" --d "$D"\n'
    )
    result = evaluate_launcher(script, "t.sh", {})
    assert result.argv == ["vllm", "serve", "m", "--c", '{"a": 5}', "--d", "$x"]
    assert result.partial == []
