"""The real #2120 launchers (InferenceX 7a428f8) for every search-space point of the
four MiniMax-M3 NVFP4 single-node keys.

Reads the launchers from the bare InferenceX mirror (``<repo>/../.mirror``) and
the master config from ``<repo>/../shared/corpus``; skipped when either is
absent. Expected values are written out here from the review (spec §3.2–§3.4):
the parallelism rule, the FP8 indexer flag only in the non-EAGLE scripts, and
the per-point ``num_speculative_tokens`` with default 3.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from provenance.evidence.bash import evaluate_launcher
from provenance.safe_yaml import load_yaml

ROOT = Path(__file__).resolve().parents[3]
MIRROR = ROOT / ".." / ".mirror" / "SemiAnalysisAI+InferenceX" / "repo"
MASTER = ROOT / ".." / "shared" / "corpus" / "inferencex-at" / "pr2120_7a428f813" / "configs"
MERGE_2120 = "7a428f813f26fb3db96c4746f8ab72bd6a7b3a16"
FOLDER = "benchmarks/single_node/fixed_seq_len"

# config key -> (launcher resolved by spec §2.4, fleet) at 7a428f8
KEYS = {
    "minimaxm3-fp4-b200-vllm": ("minimaxm3_fp4_b200.sh", "b200-dgxc"),
    "minimaxm3-fp4-b200-vllm-mtp": ("minimaxm3_fp4_b200_mtp.sh", "b200-dgxc"),
    "minimaxm3-fp4-b300-vllm": ("minimaxm3_fp4_b300.sh", "b300-nv"),
    "minimaxm3-fp4-b300-vllm-mtp": ("minimaxm3_fp4_b300_mtp.sh", "b300-nv"),
}

# Effective num_speculative_tokens per (tp, ep, dp_attn, conc) at 8k1k; default 3.
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


def _sources() -> tuple[dict[str, str], dict[str, Any]]:
    if not MIRROR.is_dir() or not (MASTER / "nvidia-master.yaml").is_file():
        pytest.skip("InferenceX mirror or corpus not present")
    return _read_sources()


@cache
def _read_sources() -> tuple[dict[str, str], dict[str, Any]]:
    import git

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        repo = git.Repo(str(MIRROR), odbt=git.GitDB)
    tree = repo.commit(MERGE_2120).tree
    scripts = {
        name: (tree / f"{FOLDER}/{name}").data_stream.read().decode() for name, _ in KEYS.values()
    }
    master = load_yaml(MASTER / "nvidia-master.yaml").data
    return scripts, master


def _points(entry: dict[str, Any]) -> Iterator[tuple[int, int, int, int, bool, int]]:
    for scenario in entry["scenarios"]["fixed-seq-len"]:
        for space in scenario["search-space"]:
            if "conc-list" in space:
                concs = list(space["conc-list"])
            else:
                concs, conc = [], space["conc-start"]
                while conc <= space["conc-end"]:
                    concs.append(conc)
                    conc *= 2
            for conc in concs:
                yield (
                    scenario["isl"],
                    scenario["osl"],
                    space["tp"],
                    space.get("ep", 1),
                    bool(space.get("dp-attn", False)),
                    conc,
                )


def _env(fleet: str, isl: int, osl: int, tp: int, ep: int, dpa: bool, conc: int) -> dict[str, str]:
    env = {
        "MODEL": "nvidia/MiniMax-M3-NVFP4",
        "TP": str(tp),
        "EP_SIZE": str(ep),
        "DP_ATTENTION": "true" if dpa else "false",
        "CONC": str(conc),
        "ISL": str(isl),
        "OSL": str(osl),
        "MAX_MODEL_LEN": str(isl + osl + 256),
        "RANDOM_RANGE_RATIO": "0.8",
        "RESULT_FILENAME": "result",
        "PORT": "8888",
        "EVAL_ONLY": "false",
        "RUN_EVAL": "false",
    }
    if fleet == "b300-nv":
        env["MODEL_PATH"] = "/scratch/models/MiniMax-M3-NVFP4"
    else:  # launch_b200-dgxc.sh rewrites MODEL to the pre-downloaded path
        env["MODEL"] = "/data/models/MiniMax-M3-NVFP4"
    return env


def _flag_value(argv: list[str], flag: str) -> str:
    return argv[argv.index(flag) + 1]


@pytest.mark.corpus
def test_2120_every_point_of_the_four_keys() -> None:
    scripts, master = _sources()
    checked = 0
    for key, (script_name, fleet) in KEYS.items():
        points = list(_points(master[key]))
        assert points, key
        for isl, osl, tp, ep, dpa, conc in points:
            env = _env(fleet, isl, osl, tp, ep, dpa, conc)
            result = evaluate_launcher(scripts[script_name], f"{FOLDER}/{script_name}", env)
            where = f"{key} tp{tp} ep{ep} dpa{dpa} c{conc}"
            assert result.served, where
            assert result.partial == [], (where, result.partial)
            argv = result.argv
            assert argv is not None
            assert argv[:3] == [
                "vllm",
                "serve",
                env["MODEL_PATH" if fleet == "b300-nv" else "MODEL"],
            ]
            if dpa:
                parallel = ["--tensor-parallel-size=1", f"--data-parallel-size={tp}"]
                assert "--enable-expert-parallel" in argv, where
            else:
                parallel = [f"--tensor-parallel-size={tp}"]
                assert ("--enable-expert-parallel" in argv) == (ep > 1), where
            for word in parallel:
                assert word in argv, where
            assert _flag_value(argv, "--max-num-batched-tokens") == str(2 * isl)
            assert _flag_value(argv, "--max-model-len") == env["MAX_MODEL_LEN"]
            assert result.env == {
                "VLLM_ENGINE_READY_TIMEOUT_S": "3600",
                "VLLM_FLOAT32_MATMUL_PRECISION": "high",
            }
            eagle = key.endswith("-mtp")
            indexer = "--attention_config.indexer_kv_dtype" in argv
            assert indexer == (not eagle), where
            if indexer:
                assert _flag_value(argv, "--attention_config.indexer_kv_dtype") == "fp8"
            if eagle:
                spec = json.loads(_flag_value(argv, "--speculative-config"))
                table = K_B300 if "b300" in key else K_B200
                assert spec["method"] == "eagle3"
                assert spec["model"].endswith("/MiniMax-M3-EAGLE3")
                assert spec["num_speculative_tokens"] == table.get((tp, ep, dpa, conc), 3), where
            else:
                assert "--speculative-config" not in argv
            checked += 1
    assert checked >= 60


@pytest.mark.corpus
def test_2120_b300_mtp_worked_example_full_argv() -> None:
    scripts, _ = _sources()
    env = _env("b300-nv", 8192, 1024, 2, 2, True, 128)
    result = evaluate_launcher(
        scripts["minimaxm3_fp4_b300_mtp.sh"], f"{FOLDER}/minimaxm3_fp4_b300_mtp.sh", env
    )
    spec = (
        '{"method": "eagle3", "model": "/data/models/MiniMax-M3-EAGLE3", '
        '"num_speculative_tokens": 4, "attention_backend": "FLASH_ATTN"}'
    )
    assert result.argv == [
        "vllm",
        "serve",
        "/scratch/models/MiniMax-M3-NVFP4",
        "--served-model-name",
        "nvidia/MiniMax-M3-NVFP4",
        "--host",
        "0.0.0.0",
        "--port",
        "8888",
        "--tensor-parallel-size=1",
        "--data-parallel-size=2",
        "--enable-expert-parallel",
        "--gpu-memory-utilization",
        "0.9",
        "--max-model-len",
        "9472",
        "--block-size",
        "128",
        "--language-model-only",
        "--max-cudagraph-capture-size",
        "2048",
        "--max-num-batched-tokens",
        "16384",
        "--speculative-config",
        spec,
        "--stream-interval",
        "20",
        "--no-enable-prefix-caching",
        "--trust-remote-code",
    ]
    assert result.sourced == [f"{FOLDER}/../../benchmark_lib.sh"]


@pytest.mark.corpus
def test_2120_eval_only_point_is_partial_not_guessed() -> None:
    scripts, _ = _sources()
    env = {**_env("b300-nv", 8192, 1024, 4, 1, False, 1), "EVAL_ONLY": "true"}
    result = evaluate_launcher(
        scripts["minimaxm3_fp4_b300.sh"], f"{FOLDER}/minimaxm3_fp4_b300.sh", env
    )
    assert result.argv is not None
    assert _flag_value(result.argv, "--max-model-len") == "<unevaluated:helper-function>"
    assert [m.construct_name for m in result.partial] == ["helper-function"]
