"""The shipped vLLM knowledge table (provenance/normalise/vllm_data, generated from the
vLLM wheels by scripts/vllm_knowledge.py) loads, covers the versions the embedded
recipes and evidence name, and says what vLLM's own sources say."""

from __future__ import annotations

import re

import pytest

from provenance.errors import InputError
from provenance.normalise.vllm_knowledge import table, versions


def test_every_shipped_version_loads_with_its_wheel() -> None:
    assert versions(), "no version shipped"
    for version in versions():
        known = table(version)
        assert known.version == version
        assert known.wheel.file.startswith(f"vllm-{version}-")
        assert re.fullmatch(r"[0-9a-f]{64}", known.wheel.sha256)
        assert known.flags and known.env


def test_the_versions_of_the_embedded_recipes_are_covered() -> None:
    # recipes/models/MiniMaxAI/MiniMax-M3.yaml: min_vllm_version 0.24.0;
    # recipes/kv_store/*.yaml: min_vllm_version 0.21.0
    assert {"0.21.0", "0.24.0"} <= set(versions())


def test_what_vllm_says_about_its_flags() -> None:
    new = table("0.24.0")
    tp = new.flags["tensor_parallel_size"]
    assert (tp.group, tp.default, tp.aliases) == ("ParallelConfig", 1, ("-tp",))
    assert new.flags["max_num_seqs"].group == "SchedulerConfig"
    assert new.flags["port"].group == "Frontend"
    kv = new.flag("kv_transfer_config.kv_connector")
    assert kv is not None and kv.group == "VllmConfig"
    assert new.flags["kv_offloading_size"].group == "CacheConfig"
    assert new.flag("no_such_flag") is None
    # -O named the compilation config in old vLLM (docs/flags.md refuses it for that reason)
    assert table("0.10.1").flags["compilation_config"].aliases == ("-O",)
    assert "-O" not in new.flags["compilation_config"].aliases
    assert new.env["VLLM_ENGINE_READY_TIMEOUT_S"].default == "600"
    # KernelConfig's backends are registered from a picked kwargs variable
    assert (new.flags["moe_backend"].group, new.flags["moe_backend"].default) == (
        "KernelConfig",
        "auto",
    )


def test_an_unknown_version_names_the_known_ones() -> None:
    with pytest.raises(InputError) as info:
        table("0.0.1")
    assert "0.24.0" in (info.value.hint or "")
