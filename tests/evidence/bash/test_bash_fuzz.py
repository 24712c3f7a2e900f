"""Property-based fuzzing of the static bash evaluator.

Random token soups and mutations of launcher-like scripts must either
evaluate or raise :class:`~provenance.errors.InputError` (the one documented
error) — never another exception, never a hang: the evaluator's step budget, iteration,
call-depth and size caps bound every input (no per-example deadline: timing is
not what is tested).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from provenance.errors import InputError
from provenance.evidence.bash import LauncherResult, evaluate_launcher

PATH = "benchmarks/single_node/fixed_seq_len/fuzz.sh"
ENV = {
    "MODEL": "org/M",
    "TP": "2",
    "EP_SIZE": "2",
    "DP_ATTENTION": "true",
    "CONC": "64",
    "ISL": "8192",
    "OSL": "1024",
    "MAX_MODEL_LEN": "9472",
    "PORT": "8888",
}

SEED = r"""#!/usr/bin/env bash
source "$(dirname "$0")/../../benchmark_lib.sh"
check_env_vars MODEL TP CONC
DRAFT="org/Draft-EAGLE3"
if [[ -n "${MODEL_PATH:-}" ]]; then
  if [[ ! -d "$MODEL_PATH" || -z "$(ls -A "$MODEL_PATH" 2>/dev/null)" ]]; then
    hf download "$MODEL" --local-dir "$MODEL_PATH"
  fi
  DRAFT_PATH="/data/models/${DRAFT##*/}"
else
  export MODEL_PATH="$MODEL"
  DRAFT_PATH="$DRAFT"
fi
export VLLM_TIMEOUT=3600
if [ "${DP_ATTENTION}" = "true" ]; then
  PAR="--tensor-parallel-size=1 --data-parallel-size=$TP --enable-expert-parallel"
elif [ "$EP_SIZE" -gt 1 ]; then
  PAR="--tensor-parallel-size=$TP --enable-expert-parallel"
else
  PAR="--tensor-parallel-size=$TP"
fi
declare -A KMAP=(
  [8192:2:2:true:64]=2
  [1024:4:1:false:1]=4
)
K="${KMAP[${ISL}:${TP}:${EP_SIZE}:${DP_ATTENTION}:${CONC}]:-3}"
EXTRA=()
if [ "$CONC" -lt 64 ]; then EXTRA+=(--no-enable-chunked-prefill); fi
case "$PRECISION" in fp4) Q=fp4 ;; *) Q=auto ;; esac
CAP=4
while (( CAP < CONC )); do CAP=$((CAP * 2)); done
run() { local log="$1"; shift; vllm serve "$MODEL_PATH" --port $PORT $PAR "$@" > "$log" 2>&1 & }
run /tmp/server.log \
  --max-num-batched-tokens "$((ISL * 2 ))" \
  --max-cudagraph-capture-size $CAP \
  --quantization $Q "${EXTRA[@]}" \
  --speculative-config "{\"model\": \"$DRAFT_PATH\", \"num_speculative_tokens\": $K}" \
  --attention-config '{"indexer_kv_dtype": "fp8"}'
wait_for_server_ready --port "$PORT"
"""

TOKENS = [
    " ",
    "\n",
    ";",
    "&",
    "&&",
    "||",
    "|",
    "(",
    ")",
    "{",
    "}",
    "[",
    "]",
    "[[",
    "]]",
    "((",
    "))",
    "$",
    "${",
    "$(",
    "$((",
    "`",
    "'",
    '"',
    "\\",
    "\\\n",
    "#",
    "=",
    "+=",
    "-",
    ":-",
    ":=",
    "##",
    "%%",
    "*",
    "?",
    "!",
    "<",
    ">",
    ">>",
    "<<EOF\n",
    "\nEOF\n",
    "if",
    "then",
    "elif",
    "else",
    "fi",
    "while",
    "until",
    "do",
    "done",
    "for",
    "in",
    "case",
    "esac",
    ";;",
    "function",
    "local",
    "export",
    "declare -A",
    "return",
    "break",
    "exit",
    "eval",
    "source",
    "shift",
    "vllm serve",
    "X",
    "Y",
    "MAP",
    "ARR",
    "[@]",
    "0",
    "1",
    "64",
    "-gt",
    "-eq",
    "-z",
    "-n",
    "==",
    "!=",
    "true",
    "false",
    "echo",
    "f",
    "f()",
    "$X",
    "${X:-d}",
    "${#X}",
    "$@",
    "$1",
]


def check(script: str) -> None:
    try:
        result = evaluate_launcher(script, PATH, ENV)
    except InputError as exc:
        assert exc.location is not None
        assert exc.location.path
        return
    assert isinstance(result, LauncherResult)
    if result.served:
        assert result.argv is not None and result.argv[:2] == ["vllm", "serve"]
    else:
        assert result.argv is None


FUZZ = settings(
    max_examples=150,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@FUZZ
@given(st.lists(st.sampled_from(TOKENS), max_size=80))
def test_token_soup(tokens: list[str]) -> None:
    check("".join(tokens))


@FUZZ
@given(st.text(max_size=300))
def test_arbitrary_text(text: str) -> None:
    check(text)


@st.composite
def mutated(draw: st.DrawFn, seed: str) -> str:
    text = seed
    for _ in range(draw(st.integers(min_value=1, max_value=4))):
        size = len(text)
        start = draw(st.integers(min_value=0, max_value=size))
        end = draw(st.integers(min_value=start, max_value=min(size, start + 40)))
        action = draw(st.sampled_from(["delete", "duplicate", "insert", "replace"]))
        if action == "delete":
            text = text[:start] + text[end:]
        elif action == "duplicate":
            text = text[:end] + text[start:end] + text[end:]
        elif action == "insert":
            text = text[:start] + draw(st.sampled_from(TOKENS)) + text[start:]
        else:
            text = text[:start] + draw(st.sampled_from(TOKENS)) + text[end:]
    return text


def test_seed_evaluates_exactly() -> None:
    result = evaluate_launcher(SEED, PATH, ENV)
    assert result.partial == []
    assert result.argv is not None
    assert "--data-parallel-size=2" in result.argv
    assert '{"model": "org/M", "num_speculative_tokens": 2}' not in result.argv
    assert '{"model": "org/Draft-EAGLE3", "num_speculative_tokens": 2}' in result.argv


@FUZZ
@given(mutated(SEED))
def test_mutated_launcher(script: str) -> None:
    check(script)


MIRROR = (
    Path(__file__).resolve().parents[3] / ".." / ".mirror" / "SemiAnalysisAI+InferenceX" / "repo"
)


@pytest.mark.corpus
def test_mutated_real_launchers() -> None:
    if not MIRROR.is_dir():
        pytest.skip("InferenceX mirror not present")
    git = pytest.importorskip("git")
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        repo = git.Repo(str(MIRROR), odbt=git.GitDB)
    tree = repo.commit("7a428f813f26fb3db96c4746f8ab72bd6a7b3a16").tree
    folder = tree / "benchmarks/single_node/fixed_seq_len"
    seeds = [blob.data_stream.read().decode() for blob in folder.blobs if blob.name.endswith(".sh")]
    assert seeds

    @settings(max_examples=200, suppress_health_check=list(HealthCheck))
    @given(st.sampled_from(seeds).flatmap(mutated))
    def run(script: str) -> None:
        check(script)

    run()
