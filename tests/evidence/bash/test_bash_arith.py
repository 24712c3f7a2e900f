"""The safe arithmetic evaluator (no Python eval) against Python integer arithmetic."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from provenance.evidence.bash.arith import ArithmeticEvaluator, ArithUnknown, wrap64


def evaluate(expr: str, values: dict[str, str] | None = None) -> int | ArithUnknown:
    store = dict(values or {})

    def read(name: str) -> str | ArithUnknown | None:
        return store.get(name)

    def write(name: str, value: int | ArithUnknown) -> None:
        store[name] = str(value)

    return ArithmeticEvaluator(read, write).evaluate(expr)


@pytest.mark.parametrize(
    ("expr", "expected"),
    [
        ("ISL * 2", 16384),
        ("(CONC + TP - 1) / TP", 13),
        ("2 ** 10", 1024),
        ("-7 / 2", -3),
        ("-7 % 3", -1),
        ("1 << 4 | 1", 17),
        ("CONC > 64 ? 1 : 0", 1),
        ("CONC >= 64 && ISL >= 8192", 1),
        ("!0 + ~0", 0),
        ("0x10 + 010 + 2#101", 29),
        ("UNSET + 1", 1),
        ("INDIRECT * 2", 6),
        ("x = 5, x += 2, x", 7),
        ("", 0),
    ],
)
def test_expressions(expr: str, expected: int) -> None:
    values = {"ISL": "8192", "CONC": "100", "TP": "8", "INDIRECT": "1 + 2"}
    assert evaluate(expr, values) == expected


@pytest.mark.parametrize("expr", ["1 / 0", "5 % 0", "2 ** -1", "1 +", "A[1]", "$(x)", "(" * 200])
def test_unevaluable_is_unknown_not_an_exception(expr: str) -> None:
    assert isinstance(evaluate(expr), ArithUnknown)


def test_hole_in_a_variable_propagates() -> None:
    def read(name: str) -> str | ArithUnknown | None:
        return ArithUnknown("runtime value")

    result = ArithmeticEvaluator(read, lambda name, value: None).evaluate("X * 2")
    assert result == ArithUnknown("runtime value")


def test_self_referencing_values_are_bounded() -> None:
    assert isinstance(evaluate("A", {"A": "B", "B": "A"}), ArithUnknown)


ints = st.integers(min_value=-(2**40), max_value=2**40)


@settings(max_examples=300)
@given(ints, ints, st.sampled_from(["+", "-", "*", "<", "<=", "==", "!=", "&", "|", "^"]))
def test_binary_operators_match_python(a: int, b: int, op: str) -> None:
    python = {
        "+": a + b,
        "-": a - b,
        "*": a * b,
        "<": int(a < b),
        "<=": int(a <= b),
        "==": int(a == b),
        "!=": int(a != b),
        "&": a & b,
        "|": a | b,
        "^": a ^ b,
    }[op]
    assert evaluate(f"A {op} B", {"A": str(a), "B": str(b)}) == wrap64(python)


@settings(max_examples=300)
@given(st.text(alphabet="0123456789+-*/%()<>=!&|^~?:, xAB", max_size=40))
def test_random_expressions_never_raise(expr: str) -> None:
    result = evaluate(expr, {"A": "3", "B": "-2"})
    assert isinstance(result, int | ArithUnknown)
