"""Small InferenceX-shaped git repositories (built with gitpython) and their files."""

from __future__ import annotations

import os
from pathlib import Path

import git

from provenance.evidence.inferencex.ingest import IngestResult

Files = dict[str, str | None]


class RepoBuilder:
    """Commits files (``None`` deletes, ``"->target"`` makes a symlink) one squash at a time."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.repo = git.Repo.init(root)
        with self.repo.config_writer() as config:
            config.set_value("user", "name", "Test")
            config.set_value("user", "email", "test@example.com")
            config.set_value("commit", "gpgsign", "false")

    def commit(self, subject: str, files: Files, *, renames: dict[str, str] | None = None) -> str:
        for old, new in (renames or {}).items():
            (self.root / new).parent.mkdir(parents=True, exist_ok=True)
            self.repo.git.mv(old, new)
        for path, content in files.items():
            target = self.root / path
            if content is None:
                self.repo.git.rm("-q", path)
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            if content.startswith("->"):
                if target.exists() or target.is_symlink():
                    target.unlink()
                os.symlink(content[2:], target)
            else:
                target.write_text(content)
            self.repo.git.add(path)
        self.repo.git.commit("-q", "--allow-empty", "-m", subject)
        return str(self.repo.head.commit.hexsha)


RUNNERS = """\
labels:
  b300:
    - b300-nv_00
    - b300-nv_01
  h100:
    - h100-cw_00
"""

#: ``benchmark-tmpl.yml`` as far as the extractor reads it (its top-level env); ``subdir``
#: is the fixed-seq-len ``SCENARIO_SUBDIR`` (``''`` before the ``fixed_seq_len/`` move).
WORKFLOW_PATH = ".github/workflows/benchmark-tmpl.yml"


def workflow(subdir: str = "fixed_seq_len/") -> str:
    """A benchmark workflow template whose env gives ``SCENARIO_SUBDIR`` as InferenceX's does."""
    return f"""\
name: Template - Benchmark
on:
  workflow_call:
    inputs:
      scenario-type:
        required: false
        type: string
        default: 'fixed-seq-len'
env:
  SCENARIO_TYPE: ${{{{ inputs.scenario-type }}}}
  SCENARIO_SUBDIR: ${{{{ inputs.scenario-type == 'agentic-coding' && 'agentic/' || '{subdir}' }}}}
jobs: {{}}
"""


LAUNCH_B300 = """\
#!/usr/bin/env bash
set -euo pipefail
if [[ "$IS_MULTINODE" == "true" ]]; then
    srtctl apply -f "$CONFIG_FILE"
else
    SPEC_SUFFIX=$([[ "$SPEC_DECODING" == "mtp" ]] && printf '_mtp' || printf '')
    BENCH_BASE="benchmarks/single_node/${SCENARIO_SUBDIR}${EXP_NAME%%_*}_${PRECISION}_b300"
    BENCH_SCRIPT="${BENCH_BASE}_${FRAMEWORK}${SPEC_SUFFIX}.sh"
    if [[ ! -f "$BENCH_SCRIPT" ]]; then
        LEGACY_FW_SUFFIX=$([[ "$FRAMEWORK" == "trt" ]] && printf '_trt' || printf '')
        BENCH_SCRIPT="${BENCH_BASE}${LEGACY_FW_SUFFIX}${SPEC_SUFFIX}.sh"
    fi
    bash "$BENCH_SCRIPT"
fi
"""

LAUNCH_H100 = """\
#!/usr/bin/env bash
SPEC_SUFFIX=$([[ "$SPEC_DECODING" == "mtp" ]] && printf '_mtp' || printf '')
bash benchmarks/single_node/${SCENARIO_SUBDIR}"${EXP_NAME%%_*}_${PRECISION}_h100${SPEC_SUFFIX}.sh"
"""

RECIPE_4P1D = """\
name: "toy-4p1d"
model:
  path: "org/Toy-NVFP4"
  container: "vllm/vllm-openai:nightly-1"
  precision: "fp4"
resources:
  gpu_type: "b300"
  gpus_per_node: 8
  prefill_nodes: 1
  decode_nodes: 0
  prefill_workers: 4
  decode_workers: 1
  gpus_per_prefill: 1
  gpus_per_decode: 4
backend:
  type: vllm
  allow_prefill_decode_colocation: true
  prefill_environment:
    VLLM_FLOAT32_MATMUL_PRECISION: high
  decode_environment:
    VLLM_FLOAT32_MATMUL_PRECISION: high
  vllm_config:
    prefill:
      tensor-parallel-size: 1
      enable-expert-parallel: false
      attention-config: '{"backend": "FLASHINFER", "indexer_kv_dtype": "fp8"}'
      speculative-config: '{"method":"eagle3","num_speculative_tokens":1}'
      enforce-eager: true
    decode:
      tensor-parallel-size: 4
      enable-expert-parallel: true
      attention-config: '{"backend": "FLASHINFER", "indexer_kv_dtype": "fp8"}'
      speculative-config: '{"method":"eagle3","num_speculative_tokens":3}'
      max-num-seqs: 1024
benchmark:
  type: "sa-bench"
  isl: 8192
  osl: 1024
  concurrencies: "64x4096"
"""

MASTER_DISAGG = """\
toy-fp4-b300-dynamo-vllm:
  image: vllm/vllm-openai:nightly-1
  model: org/Toy-NVFP4
  model-prefix: toy
  runner: b300
  precision: fp4
  framework: dynamo-vllm
  multinode: true
  disagg: true
  scenarios:
    fixed-seq-len:
    - isl: 8192
      osl: 1024
      search-space:
      - conc-list: [64, 4096]
        prefill:
          num-worker: 4
          tp: 1
          ep: 1
          dp-attn: false
          additional-settings:
          - "CONFIG_FILE=recipes/vllm/toy/4p1d.yaml"
        decode:
          num-worker: 1
          tp: 4
          ep: 4
          dp-attn: false
"""

SCRIPT_MTP = """\
#!/usr/bin/env bash
source "$(dirname "$0")/../benchmark_lib.sh"
check_env_vars MODEL TP CONC ISL OSL MAX_MODEL_LEN
export VLLM_FLOAT32_MATMUL_PRECISION=high
if [ "$DP_ATTENTION" = "true" ]; then
  PARALLEL_ARGS="--tensor-parallel-size=1 --data-parallel-size=$TP --enable-expert-parallel"
elif [ "$EP_SIZE" -gt 1 ]; then
  PARALLEL_ARGS="--tensor-parallel-size=$TP --enable-expert-parallel"
else
  PARALLEL_ARGS="--tensor-parallel-size=$TP"
fi
declare -A SPEC_MAP=( [8192:2:2:true:128]=4 [8192:4:1:false:1]=2 )
NUM_SPEC=${SPEC_MAP["$ISL:$TP:$EP_SIZE:$DP_ATTENTION:$CONC"]:-3}
vllm serve "$MODEL" --port "$PORT" $PARALLEL_ARGS \\
  --max-model-len "$MAX_MODEL_LEN" \\
  --max-num-batched-tokens "$((ISL * 2))" \\
  --speculative-config "{\\"method\\":\\"eagle3\\",\\"num_speculative_tokens\\":$NUM_SPEC}" \\
  > server.log 2>&1 &
"""

MASTER_SINGLE = """\
toy-fp4-b300-vllm-mtp:
  image: vllm/vllm-openai:nightly-1
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
      - { tp: 2, ep: 2, dp-attn: true, conc-list: [64, 128], spec-decoding: mtp }
      - { tp: 4, conc-list: [1, 2, 4], spec-decoding: mtp }
"""


TOY_SCRIPT = "benchmarks/single_node/fixed_seq_len/toy_fp4_b300_mtp.sh"
TOY_RECIPE = "benchmarks/multi_node/srt-slurm-recipes/vllm/toy/4p1d.yaml"
TOY_CHANGELOG = """\
- config-keys: [toy-fp4-b300-vllm-mtp]
  description: ["re-sweep"]
  pr-link: https://github.com/SemiAnalysisAI/InferenceX/pull/3
"""


def toy_base_files() -> Files:
    """A master config with a single-node and a disaggregated key, and what they use."""
    return {
        "configs/nvidia-master.yaml": MASTER_SINGLE + "\n" + MASTER_DISAGG,
        "configs/runners.yaml": RUNNERS,
        WORKFLOW_PATH: workflow(),
        "runners/launch_b300-nv.sh": LAUNCH_B300,
        TOY_SCRIPT: SCRIPT_MTP,
        TOY_RECIPE: RECIPE_4P1D,
    }


def toy_history(builder: RepoBuilder) -> RepoBuilder:
    """#1 adds the toy configs, #2 tunes the launcher, #3 re-sweeps it (perf-changelog),
    a direct push without a PR number, #4 refreshes the srt-slurm recipe."""
    builder.commit("Add toy configs (#1)", toy_base_files())
    builder.commit(
        "Tune toy launcher (#2)",
        {
            TOY_SCRIPT: SCRIPT_MTP.replace(
                "--max-model-len", "--gpu-memory-utilization 0.9 --max-model-len"
            )
        },
    )
    builder.commit("Re-sweep toy (#3) [skip-sweep]", {"perf-changelog.yaml": TOY_CHANGELOG})
    builder.commit("direct push without a PR number", {"README.md": "x\n"})
    builder.commit(
        "Refresh toy recipe (#4)",
        {TOY_RECIPE: RECIPE_4P1D.replace("max-num-seqs: 1024", "max-num-seqs: 512")},
    )
    return builder


def backing_prs(result: IngestResult) -> dict[str, set[int]]:
    """Record id -> the PR numbers whose ledger entries cite it."""
    found: dict[str, set[int]] = {}
    for entry in result.entries:
        for record_id in entry.records:
            found.setdefault(record_id, set()).add(entry.pr.number)
    return found
