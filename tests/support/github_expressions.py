"""A small, strict evaluator of GitHub Actions expressions (``${{ … }}`` and ``if:``), for
running a composite action's steps the way the runner would.

It knows exactly what ``action.yml`` uses: the ``inputs``, ``github`` and ``steps``
contexts; string, number, boolean and null literals; ``==``, ``!=``, ``&&``, ``||``, ``!``
and parentheses; and the functions ``always``, ``success``, ``failure``, ``cancelled``,
``format`` and ``hashFiles``. Anything else — an unknown context, an undeclared input, a
step id that does not exist or an output a step that ran never wrote (a skipped step's
outputs read as empty, as on GitHub), an unknown function or
operator — raises :class:`UnknownExpressionError`, so a typo in the action fails the test
instead of evaluating to an empty string. ``&&`` and ``||`` short-circuit as GitHub's do:
the operand they skip is parsed (a syntax error still fails) but not evaluated, so
``steps.x.outcome == 'success' && steps.x.outputs.y`` reads the output only when step
``x`` ran.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

Value = str | float | bool | None | Mapping[str, object] | list[object]


class UnknownExpressionError(ValueError):
    """An expression this evaluator does not know (so GitHub's result is not modelled)."""


@dataclass
class StepRecord:
    """What the ``steps`` context holds for one step that has run (or been skipped)."""

    outcome: str  # success | failure | skipped
    outputs: dict[str, str] = field(default_factory=dict)


@dataclass
class Contexts:
    """The contexts an expression may read."""

    inputs: Mapping[str, str]
    github: Mapping[str, object]
    steps: Mapping[str, StepRecord]
    #: every step id the action declares (a reference to another id is a typo)
    step_ids: frozenset[str]
    workspace: Path
    job_failed: bool = False


_TOKEN = re.compile(
    r"""\s*(?:
        (?P<string>'(?:[^']|'')*')
      | (?P<number>-?\d+(?:\.\d+)?)
      | (?P<op>==|!=|&&|\|\||!|\(|\)|,|\.)
      | (?P<name>[A-Za-z_][A-Za-z0-9_-]*)
    )""",
    re.VERBOSE,
)


def _tokens(text: str) -> list[tuple[str, str]]:
    found: list[tuple[str, str]] = []
    pos = 0
    while pos < len(text):
        if text[pos:].strip() == "":
            break
        match = _TOKEN.match(text, pos)
        if match is None or match.end() == pos:
            raise UnknownExpressionError(f"cannot read {text[pos:]!r} in {text!r}")
        kind = match.lastgroup
        assert kind is not None
        found.append((kind, match.group(kind)))
        pos = match.end()
    return found


def _number(value: Value) -> float:
    """GitHub's coercion to a number (for comparing values of different types)."""
    if value is None:
        return 0.0
    if isinstance(value, bool):
        return 1.0 if value else 0.0
    if isinstance(value, float):
        return value
    if isinstance(value, str):
        if value.strip() == "":
            return 0.0
        try:
            return float(value)
        except ValueError:
            return math.nan
    return math.nan


def _equal(left: Value, right: Value) -> bool:
    if isinstance(left, str) and isinstance(right, str):
        return left.casefold() == right.casefold()  # GitHub compares strings ignoring case
    if type(left) is type(right) and not isinstance(left, str):
        return left == right
    return _number(left) == _number(right)


def truthy(value: Value) -> bool:
    if value is None or value is False:
        return False
    if isinstance(value, float):
        return value != 0 and not math.isnan(value)
    if isinstance(value, str):
        return value != ""
    return True


def as_text(value: Value) -> str:
    """How a value is written into a string (``${{ … }}`` in a run script or input)."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() else repr(value)
    if isinstance(value, str):
        return value
    raise UnknownExpressionError(f"an object or array written into a string: {value!r}")


class _Parser:
    def __init__(self, text: str, contexts: Contexts) -> None:
        self.text = text
        self.tokens = _tokens(text)
        self.pos = 0
        self.contexts = contexts
        #: whether the expression calls a status function (else ``if:`` adds success())
        self.status_called = False
        #: inside an operand ``&&``/``||`` skips: parse it, evaluate nothing
        self.skipping = False

    def _peek(self) -> tuple[str, str] | None:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def _take(self, op: str) -> bool:
        if self._peek() == ("op", op):
            self.pos += 1
            return True
        return False

    def _expect(self, op: str) -> None:
        if not self._take(op):
            raise UnknownExpressionError(f"expected {op!r} in {self.text!r}")

    def parse(self) -> Value:
        value = self._or()
        if self.pos != len(self.tokens):
            raise UnknownExpressionError(
                f"unexpected {self.tokens[self.pos][1]!r} in {self.text!r}"
            )
        return value

    def _skipped(self, operand: Callable[[], Value]) -> None:
        """Parse ``operand`` without evaluating it (the short-circuited side)."""
        outer, self.skipping = self.skipping, True
        try:
            operand()
        finally:
            self.skipping = outer

    def _or(self) -> Value:
        value = self._and()
        while self._take("||"):
            if truthy(value):
                self._skipped(self._and)
            else:
                value = self._and()
        return value

    def _and(self) -> Value:
        value = self._comparison()
        while self._take("&&"):
            if truthy(value):
                value = self._comparison()
            else:
                self._skipped(self._comparison)
        return value

    def _comparison(self) -> Value:
        value = self._unary()
        while True:
            if self._take("=="):
                value = _equal(value, self._unary())
            elif self._take("!="):
                value = not _equal(value, self._unary())
            else:
                return value

    def _unary(self) -> Value:
        if self._take("!"):
            return not truthy(self._unary())
        return self._primary()

    def _primary(self) -> Value:
        token = self._peek()
        if token is None:
            raise UnknownExpressionError(f"unexpected end of {self.text!r}")
        kind, text = token
        self.pos += 1
        if kind == "string":
            return text[1:-1].replace("''", "'")
        if kind == "number":
            return float(text)
        if kind == "op" and text == "(":
            value = self._or()
            self._expect(")")
            return value
        if kind != "name":
            raise UnknownExpressionError(f"unexpected {text!r} in {self.text!r}")
        if text in ("true", "false"):
            return text == "true"
        if text == "null":
            return None
        if self._take("("):
            return self._call(text)
        return self._path(text)

    def _arguments(self) -> list[Value]:
        values: list[Value] = []
        if self._take(")"):
            return values
        while True:
            values.append(self._or())
            if self._take(")"):
                return values
            self._expect(",")

    def _call(self, name: str) -> Value:
        args = self._arguments()
        status: dict[str, Callable[[], bool]] = {
            "always": lambda: True,
            "success": lambda: not self.contexts.job_failed,
            "failure": lambda: self.contexts.job_failed,
            "cancelled": lambda: False,
        }
        if name in status:
            if args:
                raise UnknownExpressionError(f"{name}() takes no arguments: {self.text!r}")
            self.status_called = True
            return status[name]()
        if self.skipping:
            if name not in ("format", "hashFiles"):
                raise UnknownExpressionError(f"unknown function {name}() in {self.text!r}")
            return None
        if name == "format":
            return _format(args, self.text)
        if name == "hashFiles":
            return _hash_files(args, self.contexts.workspace, self.text)
        raise UnknownExpressionError(f"unknown function {name}() in {self.text!r}")

    def _path(self, head: str) -> Value:
        names = [head]
        while self._take("."):
            token = self._peek()
            if token is None or token[0] != "name":
                raise UnknownExpressionError(f"expected a property name in {self.text!r}")
            names.append(token[1])
            self.pos += 1
        return self._lookup(names)

    def _lookup(self, names: list[str]) -> Value:
        if self.skipping:
            return None
        dotted = ".".join(names)
        head, rest = names[0], names[1:]
        if head == "inputs":
            if len(rest) != 1 or rest[0] not in self.contexts.inputs:
                raise UnknownExpressionError(f"not a declared input: {dotted}")
            return self.contexts.inputs[rest[0]]
        if head == "steps":
            if len(rest) < 2 or rest[0] not in self.contexts.step_ids:
                raise UnknownExpressionError(f"not a step of this action: {dotted}")
            record = self.contexts.steps.get(rest[0])
            if record is None:
                raise UnknownExpressionError(f"{dotted} read before step {rest[0]!r} ran")
            if rest[1:] in (["outcome"], ["conclusion"]):
                return record.outcome
            if len(rest) == 3 and rest[1] == "outputs":
                if record.outcome == "skipped":
                    return None  # GitHub: a skipped step has no outputs, each reads ''
                if rest[2] not in record.outputs:
                    raise UnknownExpressionError(f"step {rest[0]!r} never wrote output {rest[2]!r}")
                return record.outputs[rest[2]]
            raise UnknownExpressionError(f"unknown step property: {dotted}")
        if head == "github":
            value: object = self.contexts.github
            for name in rest:
                if not isinstance(value, Mapping) or name not in value:
                    raise UnknownExpressionError(f"not in the github context given: {dotted}")
                value = value[name]
            if isinstance(value, bool) or value is None or isinstance(value, str):
                return value
            if isinstance(value, int | float):
                return float(value)
            raise UnknownExpressionError(f"{dotted} is not a scalar")
        raise UnknownExpressionError(f"unknown context {head!r} in {dotted}")


def _format(args: list[Value], text: str) -> str:
    if not args or not isinstance(args[0], str):
        raise UnknownExpressionError(f"format() needs a format string: {text!r}")
    pattern, values = args[0], [as_text(a) for a in args[1:]]
    if "{{" in pattern or "}}" in pattern:
        raise UnknownExpressionError(f"format() escapes are not modelled: {text!r}")

    def replace(match: re.Match[str]) -> str:
        index = int(match.group(1))
        if index >= len(values):
            raise UnknownExpressionError(f"format() has no argument {index}: {text!r}")
        return values[index]

    return re.sub(r"\{(\d+)\}", replace, pattern)


def _hash_files(args: list[Value], workspace: Path, text: str) -> str:
    """The SHA-256 of the files matching the patterns (under the workspace), or ''."""
    digest = hashlib.sha256()
    matched = False
    for pattern in args:
        if not isinstance(pattern, str) or any(c in pattern for c in "*?[!"):
            raise UnknownExpressionError(f"hashFiles() patterns are not modelled: {text!r}")
        path = (workspace / pattern).resolve()
        if path.is_file():
            matched = True
            digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest() if matched else ""


def evaluate(expression: str, contexts: Contexts) -> Value:
    """The value of one expression (the text between ``${{`` and ``}}``)."""
    return _Parser(expression, contexts).parse()


def condition(text: str | None, contexts: Contexts) -> bool:
    """Whether a step with this ``if:`` runs: no status function means ``success() && …``;
    the condition may be written with or without ``${{ }}``."""
    if text is None:
        return not contexts.job_failed
    body = text.strip()
    wrapped = re.fullmatch(r"\$\{\{(.*)\}\}", body, re.DOTALL)
    parser = _Parser(wrapped.group(1) if wrapped else body, contexts)
    value = truthy(parser.parse())
    return value if parser.status_called else value and not contexts.job_failed


_EMBEDDED = re.compile(r"\$\{\{(.*?)\}\}", re.DOTALL)


def substitute(text: str, contexts: Contexts) -> str:
    """``text`` with every ``${{ … }}`` replaced by its value, as the runner writes it."""
    return _EMBEDDED.sub(lambda m: as_text(evaluate(m.group(1), contexts)), text)
