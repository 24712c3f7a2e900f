"""Parsing a bash script into a syntax tree (tree-sitter-bash), never running it.

Why tree-sitter-bash and not bashlex: bashlex 0.18 raises ``NotImplementedError``
on arithmetic expansion ``$(( ))`` (used by every InferenceX B200/B300 launcher)
and a ``ParsingError`` on ``[[ ]]``, ``(( ))``, array assignments ``X=(...)``,
``declare -A`` literals and ``case`` — the constructs these launchers are made
of. tree-sitter-bash is a complete bash grammar (the one GitHub uses).

A script the grammar cannot parse (any ``ERROR`` or ``MISSING`` node) is an
:class:`~provenance.errors.InputError` naming the file and the first bad line:
the evaluator never evaluates half a parse. Scripts above
:data:`MAX_SCRIPT_BYTES` or nested deeper than :data:`MAX_TREE_DEPTH` are
refused the same way, before any evaluation.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Final

import tree_sitter
import tree_sitter_bash

from provenance.errors import InputError

MAX_SCRIPT_BYTES: Final = 512 * 1024
MAX_TREE_DEPTH: Final = 120

Node = tree_sitter.Node


@cache
def _parser() -> tree_sitter.Parser:
    return tree_sitter.Parser(tree_sitter.Language(tree_sitter_bash.language()))


@dataclass(frozen=True)
class ParsedScript:
    path: str
    source: bytes
    root: Node


def line_of(node: Node) -> int:
    """1-based line of a node."""
    return int(node.start_point[0]) + 1


def node_text(node: Node) -> str:
    raw = node.text
    return raw.decode("utf-8", errors="replace") if raw is not None else ""


def parse_script(script: str, path: str) -> ParsedScript:
    """Parse ``script``; raise ``InputError`` (with path and line) if it is not bash we can read."""
    if "\x00" in script:
        raise InputError("script contains a NUL byte", path=path, line=_line_at(script, "\x00"))
    source = script.encode("utf-8", errors="surrogateescape")
    if len(source) > MAX_SCRIPT_BYTES:
        raise InputError(
            f"script is {len(source)} bytes, above the {MAX_SCRIPT_BYTES}-byte limit",
            path=path,
        )
    tree = _parser().parse(source)
    root = tree.root_node
    _check_tree(root, path)
    return ParsedScript(path=path, source=source, root=root)


def _line_at(script: str, needle: str) -> int:
    return script[: script.index(needle)].count("\n") + 1


def _check_tree(root: Node, path: str) -> None:
    """Refuse parse errors and pathological nesting, iteratively (no recursion)."""
    stack: list[tuple[Node, int]] = [(root, 0)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_TREE_DEPTH:
            raise InputError(
                f"script nests deeper than {MAX_TREE_DEPTH} levels",
                path=path,
                line=line_of(node),
            )
        if node.is_error or node.is_missing:
            what = "missing " + node.type if node.is_missing else "unexpected text"
            raise InputError(
                f"bash syntax error ({what}) near {node_text(node)[:40]!r}",
                path=path,
                line=line_of(node),
            )
        if node.has_error:
            stack.extend((child, depth + 1) for child in node.children)
        else:
            stack.extend((child, depth + 1) for child in node.children if child.child_count)
