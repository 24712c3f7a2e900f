"""Bash constructs the static evaluator supports, one small script each.

Every script ends in a ``vllm serve`` command; the assertion is on the words
after ``vllm serve`` (after expansion, quote removal and word splitting).
"""

from __future__ import annotations

import pytest

from provenance.evidence.bash import LauncherResult, evaluate_launcher

PATH = "benchmarks/single_node/fixed_seq_len/model_fp4_b300.sh"


def evaluate(script: str, **env: str) -> LauncherResult:
    return evaluate_launcher(script, PATH, env)


def args_of(script: str, **env: str) -> list[str]:
    result = evaluate(script, **env)
    assert result.served, result
    assert result.argv is not None
    assert result.argv[:2] == ["vllm", "serve"]
    return result.argv[2:]


def constructs(result: LauncherResult) -> list[str]:
    return [m.construct_name for m in result.partial]


# --- quoting and word splitting -------------------------------------------------


def test_unquoted_variable_is_split_quoted_is_not() -> None:
    script = 'A="--x 1  --y"\nvllm serve $A "$A"\n'
    assert args_of(script) == ["--x", "1", "--y", "--x 1  --y"]


def test_single_quotes_are_literal_and_double_quotes_interpolate_with_escapes() -> None:
    script = (
        "K=3\n"
        "vllm serve --a '{\"x\": $K}' "
        '--b "{\\"method\\": \\"eagle3\\", \\"k\\": $K, \\"d\\": \\"\\$HOME\\"}"\n'
    )
    assert args_of(script) == [
        "--a",
        '{"x": $K}',
        "--b",
        '{"method": "eagle3", "k": 3, "d": "$HOME"}',
    ]


def test_backslash_escapes_and_ansi_c_strings() -> None:
    script = "vllm serve a\\ b $'tab\\there' \"q\\\\\"\n"
    assert args_of(script) == ["a b", "tab\there", "q\\"]


def test_line_continuations_join_one_command() -> None:
    script = "vllm serve m \\\n  --port 8000 \\\n  --x\n"
    assert args_of(script) == ["m", "--port", "8000", "--x"]


def test_empty_unquoted_expansion_disappears_quoted_stays() -> None:
    script = 'EMPTY=""\nvllm serve $EMPTY "$EMPTY" $UNSET x\n'
    assert args_of(script) == ["", "x"]


# --- parameter expansion ---------------------------------------------------------


@pytest.mark.parametrize(
    ("expr", "env", "expected"),
    [
        ("${X:-d}", {}, "d"),
        ("${X:-d}", {"X": ""}, "d"),
        ("${X-d}", {"X": ""}, ""),
        ("${X:-d}", {"X": "v"}, "v"),
        ("${X:+alt}", {"X": "v"}, "alt"),
        ("${X:+alt}", {}, ""),
        ("${#X}", {"X": "hello"}, "5"),
        ("${X##*/}", {"X": "org/sub/Name"}, "Name"),
        ("${X#*/}", {"X": "org/sub/Name"}, "sub/Name"),
        ("${X%%_*}", {"X": "model_fp4_b300"}, "model"),
        ("${X%_*}", {"X": "model_fp4_b300"}, "model_fp4"),
        ("${X%/}", {"X": "/data/models/"}, "/data/models"),
        ("${X/fp4/fp8}", {"X": "fp4_fp4"}, "fp8_fp4"),
        ("${X//fp4/fp8}", {"X": "fp4_fp4"}, "fp8_fp8"),
        ("${X:1:3}", {"X": "abcdef"}, "bcd"),
        ("${X^^}", {"X": "abc"}, "ABC"),
    ],
)
def test_parameter_expansions(expr: str, env: dict[str, str], expected: str) -> None:
    assert args_of(f'vllm serve "{expr}"\n', **env) == [expected]


def test_assign_default_expansion_sets_the_variable() -> None:
    script = ': "${PORT:=8888}"\nvllm serve --port $PORT\n'
    assert args_of(script) == ["--port", "8888"]


def test_dirname_and_basename_command_substitutions_are_evaluated() -> None:
    script = 'D="$(dirname "$0")"\nB=$(basename "$MODEL")\nvllm serve "$D" "$B"\n'
    assert args_of(script, MODEL="org/Name") == [
        "benchmarks/single_node/fixed_seq_len",
        "Name",
    ]


def test_printf_substitution_builds_json() -> None:
    script = (
        'CFG=$(printf \'{"cpu_bytes":%d,"lazy":%s}\' "$((2 * 1024))" true)\n'
        'vllm serve --kv-transfer-config "$CFG"\n'
    )
    assert args_of(script) == ["--kv-transfer-config", '{"cpu_bytes":2048,"lazy":true}']


# --- arithmetic -------------------------------------------------------------------


def test_arithmetic_expansion_and_command() -> None:
    script = (
        "N=$(( ISL * 2 ))\n"
        "C=4\n"
        "while (( C < CONC )); do C=$((C * 2)); done\n"
        "(( C > 2048 )) && C=2048\n"
        "(( M = CONC % 3, M++ ))\n"
        'vllm serve "$N" "$C" "$M" "$(( (CONC + TP - 1) / TP ))" "$((-7 / 2))"\n'
    )
    assert args_of(script, ISL="8192", CONC="100", TP="8") == ["16384", "128", "2", "13", "-3"]
    assert args_of(script, ISL="1", CONC="5000", TP="8")[1] == "2048"


# --- conditions ---------------------------------------------------------------------


CONDITIONS = r"""
if [[ "$MODEL" != /* ]]; then A=hub; else A=local; fi
if [ -z "$UNSET_VAR" ] && [ -n "$MODEL" ]; then B=yes; fi
if [[ $CONC -lt 64 || "$FORCE" == "1" ]]; then C=low
elif [ "$CONC" -ge 512 ]; then C=high
else C=mid; fi
[ "$TP" -eq 8 ] && D=eight || D=other
if ! [ "$EP_SIZE" -gt 1 ]; then E=noep; fi
if [[ ( "$X" == "a" ) ]]; then F=paren; fi
vllm serve "$A" "${B:-no}" "$C" "$D" "${E:-ep}" "${F:-none}"
"""


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        (
            {"MODEL": "org/M", "CONC": "4", "TP": "8", "EP_SIZE": "1", "X": "a"},
            ["hub", "yes", "low", "eight", "noep", "paren"],
        ),
        (
            {"MODEL": "/data/M", "CONC": "128", "TP": "4", "EP_SIZE": "4"},
            ["local", "yes", "mid", "other", "ep", "none"],
        ),
        (
            {"MODEL": "/data/M", "CONC": "1024", "TP": "4", "EP_SIZE": "4", "FORCE": "1"},
            ["local", "yes", "low", "other", "ep", "none"],
        ),
        (
            {"MODEL": "/data/M", "CONC": "1024", "TP": "4", "EP_SIZE": "4"},
            ["local", "yes", "high", "other", "ep", "none"],
        ),
    ],
)
def test_if_elif_else_and_test_operators(env: dict[str, str], expected: list[str]) -> None:
    assert args_of(CONDITIONS, **env) == expected


def test_case_statement() -> None:
    script = (
        'case "$PRECISION" in\n'
        "  fp4|nvfp4) Q=modelopt_fp4 ;;\n"
        "  fp8*) Q=fp8 ;;\n"
        "  *) Q=none ;;\n"
        "esac\n"
        "vllm serve --quantization $Q\n"
    )
    assert args_of(script, PRECISION="nvfp4") == ["--quantization", "modelopt_fp4"]
    assert args_of(script, PRECISION="fp8_e4m3") == ["--quantization", "fp8"]
    assert args_of(script, PRECISION="bf16") == ["--quantization", "none"]


# --- arrays and maps ------------------------------------------------------------------


def test_indexed_arrays_append_and_splice() -> None:
    script = (
        "ARGS=(--port \"$PORT\" --name 'a b')\n"
        'if [ "$EP_SIZE" -gt 1 ]; then ARGS+=(--enable-expert-parallel); fi\n'
        "EMPTY=()\n"
        'vllm serve "${ARGS[@]}" "${EMPTY[@]}" --n "${#ARGS[@]}" --first "${ARGS[0]}"\n'
    )
    assert args_of(script, PORT="8000", EP_SIZE="2") == [
        "--port",
        "8000",
        "--name",
        "a b",
        "--enable-expert-parallel",
        "--n",
        "5",
        "--first",
        "--port",
    ]


def test_command_held_in_an_array_is_found() -> None:
    script = 'CMD=(vllm serve "$MODEL" --tp "$TP")\nCMD+=(--x)\n"${CMD[@]}" > log 2>&1 &\n'
    assert args_of(script, MODEL="m", TP="2") == ["m", "--tp", "2", "--x"]


MAP_SCRIPT = r"""
declare -A SPEC_MAP=(
  # comment inside the map
  [8192:2:1:false:4]=4
  [8192:2:2:true:128]=2
  ["1024:8:1:false:1"]=5
)
K="${SPEC_MAP[${ISL}:${TP}:${EP_SIZE}:${DP_ATTENTION}:${CONC}]:-3}"
vllm serve --speculative-config "{\"num_speculative_tokens\": $K}"
"""


@pytest.mark.parametrize(
    ("isl", "tp", "ep", "dpa", "conc", "k"),
    [
        ("8192", "2", "1", "false", "4", "4"),
        ("8192", "2", "2", "true", "128", "2"),
        ("1024", "8", "1", "false", "1", "5"),
        ("8192", "2", "1", "false", "8", "3"),
    ],
)
def test_associative_map_lookup_with_default(
    isl: str, tp: str, ep: str, dpa: str, conc: str, k: str
) -> None:
    argv = args_of(MAP_SCRIPT, ISL=isl, TP=tp, EP_SIZE=ep, DP_ATTENTION=dpa, CONC=conc)
    assert argv == ["--speculative-config", f'{{"num_speculative_tokens": {k}}}']


def test_subscript_assignment_to_map_and_array() -> None:
    script = (
        'declare -A M\nM[$KEY]="v w"\nA[2]=x\nvllm serve "${M[$KEY]}" "${A[2]}" "${A[0]:-none}"\n'
    )
    assert args_of(script, KEY="k1") == ["v w", "x", "none"]


# --- functions, loops, scopes -----------------------------------------------------------


def test_functions_locals_and_return_status() -> None:
    script = r"""
pick() {
  local mode="$1"
  if [ "$mode" = "ep" ]; then
    RESULT="--enable-expert-parallel"
    return 0
  fi
  RESULT=""
  return 1
}
mode=outer
if pick ep; then OK=yes; fi
vllm serve $RESULT "$mode" "$OK"
"""
    assert args_of(script) == ["--enable-expert-parallel", "outer", "yes"]


def test_server_started_inside_a_called_function_and_pipeline() -> None:
    script = 'start() {\n  vllm serve "$1" --port "$PORT" 2>&1 | tee server.log &\n}\nstart m\n'
    assert args_of(script, PORT="1") == ["m", "--port", "1"]


def test_bounded_for_loop_is_unrolled() -> None:
    script = 'S=""\nfor n in 1 2 4; do S="${S}${n},"; done\nvllm serve --sizes "${S%,}"\n'
    assert args_of(script) == ["--sizes", "1,2,4"]


def test_c_style_loop_and_break() -> None:
    script = (
        "for (( i = 1; i < 100; i *= 2 )); do\n"
        "  if (( i > CONC )); then break; fi\n"
        "done\n"
        "vllm serve --c $i\n"
    )
    assert args_of(script, CONC="10") == ["--c", "16"]


def test_set_x_set_e_trap_and_groups_are_ignored() -> None:
    script = (
        "set -euo pipefail\nset -x\ntrap 'echo bye' EXIT\n"
        "{ set +x; } 2>/dev/null\n( SUB=1 )\nvllm serve ${SUB:-main}\n"
    )
    assert args_of(script) == ["main"]


# --- environment -------------------------------------------------------------------------------


def test_env_reports_script_exports_and_prefixes_only() -> None:
    script = (
        "export VLLM_A=1\n"
        "B=2\n"
        "export B\n"
        "NOT_EXPORTED=3\n"
        "export LATER\n"
        "LATER=4\n"
        "PYTHONNOUSERSITE=1 vllm serve m\n"
    )
    result = evaluate(script, FROM_WORKFLOW="x")
    assert result.env == {"VLLM_A": "1", "B": "2", "LATER": "4", "PYTHONNOUSERSITE": "1"}
    assert result.partial == []


def test_env_wrapper_and_offline_prefix_array() -> None:
    script = 'OFF=(env HF_HUB_OFFLINE=1)\n"${OFF[@]}" vllm serve m --x\n'
    result = evaluate(script)
    assert result.argv == ["vllm", "serve", "m", "--x"]
    assert result.env == {"HF_HUB_OFFLINE": "1"}


def test_no_serve_command() -> None:
    result = evaluate("echo vllm serve is only text\npython3 -m other.server --port 1\n")
    assert not result.served
    assert result.argv is None


# --- what cannot be evaluated is marked, never guessed --------------------------------------


def test_command_substitution_reaching_argv_is_marked() -> None:
    script = 'GPU=$(nvidia-smi --query-gpu=name --format=csv)\nvllm serve --name "gpu-$GPU"\n'
    result = evaluate(script)
    assert result.argv == ["vllm", "serve", "--name", "gpu-<unevaluated:command-substitution>"]
    assert [(m.construct_name, m.line) for m in result.partial] == [("command-substitution", 1)]


def test_unknown_condition_with_equal_branches_costs_nothing() -> None:
    script = (
        'if [[ ! -d "$MODEL_PATH" || -z "$(ls -A "$MODEL_PATH")" ]]; then\n'
        '  hf download "$MODEL" --local-dir "$MODEL_PATH"\n'
        "fi\n"
        'vllm serve "$MODEL_PATH"\n'
    )
    result = evaluate(script, MODEL="m", MODEL_PATH="/data/m")
    assert result.argv == ["vllm", "serve", "/data/m"]
    assert result.partial == []


def test_unknown_condition_with_different_branches_marks_the_word() -> None:
    script = 'if [ -f /etc/fast ]; then G=0.95; else G=0.9; fi\nvllm serve --gmu "$G" --tp 2\n'
    result = evaluate(script)
    assert result.argv == ["vllm", "serve", "--gmu", "<unevaluated:filesystem-test>", "--tp", "2"]
    assert constructs(result) == ["filesystem-test"]
    assert result.partial[0].line == 1


def test_serve_only_under_unknown_condition_is_marked() -> None:
    script = "if grep -q x /proc/cpuinfo; then\n  vllm serve m\nfi\n"
    result = evaluate(script)
    assert result.served
    assert constructs(result) == ["command-status"]


def test_exiting_branch_is_dropped() -> None:
    script = "if ! command -v vllm; then echo missing; exit 1; fi\nvllm serve m\n"
    result = evaluate(script)
    assert result.argv == ["vllm", "serve", "m"]
    assert result.partial == []


def test_exit_before_serve_means_not_served() -> None:
    script = 'if [ "$TP" -ne 8 ]; then echo "tp must be 8"; exit 1; fi\nvllm serve m\n'
    assert not evaluate(script, TP="4").served
    assert evaluate(script, TP="8").served


def test_loop_that_cannot_be_followed_makes_its_variables_holes() -> None:
    script = (
        "N=1\n"
        "for f in $(ls /models); do N=$((N + 1)); done\n"
        "K=fixed\n"
        'vllm serve --n "$N" --k "$K"\n'
    )
    result = evaluate(script)
    assert result.argv == ["vllm", "serve", "--n", "<unevaluated:loop>", "--k", "fixed"]
    assert constructs(result) == ["loop"]


def test_eval_and_unknown_source_are_always_marked() -> None:
    script = 'source ./other.sh\neval "$EXTRA"\nvllm serve m\n'
    result = evaluate(script)
    assert result.argv == ["vllm", "serve", "m"]
    assert constructs(result) == ["source", "eval"]
    assert result.sourced == ["./other.sh"]


def test_known_helper_is_followed_when_given() -> None:
    helper = 'setup() { export HELPER_FLAG=on; SERVE_EXTRA="--from-helper"; }\n'
    script = 'source "$(dirname "$0")/helper.sh"\nsetup\nvllm serve m $SERVE_EXTRA\n'
    result = evaluate_launcher(script, PATH, {}, helpers={"helper.sh": helper})
    assert result.argv == ["vllm", "serve", "m", "--from-helper"]
    # Exports made by a sourced helper are not the launcher's own.
    assert result.env == {}
    assert result.partial == []


def test_benchmark_lib_facts_when_not_followed() -> None:
    script = (
        'source "$(dirname "$0")/../../benchmark_lib.sh"\n'
        'if [ "$EVAL_ONLY" = "true" ]; then\n'
        '  setup_eval_context; MAX_MODEL_LEN="$EVAL_MAX_MODEL_LEN"\n'
        "fi\n"
        "vllm serve m --port $PORT --max-model-len $MAX_MODEL_LEN\n"
    )
    plain = evaluate(script, MAX_MODEL_LEN="9472", EVAL_ONLY="false")
    assert plain.argv == ["vllm", "serve", "m", "--port", "8888", "--max-model-len", "9472"]
    assert plain.partial == []
    eval_only = evaluate(script, MAX_MODEL_LEN="9472", EVAL_ONLY="true")
    assert eval_only.argv is not None
    assert eval_only.argv[-1] == "<unevaluated:helper-function>"
    assert constructs(eval_only) == ["helper-function"]


def test_multiple_serve_commands_are_reported() -> None:
    script = "for k in 1 2; do\n  vllm serve m --k $k &\ndone\n"
    result = evaluate(script)
    assert result.argv == ["vllm", "serve", "m", "--k", "1"]
    assert constructs(result) == ["multiple-serve"]


def test_loop_havoc_covers_variables_set_by_called_functions() -> None:
    script = (
        "bump() { COUNT=$((COUNT + 1)); }\n"
        "COUNT=0\n"
        "for f in $(ls /models); do bump; done\n"
        'vllm serve --count "$COUNT"\n'
    )
    result = evaluate(script)
    assert result.argv == ["vllm", "serve", "--count", "<unevaluated:loop>"]


@pytest.mark.parametrize(("ep", "aiter"), [("4", "0"), ("1", "1")])
def test_membership_test_through_printf_grep_pipeline(ep: str, aiter: str) -> None:
    script = (
        "ARGS=(--tensor-parallel-size 4)\n"
        'if [ "$EP_SIZE" -gt 1 ]; then ARGS+=(--enable-expert-parallel); fi\n'
        "if printf '%s\\n' \"${ARGS[@]}\" | grep -qxF -- '--enable-expert-parallel'; then\n"
        "  export USE_AITER=0\n"
        "else\n"
        "  export USE_AITER=1\n"
        "fi\n"
        'vllm serve m "${ARGS[@]}"\n'
    )
    result = evaluate(script, EP_SIZE=ep)
    assert result.env == {"USE_AITER": aiter}
    assert result.partial == []


AGENTIC = r"""
source "$(dirname "$0")/../../benchmark_lib.sh"
OFFLOAD=()
if require_agentic_kv_offload_backend vllm-simple; then
  export VLLM_USE_SIMPLE_KV_OFFLOAD=1
  OFFLOAD=(--kv-offloading-size "$TOTAL_CPU_DRAM_GB")
fi
vllm serve m ${MAX_MODEL_LEN:+--max-model-len "$MAX_MODEL_LEN"} "${OFFLOAD[@]}"
"""


def test_benchmark_lib_facts_for_agentic_offload_checks() -> None:
    path = "benchmarks/single_node/agentic/model_fp4_b300.sh"
    base = {"MAX_MODEL_LEN": "9472", "TOTAL_CPU_DRAM_GB": "512"}
    dram = evaluate_launcher(
        AGENTIC, path, {**base, "KV_OFFLOADING": "dram", "KV_OFFLOAD_BACKEND": "vllm-simple"}
    )
    assert dram.argv == ["vllm", "serve", "m", "--kv-offloading-size", "512"]
    assert dram.env == {"VLLM_USE_SIMPLE_KV_OFFLOAD": "1"}
    assert dram.partial == []
    none = evaluate_launcher(AGENTIC, path, {**base, "KV_OFFLOADING": "none"})
    assert none.argv == ["vllm", "serve", "m"]
    # An invalid offload setting makes the library exit before serving.
    assert not evaluate_launcher(AGENTIC, path, {**base, "KV_OFFLOADING": "hbm"}).served


def test_prefix_assignment_on_a_function_reaches_its_serve_command() -> None:
    script = "start() { vllm serve m; }\nVLLM_X=1 start\nvllm serve second\n"
    result = evaluate(script)
    assert result.argv == ["vllm", "serve", "m"]
    assert result.env == {"VLLM_X": "1"}


def test_default_operand_is_expanded_only_when_used() -> None:
    script = 'X=set\nY="${X:-$(date)}"\nvllm serve "$Y"\n'
    result = evaluate(script)
    assert result.argv == ["vllm", "serve", "set"]
    assert result.partial == []


def test_custom_ifs() -> None:
    newline_ifs = "IFS=$'\\n'\nL=\"a b\nc\"\nvllm serve $L\n"
    assert args_of(newline_ifs) == ["a b", "c"]
    comma_ifs = 'IFS=,\nL="a b,c"\nvllm serve $L --x\n'
    result = evaluate(comma_ifs)
    assert result.argv == ["vllm", "serve", "<unevaluated:ifs>", "--x"]
    assert constructs(result) == ["ifs"]


def test_multi_line_double_quoted_string_keeps_its_newlines() -> None:
    script = 'CFG="{\n  \\"k\\": $K,\n  \\"m\\": 1\n}"\nvllm serve --cfg "$CFG"\n'
    assert args_of(script, K="3") == ["--cfg", '{\n  "k": 3,\n  "m": 1\n}']


def test_loop_havoc_covers_unset_and_assign_default() -> None:
    script = (
        'A=1\nB=\nfor f in $(ls /models); do unset A; : "${B:=x}"; done\nvllm serve "$A" "$B"\n'
    )
    result = evaluate(script)
    assert result.argv == ["vllm", "serve", "<unevaluated:loop>", "<unevaluated:loop>"]
