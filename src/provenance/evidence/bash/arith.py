"""A small, safe evaluator for bash arithmetic (``$(( ))``, ``(( ))``, ``let``).

Bash expands ``$X``, ``${X}`` and command substitutions inside an arithmetic
expression first, then evaluates the resulting *string*; this module does the
second step. It is a tokenizer plus a precedence-climbing parser building a
tiny AST, then an evaluator over 64-bit two's-complement integers — no Python
``eval``. Variables named in the expression are read through a callback (their
values are themselves evaluated as expressions, as bash does, to a bounded
depth); assignments (``=``, ``+=``, ``++``, ...) write through a callback.

Anything that cannot be evaluated (a hole in a value, division by zero, a
syntax error, array subscripts) yields :class:`ArithUnknown` with a reason; the
caller turns it into a partial marker. Nothing is guessed.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

MAX_EXPR_CHARS: Final = 10_000
MAX_PARSE_DEPTH: Final = 100
MAX_VALUE_DEPTH: Final = 8

_MASK: Final = (1 << 64) - 1


def wrap64(value: int) -> int:
    value &= _MASK
    return value - (1 << 64) if value >= 1 << 63 else value


@dataclass(frozen=True)
class ArithUnknown:
    reason: str


Result = int | ArithUnknown

# A variable read returns its text, ``None`` when unset, or ArithUnknown for a hole.
ReadVar = Callable[[str], "str | ArithUnknown | None"]
WriteVar = Callable[[str, "int | ArithUnknown"], None]


class _ArithSyntaxError(Exception):
    pass


_TOKEN_RE: Final = re.compile(
    r"\s*(?:"
    r"(?P<num>0[xX][0-9a-fA-F]+|[0-9]+#[0-9a-zA-Z@_]+|[0-9]+)"
    r"|(?P<name>[A-Za-z_][A-Za-z_0-9]*)"
    r"|(?P<op>\*\*=|<<=|>>=|\+\+|--|\*\*|<<|>>|<=|>=|==|!=|&&|\|\||[-+*/%&^|]=|[-+*/%<>=!~&^|?:,()\[\]])"
    r")"
)

_BINARY: Final[dict[str, tuple[int, bool]]] = {
    # op: (precedence, right-associative); higher binds tighter
    ",": (1, False),
    "=": (2, True),
    "+=": (2, True),
    "-=": (2, True),
    "*=": (2, True),
    "/=": (2, True),
    "%=": (2, True),
    "<<=": (2, True),
    ">>=": (2, True),
    "&=": (2, True),
    "^=": (2, True),
    "|=": (2, True),
    "**=": (2, True),
    "?": (3, True),
    "||": (4, False),
    "&&": (5, False),
    "|": (6, False),
    "^": (7, False),
    "&": (8, False),
    "==": (9, False),
    "!=": (9, False),
    "<": (10, False),
    "<=": (10, False),
    ">": (10, False),
    ">=": (10, False),
    "<<": (11, False),
    ">>": (11, False),
    "+": (12, False),
    "-": (12, False),
    "*": (13, False),
    "/": (13, False),
    "%": (13, False),
    "**": (14, True),
}
_UNARY_PREC: Final = 15

Ast = tuple[object, ...]


def _tokenize(expr: str) -> list[tuple[str, str]]:
    tokens: list[tuple[str, str]] = []
    pos = 0
    while pos < len(expr):
        if expr[pos:].strip() == "":
            break
        match = _TOKEN_RE.match(expr, pos)
        if match is None or match.end() == pos:
            raise _ArithSyntaxError(f"unexpected {expr[pos:].strip()[:10]!r}")
        kind = match.lastgroup
        assert kind is not None
        tokens.append((kind, match.group(kind)))
        pos = match.end()
    return tokens


class _Parser:
    def __init__(self, tokens: list[tuple[str, str]]) -> None:
        self.tokens = tokens
        self.pos = 0
        self.depth = 0

    def peek(self) -> tuple[str, str] | None:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def take(self) -> tuple[str, str]:
        token = self.peek()
        if token is None:
            raise _ArithSyntaxError("unexpected end of expression")
        self.pos += 1
        return token

    def expect(self, value: str) -> None:
        token = self.take()
        if token[1] != value:
            raise _ArithSyntaxError(f"expected {value!r}, found {token[1]!r}")

    def parse(self) -> Ast:
        node = self.expression(0)
        if self.peek() is not None:
            raise _ArithSyntaxError(f"unexpected {self.peek()[1]!r}")  # type: ignore[index]
        return node

    def expression(self, min_prec: int) -> Ast:
        self.depth += 1
        if self.depth > MAX_PARSE_DEPTH:
            raise _ArithSyntaxError("expression nests too deeply")
        try:
            left = self.unary()
            while True:
                token = self.peek()
                if token is None or token[0] != "op" or token[1] not in _BINARY:
                    return left
                op = token[1]
                prec, right_assoc = _BINARY[op]
                if prec < min_prec:
                    return left
                self.take()
                if op == "?":
                    then = self.expression(1)
                    self.expect(":")
                    other = self.expression(prec)
                    left = ("?", left, then, other)
                    continue
                right = self.expression(prec if right_assoc else prec + 1)
                if prec == 2:
                    if left[0] != "var":
                        raise _ArithSyntaxError("assignment to a non-variable")
                    left = ("assign", op, left[1], right)
                else:
                    left = ("bin", op, left, right)
        finally:
            self.depth -= 1

    def unary(self) -> Ast:
        token = self.take()
        kind, value = token
        if kind == "op" and value in ("-", "+", "!", "~"):
            return ("un", value, self.expression(_UNARY_PREC))
        if kind == "op" and value in ("++", "--"):
            operand = self.unary()
            if operand[0] != "var":
                raise _ArithSyntaxError(f"{value} needs a variable")
            return ("pre", value, operand[1])
        if kind == "op" and value == "(":
            inner = self.expression(0)
            self.expect(")")
            return inner
        if kind == "num":
            return ("num", _parse_number(value))
        if kind == "name":
            nxt = self.peek()
            if nxt is not None and nxt[1] == "[":
                raise _ArithSyntaxError("array subscripts in arithmetic are not supported")
            if nxt is not None and nxt[1] in ("++", "--"):
                self.take()
                return ("post", nxt[1], value)
            return ("var", value)
        raise _ArithSyntaxError(f"unexpected {value!r}")


def _parse_number(text: str) -> int:
    if "#" in text:
        base_text, digits = text.split("#", 1)
        base = int(base_text)
        if not 2 <= base <= 36:
            raise _ArithSyntaxError(f"invalid base {base}")
        try:
            return int(digits, base)
        except ValueError as exc:
            raise _ArithSyntaxError(f"invalid number {text!r}") from exc
    if text[:2] in ("0x", "0X"):
        return int(text, 16)
    if len(text) > 1 and text.startswith("0"):
        try:
            return int(text, 8)
        except ValueError as exc:
            raise _ArithSyntaxError(f"invalid octal number {text!r}") from exc
    return int(text)


class ArithmeticEvaluator:
    """Evaluate bash arithmetic strings with variable access through callbacks."""

    def __init__(self, read: ReadVar, write: WriteVar) -> None:
        self._read = read
        self._write = write

    def evaluate(self, expr: str, depth: int = 0) -> Result:
        if len(expr) > MAX_EXPR_CHARS:
            return ArithUnknown("arithmetic expression too long")
        if expr.strip() == "":
            return 0
        try:
            ast = _Parser(_tokenize(expr)).parse()
        except _ArithSyntaxError as exc:
            return ArithUnknown(f"arithmetic syntax: {exc}")
        except (ValueError, OverflowError) as exc:
            return ArithUnknown(f"arithmetic: {exc}")
        return self._eval(ast, depth)

    def _var(self, name: str, depth: int) -> Result:
        value = self._read(name)
        if isinstance(value, ArithUnknown):
            return value
        if value is None or value.strip() == "":
            return 0
        stripped = value.strip()
        if re.fullmatch(r"-?[0-9]+", stripped):
            return wrap64(int(stripped))
        if depth >= MAX_VALUE_DEPTH:
            return ArithUnknown(f"value of {name} recurses too deeply")
        return self.evaluate(stripped, depth + 1)

    def _eval(self, node: Ast, depth: int) -> Result:
        tag = node[0]
        if tag == "num":
            return wrap64(int(node[1]))  # type: ignore[call-overload]
        if tag == "var":
            return self._var(str(node[1]), depth)
        if tag == "un":
            value = self._eval(node[2], depth)  # type: ignore[arg-type]
            if isinstance(value, ArithUnknown):
                return value
            op = node[1]
            if op == "-":
                return wrap64(-value)
            if op == "+":
                return value
            if op == "!":
                return int(value == 0)
            return wrap64(~value)
        if tag in ("pre", "post"):
            name = str(node[2])
            old = self._var(name, depth)
            if isinstance(old, ArithUnknown):
                self._write(name, old)
                return old
            new = wrap64(old + 1 if node[1] == "++" else old - 1)
            self._write(name, new)
            return new if tag == "pre" else old
        if tag == "assign":
            op, name, rhs = str(node[1]), str(node[2]), node[3]
            value = self._eval(rhs, depth)  # type: ignore[arg-type]
            if op != "=" and not isinstance(value, ArithUnknown):
                old = self._var(name, depth)
                value = old if isinstance(old, ArithUnknown) else _binary(op[:-1], old, value)
            self._write(name, value)
            return value
        if tag == "?":
            cond = self._eval(node[1], depth)  # type: ignore[arg-type]
            if isinstance(cond, ArithUnknown):
                return cond
            return self._eval(node[2] if cond else node[3], depth)  # type: ignore[arg-type]
        if tag == "bin":
            op = str(node[1])
            left = self._eval(node[2], depth)  # type: ignore[arg-type]
            if op in ("&&", "||"):
                if not isinstance(left, ArithUnknown):
                    if op == "&&" and left == 0:
                        return 0
                    if op == "||" and left != 0:
                        return 1
                right = self._eval(node[3], depth)  # type: ignore[arg-type]
                if isinstance(right, ArithUnknown):
                    return right
                if isinstance(left, ArithUnknown):
                    if op == "&&" and right == 0:
                        return 0
                    if op == "||" and right != 0:
                        return 1
                    return left
                return int(right != 0)
            right = self._eval(node[3], depth)  # type: ignore[arg-type]
            if isinstance(left, ArithUnknown):
                return left
            if isinstance(right, ArithUnknown):
                return right
            if op == ",":
                return right
            return _binary(op, left, right)
        return ArithUnknown(f"unsupported arithmetic node {tag!r}")


def _binary(op: str, left: int, right: int) -> Result:
    if op == "+":
        return wrap64(left + right)
    if op == "-":
        return wrap64(left - right)
    if op == "*":
        return wrap64(left * right)
    if op in ("/", "%"):
        if right == 0:
            return ArithUnknown("division by zero")
        quotient = abs(left) // abs(right)
        if (left < 0) != (right < 0):
            quotient = -quotient
        return wrap64(quotient if op == "/" else left - right * quotient)
    if op == "**":
        if right < 0:
            return ArithUnknown("negative exponent")
        return wrap64(pow(left, right, 1 << 64))
    if op == "<<":
        return wrap64(left << (right & 63))
    if op == ">>":
        return wrap64(left >> (right & 63))
    if op == "&":
        return wrap64(left & right)
    if op == "|":
        return wrap64(left | right)
    if op == "^":
        return wrap64(left ^ right)
    comparisons = {
        "<": left < right,
        "<=": left <= right,
        ">": left > right,
        ">=": left >= right,
        "==": left == right,
        "!=": left != right,
    }
    if op in comparisons:
        return int(comparisons[op])
    return ArithUnknown(f"unsupported operator {op!r}")
