"""action.yml and .pre-commit-hooks.yaml: structure, shell syntax, no script injection."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import click
import pytest

from provenance.cli.audit import audit
from provenance.safe_yaml import load_yaml

ROOT = Path(__file__).resolve().parents[2]
ACTION = ROOT / "action.yml"
HOOKS = ROOT / ".pre-commit-hooks.yaml"


def action() -> dict[str, Any]:
    data = load_yaml(ACTION).data
    assert isinstance(data, dict)
    return data


def steps() -> list[dict[str, Any]]:
    return list(action()["runs"]["steps"])


def scripts() -> list[str]:
    return [step["run"] for step in steps() if "run" in step]


def provenance_commands() -> list[list[str]]:
    """Each `provenance ...` command line of the action's scripts, continuation lines joined."""
    commands = []
    for script in scripts():
        joined = script.replace("\\\n", " ")
        for line in joined.splitlines():
            line = line.strip()
            if line.startswith("provenance "):
                commands.append(line.split())
    return commands


def test_is_a_composite_action_that_installs_from_its_own_path() -> None:
    data = action()
    assert data["runs"]["using"] == "composite"
    uses = [step.get("uses", "") for step in steps()]
    assert any(u.startswith("actions/setup-python@") for u in uses)
    assert any(u.startswith("github/codeql-action/upload-sarif@") for u in uses)
    install = next(s for s in steps() if "pip install" in s.get("run", ""))
    assert install["env"]["ACTION_PATH"] == "${{ github.action_path }}"
    assert '"$ACTION_PATH"' in install["run"]


def test_runs_the_diff_aware_audit_as_sarif_and_markdown() -> None:
    commands = [" ".join(c) for c in provenance_commands()]
    assert any(
        c.startswith('provenance audit --repo . --base "$BASE" --head "$HEAD" --format sarif')
        and '--output "$SARIF"' in c
        for c in commands
    )
    summary = next(s for s in scripts() if "GITHUB_STEP_SUMMARY" in s)
    assert "--format markdown" in summary
    assert '>> "$GITHUB_STEP_SUMMARY"' in summary
    assert any("--github-pr" in c and "--comment" in c for c in commands)
    revs = next(s for s in steps() if s.get("id") == "revs")
    assert revs["env"]["PR_BASE"] == "${{ github.event.pull_request.base.sha }}"
    assert revs["env"]["PR_HEAD"] == "${{ github.event.pull_request.head.sha }}"


def test_gate_fails_on_the_audit_exit_code() -> None:
    gate = next(s for s in steps() if s.get("name") == "Gate")
    assert gate["env"]["CODE"] == "${{ steps.audit.outputs.exit-code }}"
    bash = shutil.which("bash")
    if bash is None:
        pytest.skip("bash not available")
    for code, fail_on_gate, expected in [
        ("0", "true", 0),
        ("1", "true", 1),
        ("1", "false", 0),
        ("3", "true", 3),
        ("5", "false", 5),
    ]:
        result = subprocess.run(
            [bash, "-c", gate["run"]],
            env={"CODE": code, "FAIL_ON_GATE": fail_on_gate, "PATH": "/usr/bin:/bin"},
            capture_output=True,
            text=True,
            check=False,
        )
        assert result.returncode == expected, (code, fail_on_gate, result.stdout)


def test_no_expression_is_interpolated_into_a_script() -> None:
    """Values reach scripts through env only (no `${{ }}` script injection)."""
    for script in scripts():
        assert "${{" not in script, script


def test_the_token_reaches_only_the_comment_step() -> None:
    holders = [s for s in steps() if "github-token" in str(s.get("env", {}))]
    assert len(holders) == 1
    assert holders[0]["env"]["GITHUB_TOKEN"] == "${{ inputs.github-token }}"
    assert "--comment" in holders[0]["run"]
    for script in scripts():
        assert not re.search(r"echo[^\n]*GITHUB_TOKEN", script)


def test_every_script_is_valid_bash() -> None:
    bash = shutil.which("bash")
    if bash is None:
        pytest.skip("bash not available")
    for script in scripts():
        result = subprocess.run(
            [bash, "-n"], input=script, text=True, capture_output=True, check=False
        )
        assert result.returncode == 0, result.stderr


def test_pre_commit_hook() -> None:
    data = load_yaml(HOOKS).data
    assert isinstance(data, list)
    (hook,) = data
    assert hook["id"] == "provenance-audit"
    assert hook["entry"] == "provenance audit --staged"
    assert hook["language"] == "python"
    assert hook["pass_filenames"] is False
    files = re.compile(hook["files"])
    for changed in ("models/MiniMaxAI/MiniMax-M3.yaml", "models/Qwen/Qwen3.yml", "taxonomy.yaml"):
        assert files.search(changed), changed
    assert files.search("strategies/tp.yaml")
    for other in ("models/README.md", "docs/models/x.yaml", "README.md"):
        assert not files.search(other), other


def test_options_exist_on_the_audit_command() -> None:
    """Every option the Action and the hook pass exists on ``provenance audit``."""
    assert isinstance(audit, click.Command)
    known = {opt for param in audit.params for opt in param.opts}
    assert {"--repo", "--base", "--head"} <= known
    used = {word for command in provenance_commands() for word in command if word.startswith("--")}
    hook = load_yaml(HOOKS).data[0]["entry"].split()
    used |= {word for word in hook if word.startswith("--")}
    assert used <= known, sorted(used - known)
