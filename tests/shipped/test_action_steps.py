"""``action.yml`` as GitHub runs it: every ``run:`` step in order, from a fresh venv (the
``setup-python`` step's), in a real recipes git repository built from the MiniMax-M3
history, for a ``pull_request`` event naming the PR's base and head SHAs.

The install step itself installs provenance non-editable from the action's path into a
venv under ``$RUNNER_TEMP``; the ``uses:`` steps are not run, but what they are given is
checked (the Python version, the pip cache key, and a SARIF file under ``$RUNNER_TEMP``
that exists and is SARIF). ``test_action_untrusted_pr.py`` runs the same steps on pull
requests that plant code and symbolic links."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from composite_action import ActionRun, pr_event, run_composite_action
from recipes_history import HISTORY, MODEL, PR682_BASE, PR682_HEAD
from shipped_support import base_env, make_venv, recipes_repo

pytestmark = [pytest.mark.shipped, pytest.mark.slow, pytest.mark.corpus]

INSTALL = "Install provenance (from this action's own source)"
AUDIT = "Audit the pull request (SARIF, job summary, PR comment)"

#: the fixture PR on top of #682: BF16 on MI325X, cells no InferenceX run benchmarked,
#: gains a major flag (the KV cache dtype) and a tuning flag
_BF16_ANCHOR = (
    '    description: "Native BF16 checkpoint — multi-node TP recommended for'
    ' long-context headroom"\n'
)
_BF16_MI325X = (
    "    hardware_overrides:\n"
    "      mi325x:\n"
    "        extra_args:\n"
    '          - "--kv-cache-dtype"\n'
    '          - "fp8"\n'
    '          - "--max-num-batched-tokens"\n'
    '          - "32768"\n'
)


#: appended to #682's recipe: a top-level key the site's builder does not read
_BROKEN = "nightly_only: true\n"


def _unbenchmarked_pr(head_text: str) -> str:
    assert head_text.count(_BF16_ANCHOR) == 1
    return head_text.replace(_BF16_ANCHOR, _BF16_ANCHOR + _BF16_MI325X)


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    """#672 (the base of #682), #682, the unbenchmarked-only fixture PR, then a PR that
    breaks the recipe (a key the schema refuses)."""
    if not HISTORY.is_dir():
        pytest.skip("needs ../shared/corpus/recipes-history")
    head = (HISTORY / PR682_HEAD).read_text(encoding="utf-8")
    return recipes_repo(
        tmp_path_factory.mktemp("recipes") / "recipes",
        [
            ("MiniMax-M3 as of recipes #672", (HISTORY / PR682_BASE).read_text(encoding="utf-8")),
            ("MiniMax-M3 as of recipes #682", head),
            ("BF16 on MI325X: KV cache dtype fp8", _unbenchmarked_pr(head)),
            ("a key the recipe schema refuses", head + _BROKEN),
        ],
    )


@pytest.fixture(scope="module")
def setup_python_bin(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """What ``actions/setup-python`` leaves: a Python with nothing but pip, first on PATH."""
    return make_venv(tmp_path_factory.mktemp("setup-python") / "venv")


def _run(
    checkout: Path,
    setup_python_bin: Path,
    repo: Path,
    tmp_path: Path,
    base: str,
    head: str,
    number: int,
    **inputs: str,
) -> ActionRun:
    return run_composite_action(
        checkout,
        inputs=inputs,
        event=pr_event(number, base, head),
        workspace=repo,
        runner_temp=tmp_path / "runner-temp",
        env=base_env(setup_python_bin),
        repository="vllm-project/recipes",
    )


def _check_uses_steps(run: ActionRun, runner_temp: Path) -> None:
    setup = run.step("Set up Python")
    assert setup.uses is not None and setup.uses.startswith("actions/setup-python@")
    assert setup.with_inputs == {"python-version": "3.11"}
    cache = run.step("Cache pip downloads")
    assert cache.ran and cache.uses is not None and cache.uses.startswith("actions/cache@")
    assert Path(cache.with_inputs["path"]).is_absolute()
    assert cache.with_inputs["key"].startswith(cache.with_inputs["restore-keys"])
    upload = run.step("Upload SARIF to code scanning")
    assert upload.ran, "the SARIF is uploaded whatever the gate says"
    assert upload.with_inputs["category"] == "provenance"
    sarif_path = Path(upload.with_inputs["sarif_file"])
    assert sarif_path.is_relative_to(runner_temp), sarif_path  # never in the checkout
    assert run.outputs["sarif-file"] == str(sarif_path)
    sarif = json.loads(sarif_path.read_text(encoding="utf-8"))
    assert sarif["version"] == "2.1.0"
    assert "sarif" in sarif["$schema"]
    (tool_run,) = sarif["runs"]
    assert tool_run["tool"]["driver"]["name"] == "provenance"


def _ran_ok(run: ActionRun, name: str) -> None:
    step = run.step(name)
    assert step.ran and step.returncode == 0, f"{name}: {step.stdout[-2000:]}{step.stderr[-4000:]}"


def test_the_682_replay_fails_the_gate(
    checkout: Path, setup_python_bin: Path, history: tuple[Path, list[str]], tmp_path: Path
) -> None:
    repo, (pr672, pr682, _, _) = history
    run = _run(checkout, setup_python_bin, repo, tmp_path, pr672, pr682, 682)
    for name in ("Prepare a virtualenv outside the checkout", INSTALL, "Resolve revisions", AUDIT):
        _ran_ok(run, name)
    assert "not checked" not in run.step(AUDIT).stderr  # comment "false": no --github-pr
    assert run.outputs["exit-code"] == "1"
    _check_uses_steps(run, tmp_path / "runner-temp")
    assert run.summary.startswith("**gate: FAIL")  # the verdict line opens the summary
    blocking = run.summary.index("#### Blocking")
    assert "Regressed" in run.summary[blocking:]  # #682: 4 combinations regressed
    assert "InferenceX" in run.summary  # the summary names its ledger
    gate = run.step("Gate")
    assert gate.ran and gate.returncode == 1
    assert "::error::provenance: the gate failed" in gate.stdout
    assert run.failed


def test_without_fail_on_gate_the_job_passes_and_the_output_keeps_the_code(
    checkout: Path, setup_python_bin: Path, history: tuple[Path, list[str]], tmp_path: Path
) -> None:
    repo, (pr672, pr682, _, _) = history
    run = _run(
        checkout, setup_python_bin, repo, tmp_path, pr672, pr682, 682, **{"fail-on-gate": "false"}
    )
    assert run.outputs["exit-code"] == "1"
    gate = run.step("Gate")
    assert gate.ran and gate.returncode == 0
    assert "::error::" in gate.stdout  # still annotated
    assert not run.failed


def test_a_pr_changing_only_unbenchmarked_cells_passes(
    checkout: Path, setup_python_bin: Path, history: tuple[Path, list[str]], tmp_path: Path
) -> None:
    repo, (_, pr682, fixture, _) = history
    run = _run(checkout, setup_python_bin, repo, tmp_path, pr682, fixture, 9001)
    _ran_ok(run, AUDIT)
    assert run.outputs["exit-code"] == "0"
    _check_uses_steps(run, tmp_path / "runner-temp")
    assert run.summary.startswith("**gate: PASS")
    assert "unbenchmarked" in run.summary.split("\n", 1)[0]  # and the verdict says why
    _ran_ok(run, "Gate")
    assert not run.failed


def test_extra_args_and_a_ledger_input_reach_every_audit(
    checkout: Path, setup_python_bin: Path, history: tuple[Path, list[str]], tmp_path: Path
) -> None:
    """``ledger``/``evidence`` inputs and ``extra-args`` words (a ``$RUNNER_TEMP`` path with
    a space) arrive as single arguments: against an empty ledger every cell #682 touches
    is unbenchmarked, so the replay that fails on the packaged ledger passes."""
    repo, (pr672, pr682, _, _) = history
    (tmp_path / "runner-temp" / "my ledger").mkdir(parents=True)
    (repo.parent / "empty-evidence").mkdir(exist_ok=True)
    run = _run(
        checkout,
        setup_python_bin,
        repo,
        tmp_path,
        pr672,
        pr682,
        682,
        **{
            "evidence": "../empty-evidence",
            "extra-args": '--ledger "$RUNNER_TEMP/my ledger"',
        },
    )
    _ran_ok(run, "Resolve revisions")
    assert "my ledger" in run.summary
    assert "no manifest" in run.summary
    assert run.outputs["exit-code"] == "0"
    _ran_ok(run, "Gate")


def test_a_pr_breaking_the_recipe_fails_with_the_input_code_and_names_the_line(
    checkout: Path, setup_python_bin: Path, history: tuple[Path, list[str]], tmp_path: Path
) -> None:
    """Exit 3 fails the job whatever ``fail-on-gate`` says; the summary names the line."""
    repo, (_, pr682, _, broken) = history
    run = _run(
        checkout, setup_python_bin, repo, tmp_path, pr682, broken, 9002, **{"fail-on-gate": "false"}
    )
    assert run.outputs["exit-code"] == "3"
    _check_uses_steps(run, tmp_path / "runner-temp")
    lines = (repo / MODEL).read_text(encoding="utf-8").splitlines()
    assert lines[-1] == _BROKEN.strip()  # the refused key is the head's last line
    assert run.summary.startswith("**gate: FAIL")
    assert f"{broken[:12]}:{MODEL}:{len(lines)}" in run.summary
    gate = run.step("Gate")
    assert gate.ran and gate.returncode == 3
    assert "::error::provenance: an input is invalid" in gate.stdout
    assert run.failed
