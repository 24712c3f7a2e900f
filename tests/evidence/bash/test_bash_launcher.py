"""evaluate_launcher on small launchers written for these tests (InferenceX-like patterns)."""

from __future__ import annotations

import pytest

from provenance.evidence.bash import evaluate_launcher

POINT_ENV = {
    "MODEL": "org/Model-FP4",
    "TP": "4",
    "EP_SIZE": "1",
    "DP_ATTENTION": "false",
    "CONC": "16",
    "ISL": "1024",
    "OSL": "1024",
    "MAX_MODEL_LEN": "2304",
    "PORT": "8000",
}

SKELETON = r"""#!/usr/bin/env bash
source "$(dirname "$0")/../benchmark_lib.sh"
check_env_vars MODEL TP CONC
export ENGINE_TIMEOUT=600
if [ "${DP_ATTENTION}" = "true" ]; then
  PAR="--tensor-parallel-size=1 --data-parallel-size=$TP --enable-expert-parallel"
elif [ "$EP_SIZE" -gt 1 ]; then
  PAR="--tensor-parallel-size=$TP --enable-expert-parallel"
else
  PAR="--tensor-parallel-size=$TP"
fi
LOG=/tmp/server.log
vllm serve $MODEL --port $PORT \
  $PAR \
  --max-num-batched-tokens "$(( ISL * 2 ))" \
  --max-model-len $MAX_MODEL_LEN > $LOG 2>&1 &
wait_for_server_ready --port "$PORT"
"""


def run(script: str, **overrides: str) -> list[str] | None:
    env = {**POINT_ENV, **overrides}
    return evaluate_launcher(script, "bench/single/launch.sh", env).argv


@pytest.mark.parametrize(
    ("dpa", "ep", "expected"),
    [
        (
            "true",
            "4",
            ["--tensor-parallel-size=1", "--data-parallel-size=4", "--enable-expert-parallel"],
        ),
        ("false", "4", ["--tensor-parallel-size=4", "--enable-expert-parallel"]),
        ("false", "1", ["--tensor-parallel-size=4"]),
    ],
)
def test_parallelism_branches(dpa: str, ep: str, expected: list[str]) -> None:
    argv = run(SKELETON, DP_ATTENTION=dpa, EP_SIZE=ep)
    assert argv == [
        "vllm",
        "serve",
        "org/Model-FP4",
        "--port",
        "8000",
        *expected,
        "--max-num-batched-tokens",
        "2048",
        "--max-model-len",
        "2304",
    ]


def test_exported_env_and_clean_result() -> None:
    result = evaluate_launcher(SKELETON, "bench/single/launch.sh", POINT_ENV)
    assert result.served
    assert result.env == {"ENGINE_TIMEOUT": "600"}
    assert result.partial == []
    assert result.sourced == ["bench/single/../benchmark_lib.sh"]


def test_heredocs_are_recorded_not_run() -> None:
    script = (
        "python3 - <<'PYEOF'\n"
        "import vllm  # patch the engine\n"
        "PYEOF\n"
        "CFG=/tmp/engine.yaml\n"
        'cat > "$CFG" <<EOF\n'
        "kv: $CONC\n"
        "EOF\n"
        "vllm serve m --config $CFG\n"
    )
    result = evaluate_launcher(script, "bench/single/launch.sh", POINT_ENV)
    assert result.argv == ["vllm", "serve", "m", "--config", "/tmp/engine.yaml"]
    patch, config = result.heredocs
    assert patch.command[0] == "python3"
    assert patch.expands is False
    assert patch.body == "import vllm  # patch the engine\n"
    assert config.command == ["cat"]
    assert config.targets == ["/tmp/engine.yaml"]
    assert config.expands is True
    assert "$CONC" in config.body
