"""Conditional values: a value set differently on the paths of a run-time condition.

The evaluator follows both paths of a condition it cannot decide (a host probe) and
keeps a variable set to known values on each (or unset on one) as the set of values it
can take; ``evaluate_launcher(conditional=True)`` lists the argv and env of every
combination of the conditions' outcomes. What is not followed exactly stays a hole.
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from provenance.evidence.bash import evaluate_launcher
from provenance.evidence.bash.launcher import LauncherResult
from provenance.model.record import RuntimeCondition

PATH = "benchmarks/single_node/gptoss_fp4_mi325x.sh"
PROBE = """\
version=`rocm-smi --showfw | grep MEC | head -n 1 |  awk '{print $NF}'`
if [[ "$version" == "" || $version -lt 177 ]]; then
  export HSA_NO_SCRATCH_RECLAIM=1
fi
"""
SERVE = 'vllm serve "$MODEL" --tensor-parallel-size=$TP\n'
ENV = {"MODEL": "openai/gpt-oss-120b", "TP": "2"}


def run(script: str, conditional: bool = True) -> LauncherResult:
    return evaluate_launcher(script, PATH, ENV, conditional=conditional)


def envs(result: LauncherResult) -> list[dict[str, str]]:
    return [a.env for a in result.alternatives]


def test_the_firmware_probe_gives_both_values_and_no_partial_marker() -> None:
    result = run(PROBE + "export VLLM_ROCM_USE_AITER=1\n" + SERVE)
    assert result.partial == []
    assert result.conditions == [
        RuntimeCondition(text='[[ "$version" == "" || $version -lt 177 ]]', path=PATH, line=2)
    ]
    assert envs(result) == [
        {"HSA_NO_SCRATCH_RECLAIM": "1", "VLLM_ROCM_USE_AITER": "1"},
        {"VLLM_ROCM_USE_AITER": "1"},
    ]
    assert [a.outcomes for a in result.alternatives] == [(True,), (False,)]
    assert {tuple(a.argv) for a in result.alternatives} == {
        ("vllm", "serve", "openai/gpt-oss-120b", "--tensor-parallel-size=2")
    }


def test_without_conditional_values_the_probe_is_a_hole_as_before() -> None:
    result = run(PROBE + SERVE, conditional=False)
    assert result.env == {"HSA_NO_SCRATCH_RECLAIM": "<unevaluated:backticks>"}
    assert [(m.construct_name, m.line) for m in result.partial] == [("backticks", 1)]
    assert result.alternatives == []


def test_a_probe_used_only_in_a_condition_whose_paths_agree_costs_nothing() -> None:
    script = PROBE.replace("export HSA_NO_SCRATCH_RECLAIM=1", "echo old firmware") + SERVE
    result = run(script)
    assert result.partial == [] and result.alternatives == [] and result.env == {}


def test_nested_and_elif_conditions_give_every_value_used_in_the_argv() -> None:
    script = """\
v=$(rocm-smi)
if [[ $v -lt 177 ]]; then
  SEQS=128
  if [[ $v -lt 100 ]]; then SEQS=64; fi
elif [[ $v -lt 300 ]]; then
  SEQS=256
else
  SEQS=512
fi
vllm serve "$MODEL" --max-num-seqs "$SEQS" --x=$SEQS
"""
    result = run(script)
    assert result.partial == []
    assert len(result.conditions) == 3
    seen = {(a.argv[4], a.argv[5]) for a in result.alternatives}
    assert seen == {(v, f"--x={v}") for v in ("64", "128", "256", "512")}


def test_an_operator_on_a_conditional_value_is_a_hole() -> None:
    for use in ('"${HSA_NO_SCRATCH_RECLAIM:-0}"', '"${HSA_NO_SCRATCH_RECLAIM+set}"', "$((X+1))"):
        script = PROBE + "X=$HSA_NO_SCRATCH_RECLAIM\n" + f'vllm serve "$MODEL" --v {use}\n'
        result = run(script)
        assert [m.construct_name for m in result.partial] == ["backticks"], use
        assert result.alternatives == []


def test_a_value_unset_on_a_path_unquoted_in_the_argv_is_a_hole() -> None:
    script = PROBE.replace("export HSA_NO_SCRATCH_RECLAIM=1", "EXTRA=--enforce-eager")
    result = run(script + 'vllm serve "$MODEL" $EXTRA\n')
    assert [m.construct_name for m in result.partial] == ["backticks"]
    quoted = run(script + 'vllm serve "$MODEL" --extra "$EXTRA"\n')
    assert quoted.partial == []
    assert {a.argv[-1] for a in quoted.alternatives} == {"--enforce-eager", ""}


def test_a_status_joined_from_a_condition_is_no_condition_of_its_own() -> None:
    script = 'v=$(rocm-smi)\n[[ $v -lt 177 ]] && S=1 || S=2\nvllm serve "$MODEL" --s "$S"\n'
    result = run(script)
    assert [m.construct_name for m in result.partial] == ["command-substitution"]
    assert result.alternatives == []


def test_a_case_on_a_probe_names_its_pattern() -> None:
    script = """\
arch=$(rocm-smi)
case "$arch" in
  gfx942) export VLLM_ROCM_USE_AITER=1 ;;
esac
vllm serve "$MODEL"
"""
    result = run(script)
    assert result.partial == []
    assert result.conditions[0].text == 'case "$arch" in gfx942)'
    assert envs(result) == [{"VLLM_ROCM_USE_AITER": "1"}, {}]


def test_export_attributes_that_differ_by_path_make_a_later_assignment_a_hole() -> None:
    script = PROBE + "HSA_NO_SCRATCH_RECLAIM=2\n" + SERVE
    result = run(script)
    assert [m.construct_name for m in result.partial] == ["backticks"]


@given(
    values=st.lists(
        st.one_of(st.none(), st.from_regex(r"[a-z0-9]{1,4}", fullmatch=True)),
        min_size=2,
        max_size=4,
    )
)
def test_each_branch_value_is_one_alternative(values: list[str | None]) -> None:
    """An if/elif/else chain of probes: the alternatives are exactly the branch values."""
    lines = ["v=$(rocm-smi)"]
    for index, value in enumerate(values):
        head = "if" if index == 0 else "elif" if index < len(values) - 1 else "else"
        test = f" [[ $v == {index} ]]; then" if head != "else" else ""
        body = f"export E={value}" if value is not None else "unset E"
        lines.append(f"{head}{test}\n  {body}")
    lines.append("fi")
    result = run("\n".join(lines) + "\n" + SERVE)
    assert result.partial == []
    runs = [a.env for a in result.alternatives] or [result.env]
    got = {env.get("E") for env in runs}
    assert got == set(values)
