"""Rules the suite keeps about itself (issue 16): no test depends on per-example timing."""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parent


def _settings_deadlines(tree: ast.AST) -> list[int]:
    """Lines of ``settings(...)`` calls that pass a ``deadline`` other than ``None``."""
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        name = node.func.attr if isinstance(node.func, ast.Attribute) else None
        if isinstance(node.func, ast.Name):
            name = node.func.id
        if name not in {"settings", "register_profile"}:
            continue
        for keyword in node.keywords:
            value = keyword.value
            if keyword.arg == "deadline" and not (
                isinstance(value, ast.Constant) and value.value is None
            ):
                found.append(node.lineno)
    return found


def test_no_hypothesis_test_sets_a_per_example_deadline() -> None:
    offenders = [
        f"{path.relative_to(TESTS)}:{line}"
        for path in sorted(TESTS.rglob("*.py"))
        for line in _settings_deadlines(ast.parse(path.read_text(encoding="utf-8")))
    ]
    assert offenders == []


def test_the_rule_sees_a_deadline() -> None:
    tree = ast.parse("@settings(max_examples=3, deadline=500)\ndef f(): ...\n")
    assert _settings_deadlines(tree) == [1]
    assert _settings_deadlines(ast.parse("settings(deadline=None)\n")) == []
