"""scripts/vllm_knowledge.py reads a vLLM wheel statically: a small fake wheel written
here (a zip with a few ``vllm/`` sources) gives exactly the flags, groups, types,
defaults, aliases and environment variables its sources declare."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import zipfile
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "vllm_knowledge.py"

CONFIG_CACHE = """
from dataclasses import field
DEFAULT_BLOCKS = 16

@config
class CacheConfig:
    block_size: int | None = None
    gpu_memory_utilization: float = 0.9
    num_gpu_blocks_override: int = DEFAULT_BLOCKS
    kv_offloading_backend: str = field(default="native")
    cache_backend: str = "auto"
    cpu_offload_extra: list[int] = field(default_factory=list)
    _private: int = 3
"""

CONFIG_VLLM = """
@config
class VllmConfig:
    compilation_config: CompilationConfig = Field(default_factory=CompilationConfig)
    kv_transfer_config: KVTransferConfig | None = None
"""

ARG_UTILS = """
def get_kwargs(cls): ...

class EngineArgs:
    max_num_seqs: int | None = None

    @staticmethod
    def add_cli_args(parser):
        cache_kwargs = get_kwargs(CacheConfig)
        cache_group = parser.add_argument_group(title="CacheConfig")
        cache_group.add_argument("--block-size", **cache_kwargs["block_size"])
        cache_group.add_argument(
            "--gpu-memory-utilization",
            **{**cache_kwargs["gpu_memory_utilization"], "default": 0.8},
        )
        backend_kwargs = cache_kwargs["cache_backend"]
        backend_kwargs["type"] = lambda s: s.lower()
        cache_group.add_argument("--cache-backend", **backend_kwargs)
        vllm_kwargs = get_kwargs(VllmConfig)
        vllm_group = parser.add_argument_group(title="VllmConfig")
        vllm_group.add_argument("--compilation-config", "-cc", **vllm_kwargs["compilation_config"])
        vllm_group.add_argument("--kv-transfer-config", **vllm_kwargs["kv_transfer_config"])
        parser.add_argument("--disable-log-stats", action="store_true", default=False)
        return parser
"""

CLI_ARGS = """
@config
class BaseFrontendArgs:
    tool_call_parser: str | None = None

@config
class FrontendArgs(BaseFrontendArgs):
    host: str | None = None
    port: int = 8000

def make_arg_parser(parser):
    parser.add_argument("model_tag", type=str, nargs="?")
    parser.add_argument("--api-server-count", "-asc", type=int, default=None)
    return parser
"""

ENVS = """
import os
if TYPE_CHECKING:
    VLLM_HOST_IP: str = ""
    VLLM_USE_DEEP_GEMM: bool = True
    VLLM_CACHE_ROOT: str = os.path.expanduser("~/.cache/vllm")

environment_variables: dict[str, Callable[[], Any]] = {
    "VLLM_HOST_IP": lambda: os.getenv("VLLM_HOST_IP", ""),
    "VLLM_USE_DEEP_GEMM": lambda: bool(int(os.getenv("VLLM_USE_DEEP_GEMM", "1"))),
    "VLLM_ATTENTION_BACKEND": env_with_choices("VLLM_ATTENTION_BACKEND", None, ["A"]),
    "VLLM_API_KEY": lambda: os.environ.get("VLLM_API_KEY"),
    "VLLM_CACHE_ROOT": lambda: os.path.expanduser(os.getenv("VLLM_CACHE_ROOT", "~/.cache/vllm")),
}
"""


def _wheel(tmp_path: Path, version: str = "0.99.1") -> Path:
    path = tmp_path / f"vllm-{version}-cp38-abi3-manylinux_2_28_x86_64.whl"
    with zipfile.ZipFile(path, "w") as wheel:
        wheel.writestr("vllm/config/cache.py", CONFIG_CACHE)
        wheel.writestr("vllm/config/vllm.py", CONFIG_VLLM)
        wheel.writestr("vllm/engine/arg_utils.py", ARG_UTILS)
        wheel.writestr("vllm/entrypoints/openai/cli_args.py", CLI_ARGS)
        wheel.writestr("vllm/envs.py", ENVS)
        wheel.writestr(f"vllm-{version}.dist-info/METADATA", f"Name: vllm\nVersion: {version}\n")
    return path


def _generate(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args, "--root", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_a_fake_wheel_gives_its_flags_and_env(tmp_path: Path) -> None:
    wheel = _wheel(tmp_path)
    out = tmp_path / "out"
    run = _generate(tmp_path, "--wheel", str(wheel), "--out", str(out))
    assert run.returncode == 0, run.stderr
    table = json.loads((out / "0.99.1.json").read_text(encoding="utf-8"))
    assert table["version"] == "0.99.1"
    assert table["wheel"] == {
        "file": wheel.name,
        "sha256": hashlib.sha256(wheel.read_bytes()).hexdigest(),
    }
    flags = table["flags"]
    assert flags["block_size"] == {
        "option": "--block-size",
        "group": "CacheConfig",
        "field": "block_size",
        "type": "int | None",
        "default": None,
    }
    # kwargs picked into a variable first (vLLM's --moe-backend, KernelConfig, 0.17.0+)
    assert flags["cache_backend"]["default"] == "auto"
    assert flags["cache_backend"]["field"] == "cache_backend"
    # a default written over the config's own, in a spread dict
    assert flags["gpu_memory_utilization"]["default"] == 0.8
    assert flags["compilation_config"]["aliases"] == ["-cc"]
    assert flags["compilation_config"]["group"] == "VllmConfig"
    assert flags["compilation_config"]["default_expr"] == "CompilationConfig()"
    assert flags["kv_transfer_config"]["type"] == "KVTransferConfig | None"
    assert flags["disable_log_stats"]["group"] == "(no group)"
    assert flags["disable_log_stats"]["default"] is False
    assert flags["api_server_count"]["aliases"] == ["-asc"]
    assert flags["api_server_count"]["type"] == "int"
    # frontend fields, inherited ones included
    assert flags["port"]["group"] == "Frontend" and flags["port"]["default"] == 8000
    assert flags["tool_call_parser"]["option"] == "--tool-call-parser"
    # a positional is no flag; an EngineArgs field without add_argument is none either
    assert "model_tag" not in flags and "max_num_seqs" not in flags
    env = table["env"]
    assert env["VLLM_HOST_IP"] == {"type": "str", "default": ""}
    assert env["VLLM_USE_DEEP_GEMM"] == {"type": "bool", "default": "1"}
    assert env["VLLM_ATTENTION_BACKEND"] == {"default": None}
    assert env["VLLM_API_KEY"] == {"default": None}
    assert env["VLLM_CACHE_ROOT"]["default"] == "~/.cache/vllm"
    index = json.loads((out / "index.json").read_text(encoding="utf-8"))
    assert index["versions"]["0.99.1"]["flags"] == len(flags)


def test_module_constants_resolve_and_private_fields_are_left_out(tmp_path: Path) -> None:
    out = tmp_path / "out"
    run = _generate(tmp_path, "--wheel", str(_wheel(tmp_path, "0.98.0")), "--out", str(out))
    assert run.returncode == 0, run.stderr
    table = json.loads((out / "0.98.0.json").read_text(encoding="utf-8"))
    # the config class is read, but only flags add_argument registers are listed
    assert "num_gpu_blocks_override" not in table["flags"]
    assert "_private" not in json.dumps(table)


def test_versions_named_by_recipes_and_evidence(tmp_path: Path) -> None:
    (tmp_path / "recipes" / "models").mkdir(parents=True)
    (tmp_path / "recipes" / "models" / "m.yaml").write_text(
        "model:\n  min_vllm_version: 0.24.0\n  docker: vllm/vllm-openai:v0.25.1\n"
        "  other: vllm/vllm-openai:nightly\n",
        encoding="utf-8",
    )
    (tmp_path / "evidence" / "ab").mkdir(parents=True)
    for name, image in (
        ("1", "vllm/vllm-openai:v0.13.0"),
        ("2", "vllm/vllm-openai-rocm:nightly-04c2a8de"),
        ("3", "rocm/7.0:rocm7.0_ubuntu_22.04_vllm_0.10.1_instinct_20250927_rc1"),
    ):
        (tmp_path / "evidence" / "ab" / f"{name}.json").write_text(
            json.dumps({"image": image}), encoding="utf-8"
        )
    run = _generate(tmp_path, "--list")
    assert run.returncode == 0, run.stderr
    listed = [line.split("\t") for line in run.stdout.splitlines()]
    assert [version for version, _ in listed] == ["0.10.1", "0.13.0", "0.24.0", "0.25.1"]
    assert dict(listed)["0.24.0"] == "recipes/models/m.yaml"
    assert dict(listed)["0.13.0"] == "evidence/ (1 record(s))"
