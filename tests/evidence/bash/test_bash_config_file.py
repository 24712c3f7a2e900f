"""``vllm serve --config FILE`` with FILE written by a here-document of the launcher."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from provenance.evidence.bash import evaluate_launcher
from provenance.evidence.bash.config_file import config_flags, merge_config_file

ENV = {"MODEL": "org/M", "TP": "4", "ISL": "1024", "OSL": "1024", "PORT": "8888"}

LAUNCHER = """#!/usr/bin/env bash
if [ "$ISL" = "1024" ]; then
    LEN=$((ISL + OSL + 20))
else
    LEN=10240
fi
cat > config.yaml << EOF
kv-cache-dtype: fp8
compilation-config: '{"pass_config":{"fuse_allreduce_rms":true}}'
no-enable-prefix-caching: true
enforce-eager: false
max-num-batched-tokens: 8192
max-model-len: $LEN
price: \\$5
EOF
vllm serve $MODEL --port $PORT --config config.yaml --max-num-batched-tokens 4096 -tp $TP
"""


def _merged(script: str, env: dict[str, str] | None = None) -> tuple[list[str], list[str]]:
    result = evaluate_launcher(script, "t.sh", env or ENV)
    argv, markers = merge_config_file(result, "t.sh")
    return argv, [f"{m.construct_name}: {m.detail}" for m in markers]


def test_config_keys_become_flags_before_the_command_line() -> None:
    argv, markers = _merged(LAUNCHER)
    assert markers == []
    assert argv == [
        "vllm",
        "serve",
        "org/M",
        "--kv-cache-dtype",
        "fp8",
        "--compilation-config",
        '{"pass_config":{"fuse_allreduce_rms":true}}',
        "--no-enable-prefix-caching",
        "--max-num-batched-tokens",
        "8192",
        "--max-model-len",
        "2068",
        "--price",
        "$5",
        "--port",
        "8888",
        # the command line overrides the file: argparse keeps the last value
        "--max-num-batched-tokens",
        "4096",
        "-tp",
        "4",
    ]


def test_quoted_delimiter_keeps_the_body_literal() -> None:
    script = "cat > c.yaml <<'EOF'\nmax-model-len: $LEN\nEOF\nvllm serve m --config=c.yaml\n"
    argv, markers = _merged(script)
    assert argv == ["vllm", "serve", "m", "--max-model-len", "$LEN"]
    assert markers == []


def test_unprovable_variable_is_partial() -> None:
    script = "cat > c.yaml <<EOF\nmax-model-len: $(compute)\nEOF\nvllm serve m --config c.yaml\n"
    argv, markers = _merged(script)
    assert argv[:4] == ["vllm", "serve", "m", "--max-model-len"]
    assert argv[4].startswith("<unevaluated:")
    assert [m.split(":")[0] for m in markers] == ["command-substitution"]


def test_backquotes_in_a_body_are_holes() -> None:
    script = "cat > c.yaml <<EOF\nx: `date`\ny: \\`q\\`\nEOF\nvllm serve m --config c.yaml\n"
    result = evaluate_launcher(script, "t.sh", ENV)
    assert "<unevaluated:backticks" in result.heredocs[0].content
    assert [m.construct_name for m in result.heredocs[0].content_partial] == ["backticks"]


def test_file_not_written_by_the_script_is_dropped_and_partial() -> None:
    argv, markers = _merged("vllm serve m --config /etc/c.yaml --port 1\n")
    assert argv == ["vllm", "serve", "m", "--port", "1"]
    assert markers == [
        "config-file: --config /etc/c.yaml: no here-document of the script writes it "
        "before vllm serve; its flags are unknown"
    ]


def test_file_written_after_serve_does_not_count() -> None:
    script = "vllm serve m --config c.yaml\ncat > c.yaml <<EOF\na: 1\nEOF\n"
    argv, markers = _merged(script)
    assert argv == ["vllm", "serve", "m"]
    assert markers and markers[0].startswith("config-file: --config c.yaml: no here-document")


def test_branch_dependent_files_are_partial() -> None:
    script = (
        "if [ -f /etc/x ]; then\ncat > c.yaml <<EOF\na: 1\nEOF\nelse\n"
        "cat > c.yaml <<EOF\na: 2\nEOF\nfi\nvllm serve m --config c.yaml\n"
    )
    argv, markers = _merged(script)
    assert argv == ["vllm", "serve", "m", "--a", "2"]
    assert any("written by several here-documents" in m for m in markers)


def test_not_a_mapping_is_dropped() -> None:
    script = "cat > c.yaml <<EOF\n- a\nEOF\nvllm serve m --config c.yaml -tp 2\n"
    argv, markers = _merged(script)
    assert argv == ["vllm", "serve", "m", "-tp", "2"]
    assert markers == [
        "config-file: --config c.yaml: it is not a YAML mapping; its flags are unknown"
    ]


def test_no_positional_model_inserts_after_serve() -> None:
    script = "cat > c.yaml <<EOF\nmodel: org/M\nEOF\nvllm serve --config c.yaml -tp 2\n"
    argv, _ = _merged(script)
    assert argv == ["vllm", "serve", "--model", "org/M", "-tp", "2"]


_KEY = st.from_regex(r"[a-z][a-z0-9-]{0,15}", fullmatch=True)
_SCALAR = st.one_of(
    st.booleans(), st.integers(), st.text(st.characters(codec="ascii", exclude_categories=["Cc"]))
)


@given(st.dictionaries(_KEY, st.one_of(_SCALAR, st.lists(st.integers(), max_size=3))))
def test_config_flags_spell_each_kept_key_in_file_order(data: dict[str, object]) -> None:
    words, notes = config_flags(data, "c.yaml")
    assert notes == []
    pos = 0
    for key, value in data.items():
        if value is False or value == []:
            continue  # vLLM drops false booleans and empty lists
        assert words[pos] == f"--{key}"
        pos += 1
        if value is True:
            continue
        values = value if isinstance(value, list) else [value]
        assert words[pos : pos + len(values)] == [str(v) for v in values]
        pos += len(values)
    assert pos == len(words)


_BODY = st.text(st.characters(codec="utf-8", exclude_characters="\x00"), max_size=200)


@given(_BODY)
def test_quoted_heredoc_content_is_the_body(body: str) -> None:
    lines = [line for line in body.split("\n") if line.strip() != "EOF"]
    text = "\n".join(lines)
    script = f"cat > c.yaml <<'EOF'\n{text}\nEOF\n"
    try:
        result = evaluate_launcher(script, "t.sh", ENV)
    except Exception as exc:  # refused text (InputError) is fine; nothing else is
        assert type(exc).__name__ == "InputError"
        return
    if result.heredocs:
        assert result.heredocs[0].content == result.heredocs[0].body


@given(st.text(st.characters(codec="ascii", exclude_characters="$`\\\x00\r"), max_size=200))
def test_plain_unquoted_heredoc_content_is_the_body(body: str) -> None:
    lines = [line for line in body.split("\n") if line.strip() != "EOF"]
    script = "cat > c.yaml <<EOF\n" + "\n".join(lines) + "\nEOF\n"
    result = evaluate_launcher(script, "t.sh", ENV)
    if result.heredocs:
        assert result.heredocs[0].content == result.heredocs[0].body


_MIRROR = Path(__file__).resolve().parents[4] / ".mirror" / "SemiAnalysisAI+InferenceX" / "repo"
HEAD_843 = "843c6254ff69b567f772f6a5fd97675af3d04431"


@pytest.mark.corpus
def test_real_gptoss_b200_launcher_config_file() -> None:
    if not (_MIRROR / "objects").is_dir():
        pytest.skip(f"InferenceX mirror not found at {_MIRROR}")
    path = "benchmarks/single_node/fixed_seq_len/deprecated/gptoss_fp4_b200.sh"
    script = subprocess.run(
        ["git", f"--git-dir={_MIRROR}", "show", f"{HEAD_843}:{path}"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    env = {
        **ENV,
        "MODEL": "openai/gpt-oss-120b",
        "TP": "8",
        "CONC": "4",
        "MAX_MODEL_LEN": "2048",
        "RANDOM_RANGE_RATIO": "0.8",
        "RESULT_FILENAME": "r",
        "EVAL_ONLY": "false",
        "RUN_EVAL": "false",
    }
    result = evaluate_launcher(script, path, env)
    argv, markers = merge_config_file(result, path)
    assert markers == []
    assert "--config" not in argv
    flags = argv[3:]
    assert flags[: flags.index("--host")] == [
        "--kv-cache-dtype",
        "fp8",
        "--compilation-config",
        '{"pass_config":{"fuse_allreduce_rms":true,"eliminate_noops":true}}',
        "--no-enable-prefix-caching",
        "--max-cudagraph-capture-size",
        "2048",
        "--max-num-batched-tokens",
        "8192",
        "--max-model-len",
        "2068",
    ]
