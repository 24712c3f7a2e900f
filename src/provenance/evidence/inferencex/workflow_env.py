"""The value a benchmark workflow gives ``SCENARIO_SUBDIR``, read statically (spec §2.2).

The runner launchers compose ``benchmarks/single_node/${SCENARIO_SUBDIR}…``, and the
workflow templates (``.github/workflows/benchmark-tmpl.yml`` for single-node rows,
``benchmark-multinode-tmpl.yml`` for multinode ones) set it in their top-level ``env``
from the ``scenario-type`` input. The value has changed over the history: before the
scripts moved to ``fixed_seq_len/`` (2026-07) the template gave ``''`` for fixed-seq-len
runs, since then ``'fixed_seq_len/'``; before agentic scenarios existed it set nothing.
So the value is taken from the template at the commit being evaluated, never assumed.

The template is loaded with :mod:`provenance.safe_yaml` and its ``${{ … }}`` expression
is evaluated by a small, strict evaluator: string, number, boolean and null literals,
the ``inputs`` context, ``==``, ``!=``, ``&&``, ``||``, ``!`` and parentheses — nothing
else (no functions, no other context). ``inputs.scenario-type`` is the point's scenario;
any other input is what the caller passes, so it is unknown: a comparison with it may be
true or false and the expression yields every value it can. The result is then each
value the workflow can give, in evaluation order (the launcher lookup tries them all).
A value that cannot be evaluated (an unknown operator or function, or an unknown input
reaching the result) is a reason, and the points are skipped with it.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from provenance.errors import InputError
from provenance.evidence.inferencex.snapshot import Snapshot
from provenance.safe_yaml import load_yaml_bytes

SINGLE_NODE_TEMPLATE = ".github/workflows/benchmark-tmpl.yml"
MULTINODE_TEMPLATE = ".github/workflows/benchmark-multinode-tmpl.yml"
SCENARIO_INPUT = "scenario-type"

_TOKEN = re.compile(
    r"""\s*(?:(?P<str>'(?:[^']|'')*')|(?P<num>-?\d+(?:\.\d+)?)|(?P<op>==|!=|&&|\|\||!|\(|\)|,)"""
    r"""|(?P<name>[A-Za-z_][A-Za-z0-9_.-]*))"""
)
_WHOLE = re.compile(r"^\$\{\{(?P<expr>.*)\}\}$", re.DOTALL)


class _Unknown:
    """A value only the workflow's caller knows (an input other than ``scenario-type``)."""

    def __repr__(self) -> str:
        return "<unknown>"


UNKNOWN = _Unknown()
Value = str | float | bool | None | _Unknown


class NotEvaluableError(ValueError):
    """The expression uses something the static evaluator does not model."""


def _truthy(value: Value) -> bool:
    return value not in (False, 0, "", None)


@dataclass
class _Parser:
    """Recursive descent over the tokens; each node yields the tuple of values it can take."""

    tokens: list[tuple[str, str]]
    inputs: Mapping[str, str]
    pos: int = 0

    def peek(self) -> tuple[str, str] | None:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def take(self) -> tuple[str, str]:
        token = self.peek()
        if token is None:
            raise NotEvaluableError("expression ends early")
        self.pos += 1
        return token

    def expression(self) -> tuple[Value, ...]:
        values = self.conjunction()
        while self.peek() == ("op", "||"):
            self.take()
            right = self.conjunction()
            # ``a || b`` is ``a`` when truthy, else ``b``; an unknown ``a`` may be either.
            kept = [v for v in values if v is UNKNOWN or _truthy(v)]
            falls = any(v is UNKNOWN or not _truthy(v) for v in values)
            values = _unique([*kept, *(right if falls else ())])
        return values

    def conjunction(self) -> tuple[Value, ...]:
        values = self.comparison()
        while self.peek() == ("op", "&&"):
            self.take()
            right = self.comparison()
            # ``a && b`` is ``a`` when falsy, else ``b``; an unknown ``a`` may be either.
            kept = [v for v in values if v is UNKNOWN or not _truthy(v)]
            passes = any(v is UNKNOWN or _truthy(v) for v in values)
            values = _unique([*kept, *(right if passes else ())])
        return values

    def comparison(self) -> tuple[Value, ...]:
        left = self.unary()
        token = self.peek()
        if token not in (("op", "=="), ("op", "!=")):
            return left
        self.take()
        right = self.unary()
        results: list[Value] = []
        for a in left:
            for b in right:
                if a is UNKNOWN or b is UNKNOWN:
                    results.extend([True, False])
                    continue
                same = _equal(a, b)
                results.append(same if token[1] == "==" else not same)
        return _unique(results)

    def unary(self) -> tuple[Value, ...]:
        if self.peek() == ("op", "!"):
            self.take()
            negated: list[Value] = []
            for value in self.unary():
                negated.extend([True, False] if value is UNKNOWN else [not _truthy(value)])
            return _unique(negated)
        return self.primary()

    def primary(self) -> tuple[Value, ...]:
        kind, text = self.take()
        if kind == "op" and text == "(":
            values = self.expression()
            if self.take() != ("op", ")"):
                raise NotEvaluableError("unbalanced parentheses")
            return values
        if kind == "str":
            return (text[1:-1].replace("''", "'"),)
        if kind == "num":
            return (float(text),)
        if kind == "name":
            if self.peek() == ("op", "("):
                raise NotEvaluableError(f"function {text}() is not modelled")
            literal = {"true": True, "false": False, "null": None}
            if text in literal:
                return (literal[text],)
            context, _, name = text.partition(".")
            if context != "inputs" or not name:
                raise NotEvaluableError(f"context {text!r} is not modelled")
            return (self.inputs[name],) if name in self.inputs else (UNKNOWN,)
        raise NotEvaluableError(f"unexpected {text!r}")


def _equal(a: Value, b: Value) -> bool:
    if isinstance(a, str) and isinstance(b, str):
        return a.casefold() == b.casefold()
    if type(a) is not type(b):
        raise NotEvaluableError(f"comparison of {a!r} with {b!r} (type coercion) is not modelled")
    return a == b


def _unique(values: Iterable[Value]) -> tuple[Value, ...]:
    """``values`` without repeats (``1 == True`` in Python, not here), first occurrence kept."""
    out: list[Value] = []
    for value in values:
        if not any(value is seen or (type(value) is type(seen) and value == seen) for seen in out):
            out.append(value)
    return tuple(out)


def _tokens(expr: str) -> list[tuple[str, str]]:
    tokens: list[tuple[str, str]] = []
    pos = 0
    while expr[pos:].strip():
        match = _TOKEN.match(expr, pos)
        if match is None or match.end() == pos:
            raise NotEvaluableError(f"cannot read {expr[pos:].strip()[:20]!r}")
        kind = match.lastgroup or ""
        tokens.append((kind, match.group(kind)))
        pos = match.end()
    return tokens


def evaluate(text: str, inputs: Mapping[str, str]) -> tuple[str, ...]:
    """Every string ``text`` (a workflow env value) can take; NotEvaluableError otherwise."""
    whole = _WHOLE.match(text.strip())
    if whole is None:
        if "${{" in text:
            raise NotEvaluableError("an expression inside a longer string is not modelled")
        return (text,)
    parser = _Parser(_tokens(whole.group("expr")), inputs)
    values = parser.expression()
    rest = parser.peek()
    if rest is not None:
        raise NotEvaluableError(f"unexpected {rest[1]!r}")
    if any(v is UNKNOWN for v in values):
        raise NotEvaluableError("the value is an input the caller passes")
    return tuple(_as_string(v) for v in values)


def _as_string(value: Value) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() else str(value)
    return str(value)


def _top_level_env(raw: bytes, path: str) -> dict[str, str] | str:
    try:
        data = load_yaml_bytes(raw, path).data
    except InputError as exc:
        return f"{path} unreadable: {exc}"
    env = data.get("env", {}) if isinstance(data, Mapping) else None
    if env is None:
        return {}
    if not isinstance(env, Mapping):
        return f"{path}: top-level env is not a mapping"
    return {str(k): "" if v is None else str(v) for k, v in env.items()}


def scenario_subdirs(snapshot: Snapshot, template: str, scenario: str) -> tuple[str, ...] | str:
    """The values ``template`` gives ``SCENARIO_SUBDIR`` for ``scenario``, or why not known.

    A template that sets no ``SCENARIO_SUBDIR`` gives the empty string (the variable is
    unset, which the launchers' ``${SCENARIO_SUBDIR}`` expands to nothing).
    """
    raw = snapshot.read(template)
    if raw is None:
        return f"{template} not in the tree at {snapshot.sha[:12]}"
    env = snapshot.memo(
        ("workflow-env", template), functools.partial(_top_level_env, raw, template)
    )
    if isinstance(env, str):
        return env
    text = env.get("SCENARIO_SUBDIR")
    if text is None:
        return ("",)
    try:
        return evaluate(text, {SCENARIO_INPUT: scenario})
    except NotEvaluableError as exc:
        return f"{template}: SCENARIO_SUBDIR {text.strip()!r} not evaluable statically: {exc}"
