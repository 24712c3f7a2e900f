"""``action.yml`` on pull requests that try to relax their own gate, run the way GitHub
runs it (see ``test_action_steps.py``): the package installed non-editable by the
Action's own steps, a recipes repository built here.

Each PR is the #682 replay (a PR that fails the gate) plus one of:

* a ``provenance.toml`` that classes the flag #682 adds as tuning;
* the same policy as ``pyproject.toml`` ``[tool.provenance]``, with an alias;
* a ``provenance-declarations.yaml`` that declares every combination guide-only;
* a filter typo in ``extra-args`` (``--variant fp9``), which once audited nothing.

None of them changes the gate's result; each judging-file change is shown, in the job
summary, for a maintainer's review."""

from __future__ import annotations

from pathlib import Path

import pytest
from composite_action import ActionRun, pr_event, run_composite_action
from recipes_history import HISTORY, PR682_BASE, PR682_HEAD
from shipped_support import base_env, git, make_venv, recipes_repo

pytestmark = [pytest.mark.shipped, pytest.mark.slow, pytest.mark.corpus]

INDEXER = "attention_config.indexer_kv_dtype"
RELAXING = {
    "provenance.toml": f'[policy]\n"{INDEXER}" = "tuning"\n',
    "pyproject.toml": (
        '[project]\nname = "recipes"\n\n[tool.provenance.policy]\n'
        f'"{INDEXER}" = "tuning"\n\n[tool.provenance.aliases]\n'
        '"attention_config.indexer_kv_dtype" = "kv_cache_dtype"\n'
    ),
    "provenance-declarations.yaml": (
        "schema: provenance.ledger.declarations/v1\n"
        "declarations:\n"
        "- id: everything-is-fine\n"
        "  match: {}\n"
        "  reason: the PR says so\n"
        "  date: 2026-12-05\n"
    ),
}


def _pr(root: Path, files: dict[str, str]) -> tuple[Path, str, str]:
    if not HISTORY.is_dir():
        pytest.skip("needs ../shared/corpus/recipes-history")
    repo, (base, _) = recipes_repo(
        root / "recipes",
        [
            ("MiniMax-M3 as of recipes #672", (HISTORY / PR682_BASE).read_text("utf-8")),
            ("MiniMax-M3 as of recipes #682", (HISTORY / PR682_HEAD).read_text("utf-8")),
        ],
    )
    for rel, text in files.items():
        (repo / rel).write_text(text, encoding="utf-8")
    if files:
        git(repo, "add", "-A")
        git(repo, "commit", "-q", "-m", "#682, and a gate of its own")
    return repo, base, git(repo, "rev-parse", "HEAD")


@pytest.fixture(scope="module")
def setup_python_bin(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_venv(tmp_path_factory.mktemp("setup-python") / "venv")


def _action(
    repo: Path, base: str, head: str, checkout: Path, bin_dir: Path, tmp: Path, **inputs: str
) -> ActionRun:
    return run_composite_action(
        checkout,
        inputs=inputs,
        event=pr_event(682, base, head),
        workspace=repo,
        runner_temp=tmp / "runner-temp",
        env=base_env(bin_dir),
        repository="vllm-project/recipes",
    )


def test_the_682_replay_fails_the_gate_without_help(
    tmp_path: Path, checkout: Path, setup_python_bin: Path
) -> None:
    # the control: what every case below must still give
    repo, base, head = _pr(tmp_path, {})
    run = _action(repo, base, head, checkout, setup_python_bin, tmp_path)
    assert run.outputs["exit-code"] == "1" and run.failed
    assert run.summary.startswith("**gate: FAIL")
    assert "needs a maintainer" not in run.summary


@pytest.mark.parametrize("name", sorted(RELAXING))
def test_a_judging_file_in_the_pr_cannot_relax_its_gate(
    tmp_path: Path, checkout: Path, setup_python_bin: Path, name: str
) -> None:
    repo, base, head = _pr(tmp_path, {name: RELAXING[name]})
    run = _action(repo, base, head, checkout, setup_python_bin, tmp_path)
    assert run.outputs["exit-code"] == "1", run.summary[:2000]
    assert run.failed and run.step("Gate").returncode == 1
    lines = run.summary.splitlines()
    assert lines[0].startswith("**gate: FAIL")
    # shown right under the verdict line, for a maintainer's review
    top = "\n".join(lines[:8])
    assert "needs a maintainer" in top and name in top


def test_a_filter_typo_in_extra_args_is_a_usage_error_not_a_pass(
    tmp_path: Path, checkout: Path, setup_python_bin: Path
) -> None:
    repo, base, head = _pr(tmp_path, {})
    run = _action(
        repo, base, head, checkout, setup_python_bin, tmp_path, **{"extra-args": "--variant fp9"}
    )
    assert run.outputs["exit-code"] == "2"
    assert run.failed and "gate: PASS" not in run.summary
    audit = next(s for s in run.steps if s.name.startswith("Audit the pull request"))
    assert "--variant 'fp9': no such variant" in audit.stderr


def test_a_kv_offload_pr_with_no_connector_evidence_recommends_nothing(
    tmp_path: Path, checkout: Path, setup_python_bin: Path
) -> None:
    """recipes at #682 plus ``kv_offload_support: {offloading_cpu: verified}``: the PR
    audit enumerates the OffloadingConnector combinations, which no InferenceX run used.
    None of them may come out recommended (the worst error the tool can make), and the
    claim is reported as outside InferenceX's coverage."""
    if not HISTORY.is_dir():
        pytest.skip("needs ../shared/corpus/recipes-history")
    head_text = (HISTORY / PR682_HEAD).read_text("utf-8").rstrip("\n")
    repo, (base, head) = recipes_repo(
        tmp_path / "recipes",
        [
            ("MiniMax-M3 as of recipes #682", head_text + "\n"),
            (
                "MiniMax-M3 opts into CPU offload",
                head_text + "\nkv_offload_support:\n  offloading_cpu: verified\n",
            ),
        ],
    )
    run = _action(repo, base, head, checkout, setup_python_bin, tmp_path)
    summary = run.summary
    assert "Not blocking: 0 now recommended" in summary, summary[:3000]
    assert "kv_offload_support.offloading_cpu" in summary
    assert "outside-coverage" in summary
