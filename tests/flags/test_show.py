"""``provenance flags``: argv and srt-slurm YAML inputs, text and JSON output, exit codes."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from provenance.cli.main import cli
from provenance.errors import EXIT_INPUT, EXIT_USAGE

# A trimmed srt-slurm recipe with the values of InferenceX #2314
# (b300-fp4/8k1k/mtp/1p1d-dep2-tp4-eagle3-8k1k.yaml): prefill drafts 1 token, decode 3.
SRT_SLURM = """\
name: "minimax-m3-vllm-disagg-b300-1p1d-dep2-tp4-fp4-8k1k-eagle3"
model:
  path: "nvidia/MiniMax-M3-NVFP4"
  precision: fp4
backend:
  type: vllm
  connector: null
  prefill_environment:
    VLLM_FLOAT32_MATMUL_PRECISION: high
    UCX_TLS: cuda_copy,cuda_ipc,rc
  decode_environment:
    VLLM_FLOAT32_MATMUL_PRECISION: high
    UCX_TLS: cuda_copy,cuda_ipc,rc
  vllm_config:
    prefill:
      tensor-parallel-size: 1
      data-parallel-size: 2
      data-parallel-rpc-port: 13345
      enable-expert-parallel: true
      trust-remote-code: true
      no-enable-prefix-caching: true
      attention-config: '@ATTN@'
      block-size: 128
      gpu-memory-utilization: 0.95
      speculative-config: '@SPEC1@'
    decode:
      tensor-parallel-size: 4
      trust-remote-code: true
      attention-config: '@ATTN@'
      block-size: 128
      speculative-config: '@SPEC3@'
      served-model-name: minimax
"""
ATTN = '{"backend": "FLASHINFER", "use_trtllm_attention": true, "indexer_kv_dtype": "fp8"}'
SPEC = (
    '{"method":"eagle3","model":"Inferact/MiniMax-M3-EAGLE3-GQA",'
    '"num_speculative_tokens":%d,"attention_backend":"FLASH_ATTN"}'
)
SRT_SLURM = (
    SRT_SLURM.replace("@ATTN@", ATTN).replace("@SPEC1@", SPEC % 1).replace("@SPEC3@", SPEC % 3)
)


def invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, ["flags", *args])
    return result.exit_code, result.stdout, result.stderr


def test_argv_json_output() -> None:
    code, out, _ = invoke(
        "--format",
        "json",
        "--role",
        "serve",
        "--",
        "VLLM_FLOAT32_MATMUL_PRECISION=high",
        "vllm",
        "serve",
        "MiniMaxAI/MiniMax-M3",
        "-tp",
        "4",
        "--attention_config.indexer_kv_dtype",
        "fp8",
        "--max-num-seqs",
        "256",
        "--port",
        "8000",
    )
    assert code == 0
    data = json.loads(out)
    assert data["schema"] == "provenance.flags/v1"
    (role,) = data["roles"]
    assert role["role"] == "serve"
    assert role["model"] == "MiniMaxAI/MiniMax-M3"
    assert role["port"] == "8000"
    rows = {row["key"]: (row["value"], row["class"]) for row in role["flags"]}
    assert rows == {
        "attention_config.indexer_kv_dtype": ("fp8", "major"),
        "env:VLLM_FLOAT32_MATMUL_PRECISION": ("high", "major"),
        "max_num_seqs": ("256", "tuning"),
        "tensor_parallel_size": ("4", "major"),
    }
    assert all(row["basis"] for row in role["flags"])
    assert role["argv"][:3] == ["vllm", "serve", "MiniMaxAI/MiniMax-M3"]


def test_argv_text_output_lists_each_flag_with_its_class() -> None:
    code, out, _ = invoke("--env", "NCCL_CUMEM_ENABLE=1", "--", "-tp", "8", "--trust-remote-code")
    assert code == 0
    assert "tensor_parallel_size" in out and "major" in out
    assert "trust_remote_code" in out and "functional" in out
    assert "env:NCCL_CUMEM_ENABLE" in out and "harness" in out
    assert "3 flags" in out


def test_yaml_role_decode(tmp_path: Path) -> None:
    recipe = tmp_path / "1p1d.yaml"
    recipe.write_text(SRT_SLURM)
    code, out, _ = invoke("--yaml", str(recipe), "--role", "decode", "--format", "json")
    assert code == 0
    (role,) = json.loads(out)["roles"]
    assert role["role"] == "decode"
    assert role["served_model_name"] == "minimax"
    rows = {row["key"]: row["value"] for row in role["flags"]}
    assert rows["speculative_config.num_speculative_tokens"] == "3"
    assert rows["env:UCX_TLS"] == "cuda_copy,cuda_ipc,rc"


def test_yaml_all_roles_and_why(tmp_path: Path) -> None:
    recipe = tmp_path / "1p1d.yaml"
    recipe.write_text(SRT_SLURM)
    code, out, _ = invoke("--yaml", str(recipe), "--why")
    assert code == 0
    assert "role: prefill" in out and "role: decode" in out
    assert "#2006" in out  # the basis of num_speculative_tokens


def test_yaml_unknown_role_is_input_error(tmp_path: Path) -> None:
    recipe = tmp_path / "1p1d.yaml"
    recipe.write_text(SRT_SLURM)
    code, _, err = invoke("--yaml", str(recipe), "--role", "aggregated")
    assert code == EXIT_INPUT
    assert "aggregated" in err and "prefill, decode" in err


def test_yaml_bad_value_names_file_line_and_key(tmp_path: Path) -> None:
    recipe = tmp_path / "bad.yaml"
    text = SRT_SLURM.replace("gpu-memory-utilization: 0.95", "gpu-memory-utilization: null")
    recipe.write_text(text)
    line = text.splitlines().index("      gpu-memory-utilization: null") + 1
    code, _, err = invoke("--yaml", str(recipe))
    assert code == EXIT_INPUT
    assert f"bad.yaml:{line}" in err
    assert "backend.vllm_config.prefill.gpu-memory-utilization" in err


def test_yaml_duplicate_key_is_refused(tmp_path: Path) -> None:
    recipe = tmp_path / "dup.yaml"
    recipe.write_text(
        SRT_SLURM.replace("    UCX_TLS: cuda_copy", "    UCX_TLS: x\n    UCX_TLS: cuda_copy", 1)
    )
    code, _, err = invoke("--yaml", str(recipe))
    assert code == EXIT_INPUT
    assert "duplicate key" in err


def test_not_an_srt_slurm_recipe(tmp_path: Path) -> None:
    other = tmp_path / "other.yaml"
    other.write_text("model: x\n")
    code, _, err = invoke("--yaml", str(other))
    assert code == EXIT_INPUT
    assert "backend" in err


def test_bad_argv_exit_code_and_message() -> None:
    code, _, err = invoke("--", "vllm", "serve", "m", "-O3")
    assert code == EXIT_INPUT
    assert "-O3" in err


def test_usage_errors() -> None:
    assert invoke()[0] == EXIT_USAGE
    assert invoke("--env", "novalue", "--", "-tp", "1")[0] == EXIT_USAGE


def test_merge_option(tmp_path: Path) -> None:
    argv = [
        "--",
        "--attention-config",
        '{"backend": "FLASHINFER"}',
        "--attention-config.indexer_kv_dtype",
        "fp8",
    ]
    _, vllm_out, _ = invoke("--format", "json", *argv)
    _, merge_out, _ = invoke("--format", "json", "--merge", "merge", *argv)
    _, text_out, _ = invoke(*argv)
    assert "note: --attention-config: its dotted options replace its JSON value" in text_out
    keys = [
        {row["key"] for row in json.loads(out)["roles"][0]["flags"]}
        for out in (vllm_out, merge_out)
    ]
    assert keys[0] == {"attention_config.indexer_kv_dtype"}
    assert keys[1] == {"attention_config.backend", "attention_config.indexer_kv_dtype"}


def test_repo_policy_override(tmp_path: Path) -> None:
    (tmp_path / "provenance.toml").write_text('[policy]\n"max_num_seqs" = "major"\n')
    code, out, _ = invoke("--repo", str(tmp_path), "--format", "json", "--", "--max-num-seqs", "8")
    assert code == 0
    data = json.loads(out)
    assert data["roles"][0]["flags"][0]["class"] == "major"
    assert data["policy"].endswith("provenance.toml")
    (tmp_path / "provenance.toml").write_text('[policy]\n"max_num_seqs" = "big"\n')
    code, _, err = invoke("--repo", str(tmp_path), "--", "--max-num-seqs", "8")
    assert code == EXIT_INPUT
    assert "max_num_seqs" in err


def test_policy_listing(tmp_path: Path) -> None:
    (tmp_path / "provenance.toml").write_text('[policy]\n"stream_interval" = "major"\n')
    code, out, _ = invoke("--policy", "--repo", str(tmp_path), "--format", "json")
    assert code == 0
    data = json.loads(out)
    assert data["schema"] == "provenance.policy/v1"
    assert data["unknown_keys"] == "major"
    first = data["rules"][0]
    assert (first["pattern"], first["flag_class"], first["origin"]) == (
        "stream_interval",
        "major",
        "provenance.toml",
    )
    code, out, _ = invoke("--policy")
    assert code == 0 and "speculative_config.num_speculative_tokens" in out
    assert invoke("--policy", "--", "-tp", "1")[0] == EXIT_USAGE
