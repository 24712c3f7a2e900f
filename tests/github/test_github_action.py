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


#: how every script starts our Python: the venv's interpreter, isolated
OUR_PYTHON = '"$PY" -I -m '


def provenance_commands() -> list[list[str]]:
    """Each ``"$PY" -I -m provenance …`` command line of the action's scripts (continuation
    lines joined), from ``provenance`` on."""
    commands = []
    for script in scripts():
        joined = script.replace("\\\n", " ")
        for line in joined.splitlines():
            line = line.strip()
            if line.startswith(OUR_PYTHON + "provenance "):
                commands.append(line.removeprefix(OUR_PYTHON).split())
    return commands


def github_words() -> list[str]:
    """The words of the audit step's ``github=(…)`` array (--github-pr and --comment)."""
    audit = next(s for s in steps() if s.get("id") == "audit")
    found = re.search(r"github=\((.+?)\)\n", audit["run"])
    assert found is not None, audit["run"]
    return found.group(1).split()


def test_is_a_composite_action_that_installs_from_its_own_path() -> None:
    data = action()
    assert data["runs"]["using"] == "composite"
    uses = [step.get("uses", "") for step in steps()]
    assert any(u.startswith("actions/setup-python@") for u in uses)
    assert any(u.startswith("github/codeql-action/upload-sarif@") for u in uses)
    install = next(s for s in steps() if "pip install" in s.get("run", ""))
    assert install["env"]["ACTION_PATH"] == "${{ github.action_path }}"
    assert '"$PY" -I -m pip install' in install["run"]
    assert '"$ACTION_PATH"' in install["run"]
    prep = next(s for s in steps() if s.get("id") == "prep")
    assert 'python -I -m venv "$state/venv"' in prep["run"]
    assert 'state="$(mktemp -d "$RUNNER_TEMP/' in prep["run"]


def test_nothing_runs_from_the_checkout() -> None:
    """No step runs in the checkout (no ``working-directory``): each script that starts
    Python or git first changes to a directory under ``$RUNNER_TEMP``; every Python is
    started isolated (``-I``), ours as the venv's interpreter by absolute path."""
    for step in steps():
        assert "working-directory" not in step, step.get("name")
    for script in scripts():
        if not re.search(r"\b(python|git)\b|\$PY\b", script):
            continue
        first = script.lstrip().splitlines()[0]
        assert first in ('cd "$RUNNER_TEMP"', 'cd "$STATE"'), first
        for line in script.splitlines():
            # a command: at the start of a line, in $( ), after then or ;
            for call in re.finditer(r'(?:^\s*|\$\(|\bthen\s+|;\s*)(python|"\$PY"|"\$py") ', line):
                assert line[call.end() :].startswith("-I "), line
        assert not re.search(r"^\s*provenance ", script, re.MULTILINE), "console script on PATH"
    revs = next(s for s in steps() if s.get("id") == "revs")
    assert 'git -C "$REPO" cat-file' in revs["run"]
    assert 'REPO="$GITHUB_WORKSPACE/$WORKING_DIRECTORY"' in revs["run"]


def test_every_uses_is_pinned_by_a_commit_sha_with_its_tag() -> None:
    """Each ``uses:`` of action.yml (and the checkout of the usage example) names a
    40-hex commit and says which tag that is."""
    text = ACTION.read_text(encoding="utf-8")
    lines = [line for line in text.splitlines() if re.match(r"^[\s#-]*uses:", line)]
    pinned = re.compile(r"uses: [\w.-]+/[\w./-]+@[0-9a-f]{40}  # v\d+\.\d+\.\d+$")
    own = re.compile(r"uses: provenance-recipes/provenance@<ref>")
    checked = [line for line in lines if not own.search(line)]
    assert len(checked) == 4, lines  # setup-python, cache, upload-sarif; checkout (example)
    for line in checked:
        assert pinned.search(line), line
    assert {step["uses"].split("@")[0] for step in steps() if "uses" in step} == {
        "actions/setup-python",
        "actions/cache",
        "github/codeql-action/upload-sarif",
    }
    for step in steps():
        if "uses" in step:
            assert re.fullmatch(r"[\w./-]+@[0-9a-f]{40}", step["uses"]), step["uses"]


def test_the_usage_example_checks_out_without_persisting_credentials() -> None:
    header = ACTION.read_text(encoding="utf-8").split("\nname:", 1)[0]
    assert "persist-credentials: false" in header
    guide = (ROOT / "docs" / "github.md").read_text(encoding="utf-8")
    assert "persist-credentials: false" in guide


def test_pip_downloads_are_cached_on_the_actions_own_pyproject() -> None:
    prep = next(s for s in steps() if s.get("id") == "prep")
    assert '"$ACTION_PATH/pyproject.toml"' in prep["run"]
    assert "hashlib.sha256" in prep["run"]
    cache = next(s for s in steps() if s.get("uses", "").startswith("actions/cache@"))
    assert cache["with"] == {
        "path": "${{ steps.prep.outputs.pip-cache-dir }}",
        "key": "${{ steps.prep.outputs.pip-cache-key }}",
        "restore-keys": "${{ steps.prep.outputs.pip-cache-restore-key }}",
    }
    names = [step.get("name") for step in steps()]
    assert names.index(cache["name"]) < names.index(
        "Install provenance (from this action's own source)"
    )


def test_one_audit_renders_sarif_summary_and_comment() -> None:
    """The audit runs once per job; SARIF and the markdown summary are ``--report``s of
    that run, the PR comment its ``--github-pr --comment``, all written under the step's
    directory in ``$RUNNER_TEMP``, and the upload reads the SARIF from there."""
    commands = provenance_commands()
    audits = [c for c in commands if c[:2] == ["provenance", "audit"]]
    assert len(audits) == 1, commands
    (audit_words,) = audits
    joined = " ".join(audit_words)
    assert joined.startswith(
        'provenance audit --repo "$REPO" --base "$BASE" --head "$HEAD" --format text'
    )
    assert '--report "sarif=$sarif"' in joined and '--report "markdown=$summary"' in joined
    assert '"${github[@]}" "${extra[@]}"' in joined
    assert github_words() == ["--github-pr", '"$PR"', "--comment", "--github-errors", "warn"]
    audit_step = next(s for s in steps() if s.get("id") == "audit")
    assert 'sarif="$STATE/provenance.sarif"' in audit_step["run"]
    assert 'summary="$STATE/summary.md"' in audit_step["run"]
    assert 'cat "$summary" >> "$GITHUB_STEP_SUMMARY"' in audit_step["run"]
    assert audit_step["env"]["COMMENT"] == (
        "${{ inputs.comment == 'true' && github.event.pull_request.number != '' }}"
    )
    upload = next(s for s in steps() if s.get("name") == "Upload SARIF to code scanning")
    assert upload["with"]["sarif_file"] == "${{ steps.audit.outputs.sarif-file }}"
    assert "hashFiles" not in upload["if"]  # hashFiles only sees the workspace
    revs = next(s for s in steps() if s.get("id") == "revs")
    assert revs["env"]["PR_BASE"] == "${{ github.event.pull_request.base.sha }}"
    assert revs["env"]["PR_HEAD"] == "${{ github.event.pull_request.head.sha }}"
    assert revs["env"]["INPUT_SARIF_FILE"] == "${{ inputs.sarif-file }}"
    assert action()["inputs"]["sarif-file"]["default"] == ""


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


def test_the_token_reaches_only_the_audit_step_and_only_to_comment() -> None:
    holders = [s for s in steps() if "github-token" in str(s.get("env", {}))]
    assert len(holders) == 1
    assert holders[0]["env"]["GITHUB_TOKEN"] == (
        "${{ inputs.comment == 'true' && inputs.github-token || '' }}"
    )
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
    assert {"--repo", "--base", "--head", "--report", "--github-errors"} <= known
    used = {word for command in provenance_commands() for word in command if word.startswith("--")}
    used |= {word for word in github_words() if word.startswith("--")}
    hook = load_yaml(HOOKS).data[0]["entry"].split()
    used |= {word for word in hook if word.startswith("--")}
    assert used <= known, sorted(used - known)
