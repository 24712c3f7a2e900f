"""AMD vllm-disagg and llm-d multinode points: specific skip codes, never a missing srt-slurm
recipe (hand-made launchers; the mirror case skips without the mirror)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest
from inferencex_fixtures import MASTER_DISAGG, RepoBuilder, toy_base_files

from provenance.evidence.inferencex.ingest import extract
from provenance.evidence.inferencex.multinode_launchers import (
    AMD_VLLM_DISAGG_SERVER,
    LLMD_RECIPES_DIR,
)

_DEFAULT = Path(__file__).resolve().parents[4] / ".mirror" / "SemiAnalysisAI+InferenceX" / "repo"
MIRROR = Path(os.environ.get("PROVENANCE_INFERENCEX", str(_DEFAULT)))

AMD_DISAGG = (
    MASTER_DISAGG.replace("toy-fp4-b300-dynamo-vllm", "toy-fp4-mi355x-vllm-disagg")
    .replace("framework: dynamo-vllm", "framework: vllm-disagg")
    .replace("runner: b300", "runner: mi355x")
    .replace('          - "CONFIG_FILE=recipes/vllm/toy/4p1d.yaml"\n', "")
    .replace("additional-settings:\n", "additional-settings: []\n")
)
LLMD = (
    MASTER_DISAGG.replace("toy-fp4-b300-dynamo-vllm", "toy-fp4-gb200-llmd-vllm")
    .replace("framework: dynamo-vllm", "framework: llmd-vllm")
    .replace("CONFIG_FILE=recipes/vllm/toy/4p1d.yaml", "CONFIG_FILE=toy-low-latency.yaml")
)

SERVER_VLLM = """\
#!/bin/bash
MODELS_YAML="${WS_PATH}/models_vllm.yaml"
eval "$(python3 -c "
import yaml
print('PREFILL_SERVER_CONFIG=x')
")"
vllm serve "$MODEL_PATH" ${PREFILL_SERVER_CONFIG}
"""


def _files(master: str) -> dict[str, str | None]:
    files = toy_base_files()
    files["configs/nvidia-master.yaml"] = master
    return files


def test_amd_vllm_disagg_names_the_python_eval(make_repo: Callable[[], RepoBuilder]) -> None:
    builder = make_repo()
    files = _files(AMD_DISAGG)
    builder.commit("no server yet (#1)", files)
    before = extract(builder.root, "HEAD", None, "toy-fp4-mi355x-vllm-disagg", [])
    assert before.summary.skip_counts() == {"multinode-without-config-file": 1}
    files[AMD_VLLM_DISAGG_SERVER] = SERVER_VLLM
    builder.commit("amd disagg server (#2)", files)
    after = extract(builder.root, "HEAD", None, "toy-fp4-mi355x-vllm-disagg", [])
    assert after.records == []
    (item,) = after.summary.skipped
    assert (item.code, item.framework, item.keys) == (
        "amd-disagg-python-eval",
        "vllm-disagg",
        ["toy-fp4-mi355x-vllm-disagg"],
    )


def test_llmd_reads_its_own_recipe_directory(make_repo: Callable[[], RepoBuilder]) -> None:
    builder = make_repo()
    files = _files(LLMD)
    builder.commit("llm-d key (#1)", files)
    absent = extract(builder.root, "HEAD", None, "toy-fp4-gb200-llmd-vllm", [])
    assert absent.summary.skip_counts() == {"llmd-recipe-not-in-tree": 1}
    files[LLMD_RECIPES_DIR + "toy-low-latency.yaml"] = "kind: EndpointPickerConfig\n"
    builder.commit("llm-d recipe (#2)", files)
    present = extract(builder.root, "HEAD", None, "toy-fp4-gb200-llmd-vllm", [])
    assert present.summary.skip_counts() == {"llmd-recipe-not-evaluated": 1}


@pytest.mark.corpus
def test_mirror_head_skips_name_the_launcher_form() -> None:
    if not (MIRROR / "objects").is_dir() and not (MIRROR / ".git").exists():
        pytest.skip(f"InferenceX mirror not found at {MIRROR}")
    result = extract(MIRROR, "843c6254f", None, "*-vllm-disagg", [])
    codes = {(s.code, s.framework) for s in result.summary.skipped}
    # the AMD chain is read (test_amd_disagg.py); at HEAD its archived keys' helpers
    # changed after archiving, so those points were never swept as read
    assert ("amd-disagg-python-eval", "vllm-disagg") not in codes
    assert ("archived-launcher-changed", "vllm-disagg") in codes
    assert all(c != "multinode-without-config-file" for c, f in codes if f == "vllm-disagg")
    llmd = extract(MIRROR, "843c6254f", None, "*-llmd-vllm", [])
    assert {s.code for s in llmd.summary.skipped} == {"llmd-recipe-not-evaluated"}
