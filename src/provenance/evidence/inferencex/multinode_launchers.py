"""Multinode launcher forms other than srt-slurm recipes, and why they yield no record.

Two InferenceX multinode paths serve vLLM without an srt-slurm recipe:

* AMD ``vllm-disagg`` (``runners/launch_mi355x-*.sh`` →
  ``benchmarks/multi_node/amd_utils/submit.sh`` → ``server_vllm.sh``): read
  by :mod:`provenance.evidence.inferencex.amd_disagg`, which reimplements the
  ``eval "$(python3 -c …)"`` lookup in ``models_vllm.yaml`` and the ``sed``
  rewrites. A chain not in that form is skipped as ``amd-disagg-python-eval``
  (``multinode-without-config-file`` when ``server_vllm.sh`` is absent).
* llm-d (framework ``llmd-*``, ``benchmarks/multi_node/llm-d/submit.sh``):
  ``CONFIG_FILE`` names ``benchmarks/multi_node/llm-d-recipes/<CONFIG_FILE>``,
  an EPP router config plus per-role ``extra-args`` that ``llm-d/server.sh``
  turns into serve commands. That composition is not modelled: the point is
  skipped as ``llmd-recipe-not-evaluated`` (``llmd-recipe-not-in-tree`` when
  the file is absent at the commit) — never as a missing srt-slurm recipe.
"""

from __future__ import annotations

from provenance.evidence.inferencex.skips import SkipCode
from provenance.evidence.inferencex.snapshot import Snapshot

AMD_VLLM_DISAGG_SERVER = "benchmarks/multi_node/amd_utils/server_vllm.sh"
LLMD_RECIPES_DIR = "benchmarks/multi_node/llm-d-recipes/"
_PYTHON_EVAL = 'eval "$(python3'


def is_llmd(framework: str) -> bool:
    return framework.startswith("llmd")


def llmd_recipe_path(config_file: str) -> str:
    """Where ``llm-d/submit.sh`` reads ``CONFIG_FILE`` from."""
    return LLMD_RECIPES_DIR + config_file.strip()


def llmd_skip(snapshot: Snapshot, path: str) -> SkipCode:
    return (
        "llmd-recipe-not-evaluated"
        if snapshot.read(path) is not None
        else "llmd-recipe-not-in-tree"
    )


def without_config_file_skip(snapshot: Snapshot, framework: str) -> SkipCode:
    """The skip code of a multinode point that names no ``CONFIG_FILE``."""
    if framework == "vllm-disagg":
        raw = snapshot.read(AMD_VLLM_DISAGG_SERVER)
        if raw is not None and _PYTHON_EVAL in raw.decode("utf-8", "replace"):
            return "amd-disagg-python-eval"
    return "multinode-without-config-file"
