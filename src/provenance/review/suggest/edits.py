"""Recipe edits the schema can express, applied by a round-trip YAML edit.

An :class:`Edit` is a short list of operations on one recipe file, each naming the
key path of an arg list, an env map or ``variants.<v>.tp``:

* :class:`RemoveFlag` drops a flag (and its value) from an arg list, or a name from
  an env map;
* :class:`AddFlag` appends ``--flag [value]`` to an arg list (created with its parent
  mappings when missing) or sets an env entry;
* :class:`SetTp` pins ``variants.<v>.tp`` for one hardware id.

Moving a flag into a narrower scope is a removal plus additions. :func:`apply_edit`
edits the file with ruamel.yaml (round trip: comments, key order and quoting kept),
then splices only the changed lines into the original text, so every line the edit
does not touch stays byte for byte what it was. The loader stays PyYAML
(:mod:`provenance.safe_yaml`): the edited text is loaded and validated like any recipe.
"""

from __future__ import annotations

import difflib
import io
import itertools
import re
from collections.abc import Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict
from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.scalarstring import DoubleQuotedScalarString

from provenance.errors import InputError

__all__ = [
    "AddFlag",
    "Edit",
    "EditOp",
    "RemoveFlag",
    "SetTp",
    "apply_edit",
    "merge_edits",
    "unified_diff",
]

KeyPath = tuple[str, ...]


class RemoveFlag(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    op: Literal["remove"] = "remove"
    path: KeyPath
    #: the flag token as written (``--attention_config.backend``) or an env name
    flag: str

    def describe(self) -> str:
        return f"drop {self.flag} from {'.'.join(self.path)}"


class AddFlag(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    op: Literal["add"] = "add"
    path: KeyPath
    #: the argv tokens (``["--kv-cache-dtype", "fp8"]``), or ``[NAME, value]`` for an env map
    tokens: tuple[str, ...]
    env: bool = False

    def describe(self) -> str:
        shown = f"{self.tokens[0]}={self.tokens[1]}" if self.env else " ".join(self.tokens)
        return f"add {shown} to {'.'.join(self.path)}"


class SetTp(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    op: Literal["tp"] = "tp"
    variant: str
    hardware: str
    tp: int

    @property
    def path(self) -> KeyPath:
        return ("variants", self.variant, "tp")

    def describe(self) -> str:
        return f"pin variants.{self.variant}.tp to {self.tp} on {self.hardware}"


EditOp = RemoveFlag | AddFlag | SetTp


class Edit(BaseModel):
    """Operations applied together to one recipe file."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    ops: tuple[EditOp, ...]

    @property
    def size(self) -> int:
        return len(self.ops)

    def describe(self) -> list[str]:
        return [op.describe() for op in self.ops]

    def touched_variants(self) -> set[str] | None:
        """The variants whose combinations the edit can change (None: any)."""
        found: set[str] = set()
        for op in self.ops:
            if len(op.path) >= 2 and op.path[0] == "variants":
                found.add(op.path[1])
            else:
                return None
        return found


def _re_add(op: EditOp, removal: RemoveFlag) -> str | None:
    """The hardware block ``op`` writes ``removal``'s flag back into, when ``op`` re-adds
    a flag that ``removal`` drops from a variant's ``extra_args``/``extra_env``: the move
    of that flag into ``variants.<v>.hardware_overrides.<hw>``."""
    path = removal.path
    if not isinstance(op, AddFlag) or len(path) != 3 or path[0] != "variants":
        return None
    variant, section = path[1], path[2]
    here = op.path
    if (
        len(here) == 5
        and here[:3] == ("variants", variant, "hardware_overrides")
        and here[4] == section
        and op.tokens
        and op.tokens[0] == removal.flag
    ):
        return here[3]
    return None


def _own_hardware(edit: Edit, removal: RemoveFlag) -> set[str]:
    """The hardware ``edit`` was built for on ``removal``'s variant: the blocks it writes
    (other than re-adding the moved flag) and the TP sizes it pins."""
    variant = removal.path[1]
    found: set[str] = set()
    for op in edit.ops:
        if isinstance(op, SetTp):
            if op.variant == variant:
                found.add(op.hardware)
        elif _re_add(op, removal) is None:
            path = op.path
            if len(path) > 3 and path[:3] == ("variants", variant, "hardware_overrides"):
                found.add(path[3])
    return found


def merge_edits(edits: Sequence[Edit]) -> Edit:
    """One edit doing what each of ``edits`` does for the hardware it was built for.

    Each edit's operations are kept, except where two edits *move* the same flag out of
    a variant's list: one built for B200 drops it there and writes it back for every
    other hardware (B300 included), one built for B300 does the same the other way
    round, so their plain union would put the flag back on both. Merged, the flag is not
    written back for a hardware that another of these edits was built for (it writes
    that hardware's block or pins its TP) and leaves without the flag: each value
    scoped to its hardware, the flag absent where an edit needed it absent."""
    ops: dict[EditOp, None] = dict.fromkeys(op for edit in edits for op in edit.ops)
    dropped: set[EditOp] = set()
    for removal in (op for op in ops if isinstance(op, RemoveFlag)):
        if len(removal.path) != 3 or removal.path[0] != "variants":
            continue
        moving = [edit for edit in edits if removal in edit.ops]
        if len(moving) < 2:
            continue
        absent: set[str] = set()
        for edit in moving:
            blocks = {hw for op in edit.ops if (hw := _re_add(op, removal)) is not None}
            absent |= _own_hardware(edit, removal) - blocks
        for op in ops:
            if _re_add(op, removal) not in absent:
                continue
            # an edit that does not move this flag may still add it there on purpose
            if not any(op in edit.ops for edit in edits if removal not in edit.ops):
                dropped.add(op)
    return Edit(ops=tuple(op for op in ops if op not in dropped))


# --------------------------------------------------------------------------- style


class _Style(BaseModel):
    model_config = ConfigDict(frozen=True)

    mapping: int
    sequence: int
    offset: int
    width: int
    double_quotes: bool


_KEY_LINE = re.compile(r"^( *)([^\s#-][^:]*):\s*(#.*)?$")
_ITEM_LINE = re.compile(r"^( *)- ")


def _style(text: str) -> _Style:
    """The indentation the file uses (mapping step, sequence dash offset)."""
    lines = text.splitlines()
    steps: dict[int, int] = {}
    offsets: dict[int, int] = {}
    for here, following in itertools.pairwise(lines):
        key = _KEY_LINE.match(here)
        if key is None:
            continue
        indent = len(key.group(1))
        item = _ITEM_LINE.match(following)
        if item is not None:
            offset = len(item.group(1)) - indent
            offsets[offset] = offsets.get(offset, 0) + 1
            continue
        child = len(following) - len(following.lstrip(" "))
        if following.strip() and child > indent:
            steps[child - indent] = steps.get(child - indent, 0) + 1
    mapping = max(steps, key=steps.__getitem__) if steps else 2
    offset = max(offsets, key=offsets.__getitem__) if offsets else 0
    quoted = text.count('- "'), text.count("- '")
    longest = max((len(line) for line in lines), default=80)
    return _Style(
        mapping=mapping,
        sequence=offset + 2,
        offset=offset,
        width=longest,
        double_quotes=quoted[0] > quoted[1],
    )


def _yaml(style: _Style, width: int) -> YAML:
    yaml = YAML(typ="rt")
    yaml.preserve_quotes = True
    yaml.width = width
    yaml.indent(mapping=style.mapping, sequence=style.sequence, offset=style.offset)
    return yaml


def _dump(yaml: YAML, data: Any) -> str:
    out = io.StringIO()
    yaml.dump(data, out)
    return out.getvalue()


# --------------------------------------------------------------------------- applying


def _child(node: CommentedMap, key: str, make: bool, leaf: type) -> Any:
    found = node.get(key)
    if found is None:
        if not make:
            return None
        found = leaf()
        node[key] = found
    return found


def _container(data: CommentedMap, path: KeyPath, make: bool, leaf: type) -> Any:
    node: Any = data
    for depth, key in enumerate(path):
        if not isinstance(node, CommentedMap):
            raise InputError(f"{'.'.join(path[:depth])} is not a mapping")
        node = _child(node, key, make, leaf if depth == len(path) - 1 else CommentedMap)
        if node is None:
            return None
    return node


def _scalar(value: str, style: _Style) -> str:
    return DoubleQuotedScalarString(value) if style.double_quotes else value


def _apply_op(data: CommentedMap, op: EditOp, style: _Style) -> None:
    if isinstance(op, SetTp):
        variant = _container(data, ("variants", op.variant), False, CommentedMap)
        if not isinstance(variant, CommentedMap):
            raise InputError(f"no variant {op.variant!r}")
        current = variant.get("tp")
        if isinstance(current, int) or current is None:
            table = CommentedMap()
            if isinstance(current, int):
                table["default"] = current
            variant["tp"] = table
            current = table
        current[op.hardware] = op.tp
        return
    if isinstance(op, RemoveFlag):
        node = _container(data, op.path, False, CommentedSeq)
        if isinstance(node, CommentedMap):
            node.pop(op.flag, None)
            return
        if not isinstance(node, CommentedSeq):
            return
        index = 0
        while index < len(node):
            token = str(node[index])
            if token == op.flag or token.startswith(op.flag + "="):
                width = 1
                if index + 1 < len(node) and not str(node[index + 1]).startswith("-"):
                    width = 2
                del node[index : index + width]
                continue
            index += 1
        return
    if op.env:
        env = _container(data, op.path, True, CommentedMap)
        env[op.tokens[0]] = _scalar(op.tokens[1], style)
        return
    seq = _container(data, op.path, True, CommentedSeq)
    if not isinstance(seq, CommentedSeq):
        raise InputError(f"{'.'.join(op.path)} is not a list")
    seq.extend(_scalar(token, style) for token in op.tokens)


def _prune(data: Any) -> None:
    """Drop arg lists, env maps and override blocks an edit left empty."""
    if not isinstance(data, CommentedMap):
        return
    for key in list(data):
        value = data[key]
        if isinstance(value, CommentedMap):
            _prune(value)
        if isinstance(value, CommentedMap | CommentedSeq) and not value and key in _PRUNABLE:
            del data[key]


_PRUNABLE = {"extra_args", "extra_env", "args", "env", "vllm_args"}


def apply_edit(text: str, edit: Edit) -> str:
    """The recipe text with ``edit`` applied; untouched lines are kept byte for byte."""
    style = _style(text)
    best: tuple[int, YAML, str] | None = None
    for width in dict.fromkeys((style.width, 80, 100, 120, 100_000)):
        yaml = _yaml(style, width)
        plain = _dump(yaml, yaml.load(text))
        noise = sum(
            1 for a, b in zip(plain.splitlines(), text.splitlines(), strict=False) if a != b
        )
        if plain.count("\n") != text.count("\n"):
            noise += 10_000
        if best is None or noise < best[0]:
            best = (noise, yaml, plain)
    assert best is not None
    _, yaml, plain = best
    data = yaml.load(text)
    if not isinstance(data, CommentedMap):
        raise InputError("a recipe is a mapping at the top level")
    for op in edit.ops:
        _apply_op(data, op, style)
    _prune(data)
    edited = _dump(yaml, data)
    if plain.count("\n") != text.count("\n"):
        return edited  # the round trip moved lines: its output is the edit, whole
    return _splice(text, plain, edited)


def _splice(original: str, plain: str, edited: str) -> str:
    """``edited`` with every line equal to ``plain`` (the unedited round trip) taken from
    ``original`` instead: the round trip's whitespace noise never reaches the result."""
    source = original.splitlines(keepends=True)
    before = plain.splitlines(keepends=True)
    after = edited.splitlines(keepends=True)
    out: list[str] = []
    matcher = difflib.SequenceMatcher(a=before, b=after, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            out.extend(source[i1:i2])
        else:
            out.extend(after[j1:j2])
    return "".join(out)


def unified_diff(original: str, edited: str, path: str) -> str:
    """A ``git apply``-able unified diff of one file (``path`` relative to the repository)."""
    before = original.splitlines(keepends=True)
    after = edited.splitlines(keepends=True)
    for lines in (before, after):
        if lines and not lines[-1].endswith("\n"):
            lines[-1] += "\n\\ No newline at end of file\n"
    body = "".join(
        difflib.unified_diff(before, after, fromfile=f"a/{path}", tofile=f"b/{path}", n=3)
    )
    if not body:
        return ""
    return f"diff --git a/{path} b/{path}\n{body}"


def flag_spelling(key: str, existing: Sequence[str] = ()) -> list[str]:
    """argv tokens that set the canonical ``key`` to a value, spelt as the recipe spells that
    config elsewhere (``--attention_config.x``) or with dashes (``--kv-cache-dtype``)."""
    name, dot, rest = key.partition(".")
    if dot:
        for token in existing:
            head = token.split("=", 1)[0]
            if head.lstrip("-").replace("-", "_").split(".", 1)[0] == name and "." in head:
                return [head.split(".", 1)[0] + "." + rest]
        return [f"--{name.replace('_', '-')}.{rest}"]
    return [f"--{name.replace('_', '-')}"]
