"""Constructs that change what the served ``vllm`` command resolves to.

The evaluator models ``vllm serve ...`` as the real vLLM entry point run with
the argv it builds. A launcher can make that model false without touching the
argv: a shell function or alias named ``vllm`` (or named after a command that
runs it, such as ``command`` or ``exec``), ``hash -p`` or ``enable`` pointing
the name elsewhere, a directory put ahead of ``$PATH`` (which may hold a
``vllm`` wrapper), ``vllm`` run by a relative path, or ``BASH_ENV``/``ENV``
naming a file every child shell reads first. The evaluator cannot model what
such a construct runs, so it says so: :func:`redefinitions` lists each one it
sees on a statement (the evaluator records each as a partial marker with the
construct's line). Detection is syntactic and deliberately wide: a false
positive makes a record partial; a miss would forge a complete one.
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass
from typing import Final

from provenance.evidence.bash.syntax import Node, node_text

CONSTRUCT: Final = "command-redefinition"

# Names whose redefinition changes what ``vllm serve`` (or a wrapper around it) runs.
_RESOLVING_NAMES: Final = frozenset(
    {"vllm", "command", "builtin", "exec", "env", "hash", "enable", "type"}
    | {"nohup", "numactl", "time", "timeout", "stdbuf", "taskset", "nice"}
    | {"ionice", "setsid", "srun", "sudo", "chrt", "python", "python3"}
)
# Variables that change how a command name is looked up or what a child shell runs first.
_LOOKUP_VARIABLES: Final = frozenset({"PATH", "BASH_ENV", "ENV"})
_ASSIGNMENT: Final = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)(\+?=)(.*)", re.DOTALL)
# ``$PATH`` / ``${PATH}`` first, optionally quoted: the old search order still comes first.
_KEEPS_PATH_FIRST: Final = re.compile(r"""["']?\$(\{PATH\}|PATH\b)""")


@dataclass(frozen=True, slots=True)
class Redefinition:
    """One construct on a statement; ``node`` locates it."""

    node: Node
    detail: str


def redefinitions(node: Node) -> list[Redefinition]:
    """The constructs on this statement (not its sub-statements) that redefine a command."""
    kind = node.type
    if kind == "function_definition":
        name = node.child_by_field_name("name")
        if name is not None and node_text(name) in _RESOLVING_NAMES:
            return [
                Redefinition(node, f"function {node_text(name)}() changes what `vllm serve` runs")
            ]
        return []
    if kind == "variable_assignment":
        return _assignment(node)
    if kind in ("variable_assignments", "declaration_command"):
        return [r for c in node.named_children for r in _assignment(c)]
    if kind == "command":
        return _command(node)
    return []


def _assignment(node: Node) -> list[Redefinition]:
    if node.type != "variable_assignment":
        return []
    return _assignment_text(node, node_text(node))


def _assignment_text(node: Node, text: str) -> list[Redefinition]:
    match = _ASSIGNMENT.fullmatch(text)
    if match is None or match.group(1) not in _LOOKUP_VARIABLES:
        return []
    name, operator, value = match.groups()
    if name == "PATH":
        if operator == "+=" or _KEEPS_PATH_FIRST.match(value):
            return []
        return [Redefinition(node, f"PATH={value[:80]} may put another vllm first")]
    return [Redefinition(node, f"{name} names a file every child shell runs first")]


def _command(node: Node) -> list[Redefinition]:
    found = [r for c in node.named_children for r in _assignment(c)]
    name_node = node.child_by_field_name("name")
    if name_node is None:
        return found
    head = node_text(name_node)
    args = [
        node_text(c)
        for i, c in enumerate(node.children)
        if node.field_name_for_child(i) == "argument"
    ]
    plain = [a.strip("\"'") for a in args]
    if head == "alias":
        names = [a.partition("=")[0] for a in plain if "=" in a]
        if any(n in _RESOLVING_NAMES for n in names) or not names:
            found.append(Redefinition(node, "alias changes what a command name runs"))
    elif head == "shopt" and "expand_aliases" in plain and "-s" in plain:
        found.append(Redefinition(node, "shopt -s expand_aliases lets aliases replace commands"))
    elif head == "hash" and any(a.startswith("-") and "p" in a for a in plain):
        found.append(Redefinition(node, "hash -p binds a command name to another file"))
    elif head == "enable" and plain:
        found.append(Redefinition(node, "enable loads or hides builtins"))
    else:
        relative = [w for w in [head, *plain] if _is_relative_vllm(w)]
        if relative:
            found.append(Redefinition(node, f"{relative[0]} runs a vllm from a relative path"))
    if posixpath.basename(head) in _RESOLVING_NAMES:
        # ``env PATH=./bin:$PATH vllm serve``: the wrapper's own assignments.
        for arg, text in zip(
            (c for i, c in enumerate(node.children) if node.field_name_for_child(i) == "argument"),
            plain,
            strict=True,
        ):
            found.extend(_assignment_text(arg, text))
    return found


def _is_relative_vllm(word: str) -> bool:
    return "/" in word and not word.startswith("/") and posixpath.basename(word) == "vllm"
