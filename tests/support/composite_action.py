"""Runs a composite action's steps the way the GitHub runner does: each ``run:`` step in
order with bash (``bash --noprofile --norc -eo pipefail``), expressions substituted by
:mod:`github_expressions`, a fresh ``GITHUB_OUTPUT`` per step read back into the ``steps``
context, one job summary, and the action's ``outputs`` evaluated at the end. ``uses:``
steps are not run; their resolved ``with:`` inputs are recorded for the test to check."""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from github_expressions import Contexts, StepRecord, condition, substitute

from provenance.safe_yaml import load_yaml_text


@dataclass
class StepRun:
    name: str
    ran: bool
    returncode: int | None = None
    stdout: str = ""
    stderr: str = ""
    uses: str | None = None
    with_inputs: dict[str, str] = field(default_factory=dict)


@dataclass
class ActionRun:
    steps: list[StepRun]
    outputs: dict[str, str]
    summary: str
    failed: bool

    def step(self, name: str) -> StepRun:
        (found,) = [s for s in self.steps if s.name == name]
        return found


def _outputs_file(path: Path) -> dict[str, str]:
    """``name=value`` lines and ``name<<DELIM`` … ``DELIM`` blocks, as the runner reads."""
    values: dict[str, str] = {}
    lines = path.read_text(encoding="utf-8").splitlines()
    index = 0
    while index < len(lines):
        line = lines[index]
        index += 1
        if not line:
            continue
        block = re.fullmatch(r"([^=<]+)<<(.+)", line)
        if block:
            name, delimiter = block.groups()
            end = lines.index(delimiter, index)
            values[name] = "\n".join(lines[index:end])
            index = end + 1
            continue
        name, sep, value = line.partition("=")
        if not sep:
            raise ValueError(f"not an output line in {path}: {line!r}")
        values[name] = value
    return values


def _text_map(raw: object, what: str) -> dict[str, str]:
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise ValueError(f"{what} is not a mapping")
    return {str(k): "" if v is None else str(v) for k, v in raw.items()}


def pr_event(number: int, base: str, head: str) -> dict[str, object]:
    """The ``pull_request`` event of vllm-project/recipes PR ``number`` from ``base`` to
    ``head`` (what ``github.event`` holds for a ``synchronize``)."""
    return {
        "action": "synchronize",
        "number": number,
        "pull_request": {"number": number, "base": {"sha": base}, "head": {"sha": head}},
        "repository": {"full_name": "vllm-project/recipes"},
    }


def run_composite_action(
    action_dir: Path,
    *,
    inputs: Mapping[str, str],
    event: Mapping[str, object],
    workspace: Path,
    runner_temp: Path,
    env: Mapping[str, str],
    repository: str,
    timeout: float = 900,
    after_step: Callable[[str, Mapping[str, str]], None] | None = None,
) -> ActionRun:
    """Run ``action_dir/action.yml`` for a ``pull_request`` event; ``after_step(name,
    outputs)`` is called after each ``run:`` step (a test's probe between steps)."""
    path = action_dir / "action.yml"
    action = load_yaml_text(path.read_text(encoding="utf-8"), str(path)).data
    assert isinstance(action, Mapping)
    runs = action["runs"]
    assert isinstance(runs, Mapping) and runs["using"] == "composite"
    declared = action["inputs"]
    assert isinstance(declared, Mapping)
    unknown = set(inputs) - set(declared)
    assert not unknown, f"not inputs of the action: {sorted(unknown)}"

    runner_temp.mkdir(parents=True, exist_ok=True)
    event_path = runner_temp / "event.json"
    event_path.write_text(json.dumps(event), encoding="utf-8")
    summary_path = runner_temp / "step_summary.md"
    summary_path.write_text("", encoding="utf-8")
    github: dict[str, object] = {
        "action_path": str(action_dir),
        "event": dict(event),
        "event_name": "pull_request",
        "repository": repository,
        "token": "ghs_not-a-real-token-the-test-never-calls-github",
        "workspace": str(workspace),
    }
    steps_raw = runs["steps"]
    assert isinstance(steps_raw, list)
    step_ids = frozenset(str(s["id"]) for s in steps_raw if isinstance(s, Mapping) and "id" in s)
    contexts = Contexts(inputs={}, github=github, steps={}, step_ids=step_ids, workspace=workspace)
    resolved: dict[str, str] = {}
    for name, spec in declared.items():
        assert isinstance(spec, Mapping)
        if name in inputs:
            resolved[str(name)] = inputs[name]
        else:
            default = spec.get("default", "")
            resolved[str(name)] = substitute("" if default is None else str(default), contexts)
    contexts.inputs = resolved

    base = {
        **env,
        "GITHUB_ACTIONS": "true",
        "GITHUB_ACTION_PATH": str(action_dir),
        "GITHUB_EVENT_NAME": "pull_request",
        "GITHUB_EVENT_PATH": str(event_path),
        "GITHUB_REPOSITORY": repository,
        "GITHUB_STEP_SUMMARY": str(summary_path),
        "GITHUB_WORKSPACE": str(workspace),
        "RUNNER_TEMP": str(runner_temp),
    }
    records: dict[str, StepRecord] = {}
    contexts.steps = records
    ran: list[StepRun] = []
    for number, step in enumerate(steps_raw):
        assert isinstance(step, Mapping)
        name = str(step.get("name", f"step {number}"))
        step_id = str(step.get("id", f"__step{number}"))
        if not condition(step.get("if"), contexts):
            records[step_id] = StepRecord("skipped")
            ran.append(StepRun(name, ran=False, uses=step.get("uses")))
            continue
        if "uses" in step:
            with_inputs = {
                k: substitute(v, contexts)
                for k, v in _text_map(step.get("with"), f"{name}: with").items()
            }
            records[step_id] = StepRecord("success")
            ran.append(StepRun(name, ran=True, uses=str(step["uses"]), with_inputs=with_inputs))
            continue
        assert step.get("shell") == "bash", f"{name}: every run step says shell: bash"
        script = substitute(str(step["run"]), contexts)
        step_env = {k: substitute(v, contexts) for k, v in _text_map(step.get("env"), name).items()}
        cwd = workspace / substitute(str(step.get("working-directory", ".")), contexts)
        output_path = runner_temp / f"output-{number}"
        output_path.write_text("", encoding="utf-8")
        script_path = runner_temp / f"step-{number}.sh"
        script_path.write_text(script, encoding="utf-8")
        done = subprocess.run(
            ["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script_path)],
            cwd=cwd,
            env={**base, **step_env, "GITHUB_OUTPUT": str(output_path)},
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        outcome = "success" if done.returncode == 0 else "failure"
        records[step_id] = StepRecord(outcome, _outputs_file(output_path))
        if outcome == "failure":
            contexts.job_failed = True
        ran.append(StepRun(name, True, done.returncode, done.stdout, done.stderr))
        if after_step is not None:
            after_step(name, records[step_id].outputs)

    outputs = {
        str(k): substitute(str(spec["value"]), contexts)
        for k, spec in _spec_map(action.get("outputs")).items()
    }
    return ActionRun(
        ran, outputs, summary_path.read_text(encoding="utf-8"), failed=contexts.job_failed
    )


def _spec_map(raw: object) -> Mapping[str, Mapping[str, object]]:
    assert isinstance(raw, Mapping)
    for spec in raw.values():
        assert isinstance(spec, Mapping) and "value" in spec
    return raw
