"""The strict expression evaluator the Action test runs ``action.yml`` with: GitHub's
results for what the action uses, and a refusal for anything else."""

from __future__ import annotations

from pathlib import Path

import pytest
from github_expressions import (
    Contexts,
    StepRecord,
    UnknownExpressionError,
    condition,
    evaluate,
    substitute,
)


def _contexts(tmp_path: Path, failed: bool = False) -> Contexts:
    return Contexts(
        inputs={"comment": "false", "working-directory": ".", "sarif-file": "out.sarif"},
        github={"event": {"pull_request": {"number": 682, "base": {"sha": "abc"}}}},
        steps={"revs": StepRecord("success", {"base": "abc"})},
        step_ids=frozenset({"revs", "audit"}),
        workspace=tmp_path,
        job_failed=failed,
    )


def test_known_expressions_evaluate_as_github_does(tmp_path: Path) -> None:
    ctx = _contexts(tmp_path)
    assert substitute("x=${{ steps.revs.outputs.base }}", ctx) == "x=abc"
    assert substitute("${{ github.event.pull_request.number }}", ctx) == "682"
    assert evaluate("github.event.pull_request.number != ''", ctx) is True
    assert evaluate("inputs.comment == 'FALSE'", ctx) is True  # case-insensitive
    assert evaluate("format('{0}/{1}', inputs.working-directory, inputs.sarif-file)", ctx) == (
        "./out.sarif"
    )
    assert evaluate("hashFiles('out.sarif')", ctx) == ""
    (tmp_path / "out.sarif").write_text("{}")
    assert evaluate("hashFiles('out.sarif')", ctx) != ""


def test_conditions_add_success_unless_a_status_function_is_called(tmp_path: Path) -> None:
    assert condition(None, _contexts(tmp_path))
    assert not condition(None, _contexts(tmp_path, failed=True))
    assert not condition("steps.revs.outcome == 'success'", _contexts(tmp_path, failed=True))
    assert condition("always() && steps.revs.outcome == 'success'", _contexts(tmp_path, True))
    assert not condition("${{ inputs.comment == 'true' }}", _contexts(tmp_path))


def test_and_and_or_short_circuit_as_github_does(tmp_path: Path) -> None:
    """The side ``&&``/``||`` skips is not evaluated (step ``audit`` has not run), but an
    evaluated side still refuses what it does not know, and a skipped side must parse and
    call only known functions."""
    ctx = _contexts(tmp_path)
    assert evaluate("steps.revs.outputs.base == 'x' && steps.audit.outputs.exit-code", ctx) is False
    assert evaluate("steps.revs.outputs.base == 'abc' || steps.audit.outputs.sarif", ctx) is True
    assert evaluate("'' && format('{0}', steps.audit.outputs.x)", ctx) == ""
    with pytest.raises(UnknownExpressionError):
        evaluate("steps.revs.outputs.base == 'abc' && steps.audit.outputs.exit-code", ctx)
    with pytest.raises(UnknownExpressionError):  # an unknown function, even skipped
        evaluate("'' && contains(inputs.comment, 'x')", ctx)
    with pytest.raises(UnknownExpressionError):
        evaluate("false && (inputs.comment", ctx)


def test_a_skipped_steps_outputs_read_empty(tmp_path: Path) -> None:
    ctx = _contexts(tmp_path)
    ctx.steps = {**ctx.steps, "audit": StepRecord("skipped")}
    assert substitute("[${{ steps.audit.outputs.exit-code }}]", ctx) == "[]"
    assert evaluate("steps.audit.outputs.sarif-file != ''", ctx) is False
    with pytest.raises(UnknownExpressionError):  # one that ran must have written it
        evaluate("steps.revs.outputs.never-written", ctx)


@pytest.mark.parametrize(
    "expression",
    [
        "inputs.undeclared",
        "steps.nope.outputs.base",
        "steps.audit.outputs.exit-code",  # declared, not yet run
        "steps.revs.outputs.missing",
        "env.HOME",
        "secrets.TOKEN",
        "github.event.pull_request.head.sha",
        "contains(inputs.comment, 'x')",
        "inputs.comment < 'x'",
        "fromJSON('{}')",
    ],
)
def test_anything_else_is_refused(tmp_path: Path, expression: str) -> None:
    with pytest.raises(UnknownExpressionError):
        evaluate(expression, _contexts(tmp_path))
