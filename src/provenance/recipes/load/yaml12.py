"""Refuse plain YAML scalars that YAML 1.1 and the site's YAML 1.2 parser read differently.

``provenance`` parses with PyYAML (YAML 1.1); the recipes site parses with
js-yaml 4 (YAML 1.2 core schema plus timestamps). The two agree on every file
at vllm-project/recipes 8959cf6, but an unquoted ``on``, ``0755``, ``1_000``,
``1:30`` or ``1e3`` would silently become a different value on each side
(spec pitfall 17). :func:`check_yaml12_agreement` walks the composed document
and raises an :class:`~provenance.errors.InputError` naming ``file:line
(key.path)`` for the first plain scalar whose two readings differ.
"""

from __future__ import annotations

import math
import re
from typing import Any

import yaml

from provenance.errors import InputError
from provenance.safe_yaml import format_key_path

_NULL = {"~", "null", "Null", "NULL", ""}
_TRUE = {"true", "True", "TRUE"}
_FALSE = {"false", "False", "FALSE"}
_FLOAT = re.compile(
    r"^(?:[-+]?(?:[0-9][0-9_]*)(?:\.[0-9_]*)?(?:[eE][-+]?[0-9]+)?"
    r"|\.[0-9_]+(?:[eE][-+]?[0-9]+)?"
    r"|[-+]?\.(?:inf|Inf|INF)"
    r"|\.(?:nan|NaN|NAN))$"
)
_DATE = re.compile(r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$")
_TIMESTAMP = re.compile(
    r"^[0-9]{4}-[0-9][0-9]?-[0-9][0-9]?(?:[Tt]|[ \t]+)[0-9][0-9]?:[0-9]{2}:[0-9]{2}"
    r"(?:\.[0-9]*)?(?:[ \t]*(?:Z|[-+][0-9][0-9]?(?::[0-9]{2})?))?$"
)
_DIGITS = {2: "01", 8: "01234567", 10: "0123456789", 16: "0123456789abcdefABCDEF"}


def _yaml12_int(text: str) -> int | None:
    """js-yaml's integer rule (signs, 0b/0o/0x prefixes, ``_`` separators)."""
    body = text
    sign = 1
    if body[:1] in ("-", "+"):
        sign = -1 if body[0] == "-" else 1
        body = body[1:]
    if body == "0":
        return 0
    base = 10
    if body.startswith(("0b", "0o", "0x")):
        base = {"b": 2, "o": 8, "x": 16}[body[1]]
        body = body[2:]
    elif body.startswith("_"):
        return None
    if not body or body.endswith("_"):
        return None
    digits = body.replace("_", "")
    if not digits or any(ch not in _DIGITS[base] for ch in digits):
        return None
    return sign * int(digits, base)


def yaml12_reading(text: str) -> tuple[str, Any]:
    """How the site's parser reads one plain scalar: (kind, value)."""
    if text in _NULL:
        return "null", None
    if text in _TRUE:
        return "bool", True
    if text in _FALSE:
        return "bool", False
    as_int = _yaml12_int(text)
    if as_int is not None:
        return "number", float(as_int)
    if _FLOAT.match(text) and not text.endswith("_"):
        cleaned = text.replace("_", "").lower()
        if cleaned.lstrip("+-") == ".inf":
            return "number", -math.inf if cleaned.startswith("-") else math.inf
        if cleaned == ".nan":
            return "number", math.nan
        return "number", float(cleaned)
    if _DATE.match(text) or _TIMESTAMP.match(text):
        return "timestamp", None
    return "str", text


_TAG_KINDS = {
    "tag:yaml.org,2002:null": "null",
    "tag:yaml.org,2002:bool": "bool",
    "tag:yaml.org,2002:int": "number",
    "tag:yaml.org,2002:float": "number",
    "tag:yaml.org,2002:timestamp": "timestamp",
    "tag:yaml.org,2002:str": "str",
}


def _yaml11_reading(node: yaml.ScalarNode, constructor: yaml.SafeLoader) -> tuple[str, Any]:
    kind = _TAG_KINDS.get(node.tag, "other")
    if kind == "number":
        return kind, float(constructor.construct_object(node))
    if kind == "bool":
        return kind, constructor.construct_object(node)
    if kind == "str":
        return kind, node.value
    return kind, None


def _same(a: tuple[str, Any], b: tuple[str, Any]) -> bool:
    if a[0] != b[0]:
        return False
    if a[0] == "number":
        return bool(a[1] == b[1] or (math.isnan(a[1]) and math.isnan(b[1])))
    return bool(a[1] == b[1])


def _describe(reading: tuple[str, Any]) -> str:
    kind, value = reading
    if kind == "number":
        return f"the number {value:g}"
    if kind == "bool":
        return f"the boolean {str(value).lower()}"
    if kind == "str":
        return "a string"
    return kind


def check_yaml12_agreement(text: str, path: str) -> None:
    """Raise InputError at the first plain scalar the two YAML versions read differently."""
    check_yaml12_nodes(yaml.compose(text, Loader=yaml.SafeLoader), path)


def check_yaml12_nodes(root: yaml.Node | None, path: str) -> None:
    """:func:`check_yaml12_agreement` on an already composed document
    (``safe_yaml.load_yaml(..., keep_node=True).node``), which saves parsing it twice."""
    if root is None:
        return
    constructor = yaml.SafeLoader("")
    seen: set[int] = set()
    stack: list[tuple[yaml.Node, tuple[str | int, ...]]] = [(root, ())]
    while stack:
        node, key_path = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, yaml.ScalarNode):
            if node.style is None and node.tag in _TAG_KINDS:
                old = _yaml11_reading(node, constructor)
                new = yaml12_reading(node.value)
                if not _same(old, new):
                    raise InputError(
                        f"plain scalar {node.value!r} is {_describe(old)} in YAML 1.1 but "
                        f"{_describe(new)} in YAML 1.2 (the recipes site's parser); quote it",
                        path=path,
                        line=node.start_mark.line + 1,
                        key_path=format_key_path(key_path) or None,
                    )
        elif isinstance(node, yaml.MappingNode):
            for key_node, value_node in reversed(node.value):
                key = key_node.value if isinstance(key_node, yaml.ScalarNode) else "?"
                stack.append((value_node, (*key_path, key)))
                stack.append((key_node, key_path))
        elif isinstance(node, yaml.SequenceNode):
            for index in range(len(node.value) - 1, -1, -1):
                stack.append((node.value[index], (*key_path, index)))
