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

import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache, lru_cache
from typing import Final

import tree_sitter
import tree_sitter_bash

from provenance.errors import InputError

MAX_SCRIPT_BYTES: Final = 512 * 1024
MAX_TREE_DEPTH: Final = 120

Node = tree_sitter.Node


# tree-sitter-bash's brace scanner calls C ``isdigit()`` on the character after
# ``{`` (and after ``{N..``); for code points above 0xFF that reads outside the
# C library's table and can crash the process. Such scripts are refused.
_UNSAFE_AFTER_BRACE: Final = re.compile(r"\{[0-9]*(?:\.\.[0-9]*)?[^\x00-\xff]")
_SURROGATE: Final = re.compile("[\ud800-\udfff]")


@cache
def _parser() -> tree_sitter.Parser:
    return tree_sitter.Parser(tree_sitter.Language(tree_sitter_bash.language()))


@dataclass(frozen=True)
class ParsedScript:
    path: str
    source: bytes
    tree: tree_sitter.Tree  # kept alive for as long as its nodes are used
    root: Node


def line_of(node: Node) -> int:
    """1-based line of a node."""
    return int(node.start_point[0]) + 1


def descendants(node: Node) -> Iterator[Node]:
    """The node and every node under it, iteratively (no recursion)."""
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(current.children)


def node_text(node: Node) -> str:
    raw = node.text
    return raw.decode("utf-8", errors="replace") if raw is not None else ""


def parse_script(script: str, path: str) -> ParsedScript:
    """Parse ``script``; raise ``InputError`` (with path and line) if it is not bash we can read.

    Parses are cached (a launcher is evaluated once per search-space point);
    syntax trees are immutable, so sharing them is safe.
    """
    return _parse_cached(script, path)


@lru_cache(maxsize=64)
def _parse_cached(script: str, path: str) -> ParsedScript:
    if "\x00" in script:
        raise InputError("script contains a NUL byte", path=path, line=_line_at(script, "\x00"))
    surrogate = _SURROGATE.search(script)
    if surrogate is not None:
        raise InputError(
            "script is not valid Unicode text (lone surrogate)",
            path=path,
            line=script[: surrogate.start()].count("\n") + 1,
        )
    unsafe = _UNSAFE_AFTER_BRACE.search(script)
    if unsafe is not None:
        raise InputError(
            f"character U+{ord(unsafe.group(0)[-1]):04X} right after '{{' is not supported",
            path=path,
            line=script[: unsafe.start()].count("\n") + 1,
            hint="tree-sitter-bash passes it to C isdigit(), which is undefined (and can crash) "
            "for characters above U+00FF",
        )
    source = script.encode("utf-8")
    if len(source) > MAX_SCRIPT_BYTES:
        raise InputError(
            f"script is {len(source)} bytes, above the {MAX_SCRIPT_BYTES}-byte limit",
            path=path,
        )
    tree = _parser().parse(source)
    root = tree.root_node
    _check_tree(root, path)
    return ParsedScript(path=path, source=source, tree=tree, root=root)


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
