"""How the runner launcher's invocation of the script is read (``evidence.bash.runner``).

The differential test runs runner launchers that call ``bash`` directly; ``srun`` and
``docker`` are not in its sandbox, so the forms InferenceX runners use with them are
checked here against what those tools pass (srun: ``--export=ALL,X=v`` adds X to the
whole environment, without ``ALL`` only the listed names pass; docker: only ``-e``).
"""

from __future__ import annotations

import pytest

from provenance.evidence.bash.context import RunnerLauncher, runner_findings_for

SCRIPT = "benchmarks/single_node/fixed_seq_len/m_fp8_h200.sh"
ENV = {"MODEL": "org/M", "TP": "8", "IMAGE": "img:1"}


def _findings(body: str) -> tuple[set[str], dict[str, str]]:
    text = f'#!/usr/bin/bash\nS="{SCRIPT}"\n{body}\n'
    runner = RunnerLauncher(text, "runners/launch_x.sh", files=lambda p: p == SCRIPT, tree="t")
    found = runner_findings_for(runner, ENV, SCRIPT)
    return {m.construct_name for m in found.markers}, dict(found.engine_env)


@pytest.mark.parametrize(
    ("body", "engine"),
    [
        ('export VLLM_X=1\nsrun --jobid=1 --export=ALL bash "$S"', {"VLLM_X": "1"}),
        ('srun --jobid=1 --export=ALL,VLLM_X=2 bash "$S"', {"VLLM_X": "2"}),
        ('srun --export ALL,VLLM_X=2 bash "$S"', {"VLLM_X": "2"}),
        ('env VLLM_X=3 bash "$S"', {"VLLM_X": "3"}),
        ('VLLM_X=4 bash "$S"', {"VLLM_X": "4"}),
        ('docker run -e VLLM_X=5 --entrypoint=/bin/bash "$IMAGE" "$S"', {"VLLM_X": "5"}),
        (
            'export VLLM_X=6\ndocker run -e VLLM_X --entrypoint=/bin/bash "$IMAGE" "$S"',
            {"VLLM_X": "6"},
        ),
        ('if [[ -f "$S" ]]; then bash "$S"; else export VLLM_X=1; bash other.sh; fi', {}),
    ],
)
def test_engine_variables_passed_are_followed(body: str, engine: dict[str, str]) -> None:
    markers, env = _findings(body)
    assert markers == set()
    assert env == engine


@pytest.mark.parametrize(
    ("body", "construct"),
    [
        # docker passes only what -e names: the export does not reach the script,
        # and the scan keeps the export (a false positive, never a miss)
        ('export VLLM_X=1\ndocker run --entrypoint=/bin/bash "$IMAGE" "$S"', "runner-environment"),
        ('docker run --env-file vars --entrypoint=/bin/bash "$IMAGE" "$S"', "runner-invocation"),
        ('srun --export=NONE bash "$S"', "runner-invocation"),
        ('env -i bash "$S"', "runner-invocation"),
        ('sh "$S"', "runner-invocation"),
        ('bash --posix "$S"', "runner-invocation"),
        ('echo "$S"', "runner-invocation"),
        ('export VLLM_X="$(hostname)"\nbash "$S"', "runner-environment"),
        ('source ./site.sh\nbash "$S"', "source"),
        ('eval "$SETUP"\nbash "$S"', "eval"),
        ('export BASHOPTS\nbash "$S"', "runner-environment"),
        ('export PATH="/opt/wrap:$PATH"\nbash "$S"', "command-redefinition"),
        ('if [[ -n "$HOME" ]]; then export -f f; fi\nbash "$S"', "command-redefinition"),
    ],
)
def test_what_is_not_followed_is_named(body: str, construct: str) -> None:
    markers, _ = _findings(body)
    assert construct in markers


def test_a_hazard_after_the_invocation_or_in_a_substitution_is_not_on_the_path() -> None:
    markers, env = _findings('X=$(export PATH=/w:$PATH; echo)\nbash "$S"\nexport -f vllm')
    assert markers == set() and env == {}


def test_an_unreadable_runner_is_named() -> None:
    runner = RunnerLauncher("if then\n", "runners/launch_x.sh", tree="t")
    found = runner_findings_for(runner, ENV, SCRIPT)
    assert {m.construct_name for m in found.markers} == {"unreadable-context"}
