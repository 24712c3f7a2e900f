"""Safe YAML loading with file:line diagnostics.

Every YAML file ``provenance`` reads (recipes, srt-slurm recipes, master
configs, the ledger) goes through :func:`load_yaml`. It

* accepts only the YAML 1.1 core types PyYAML's ``SafeLoader`` builds (no
  tags that construct objects);
* rejects duplicate mapping keys (PyYAML silently keeps the last one), unless
  the caller reads a file the way a consumer using ``yaml.safe_load`` reads it
  (``last_duplicates=True``: the last wins, and every repeat is listed);
* bounds the input: a size limit, a nesting-depth limit and an alias limit, so
  an alias "billion laughs" bomb is refused before anything expands it;
* decodes strictly as UTF-8 (a UTF-8 byte-order mark is allowed and dropped);
* remembers the line of every key and item, so a later validation error can
  name ``file:line (key.path)``.

:func:`parse_model` validates loaded data against a pydantic model and turns
the first validation error into an :class:`~provenance.errors.InputError` with
that location.
"""

from __future__ import annotations

import re
import stat
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ValidationError
from yaml.composer import Composer
from yaml.constructor import SafeConstructor
from yaml.resolver import Resolver

from provenance.errors import InputError, SourceLocation

try:  # libyaml's scanner and parser (C), when PyYAML was built with it
    from yaml._yaml import CParser

    HAVE_LIBYAML = True
except ImportError:  # pragma: no cover - depends on the PyYAML build
    HAVE_LIBYAML = False

#: Largest YAML file accepted, in bytes. Real recipes are < 64 KiB, InferenceX
#: master configs and perf-changelog.yaml < 400 KiB at 843c625; 2 MiB leaves five times
#: that room while bounding parse time (pure-Python PyYAML: ~10 s per MiB on a busy core).
MAX_YAML_BYTES = 2 * 1024 * 1024
#: Deepest nesting of mappings/sequences accepted.
MAX_DEPTH = 64
#: Most alias references (``*name``) accepted in one document. Real files use
#: a handful; an alias bomb needs many.
MAX_ALIASES = 256
#: Most nodes the document may stand for once every alias is expanded. Aliases
#: are shared by reference when loaded, but anything that walks or serialises
#: the data expands them; a "billion laughs" bomb is refused here instead.
MAX_EXPANDED_NODES = 1_000_000

KeyPath = tuple[str | int, ...]
M = TypeVar("M", bound=BaseModel)


def format_key_path(key_path: Sequence[str | int]) -> str:
    """``("variants", "nvfp4", "extra_args", 2)`` → ``variants.nvfp4.extra_args[2]``."""
    text = ""
    for part in key_path:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            text += f".{part}" if text else str(part)
    return text


@dataclass(frozen=True)
class LoadedYaml:
    """A parsed YAML document plus the 1-based line of every key path in it."""

    path: str
    data: Any
    lines: dict[KeyPath, int] = field(default_factory=dict)
    #: Duplicate keys that were tolerated because both values were identical
    #: (only with ``identical_duplicates=True``): ``(key path, line)``.
    duplicates: tuple[tuple[KeyPath, int], ...] = ()
    #: Duplicate keys with a different value, kept as PyYAML keeps them (the last
    #: wins; only with ``last_duplicates=True``): ``(key path, line, earlier line)``.
    overridden: tuple[tuple[KeyPath, int, int], ...] = ()
    #: The composed node graph, only when asked for (``keep_node=True``). Tags, values,
    #: scalar styles and marks are the pure-Python loader's; ``flow_style`` of a block
    #: sequence may be ``False`` (libyaml) where PyYAML says ``None`` (indentless).
    node: yaml.Node | None = field(default=None, repr=False, compare=False)

    def line_of(self, key_path: Sequence[str | int]) -> int | None:
        """Line of ``key_path``, or of its nearest ancestor that has one."""
        parts = tuple(key_path)
        while True:
            line = self.lines.get(parts)
            if line is not None:
                return line
            if not parts:
                return None
            parts = parts[:-1]

    def location(self, key_path: Sequence[str | int]) -> SourceLocation:
        return SourceLocation(
            self.path, line=self.line_of(key_path), key_path=format_key_path(key_path) or None
        )


class _BoundedMixin(Composer):
    """The project's checks, shared by both loaders: aliases counted and nesting depth
    bounded as the composer meets them; PyYAML's own errors on bad scalars caught."""

    alias_count: int
    depth: int

    def compose_node(self, parent: yaml.Node | None, index: int) -> yaml.Node | None:
        events: Any = self  # the parser half (Python or C) of the concrete loader
        if events.check_event(yaml.AliasEvent):
            self.alias_count += 1
            if self.alias_count > MAX_ALIASES:
                event = events.peek_event()
                raise _LimitExceededError(
                    f"more than {MAX_ALIASES} YAML aliases (possible alias bomb)",
                    event.start_mark,
                )
        # The composer recurses once per level: stop at the limit, before Python's own.
        self.depth += 1
        try:
            if self.depth > MAX_DEPTH + 1:
                event = events.peek_event()
                raise _LimitExceededError(
                    f"YAML nesting deeper than {MAX_DEPTH} levels", event.start_mark
                )
            return super().compose_node(parent, index)
        finally:
            self.depth -= 1

    def construct_object(self, node: yaml.Node, deep: bool = False) -> Any:
        # SafeConstructor lets Python's own errors escape for some scalars
        # (``2020-13-45`` as a timestamp, a 5000-digit int, ``!!float x``, …).
        try:
            return super().construct_object(node, deep)  # type: ignore[misc]
        except (ValueError, TypeError, OverflowError, IndexError, KeyError, AttributeError) as exc:
            # (``!!float`` with no value: IndexError; ``!!bool x``: KeyError;
            # ``!!timestamp x``: AttributeError)
            kind = node.tag.rsplit(":", 1)[-1]
            why = (
                str(exc).split(":", 1)[0] if isinstance(exc, ValueError) else f"not a valid {kind}"
            )
            raise _LimitExceededError(
                f"invalid YAML value {_short(node)} for {kind} ({why})",
                node.start_mark,
            ) from None


class _BoundedLoader(_BoundedMixin, yaml.SafeLoader):
    """The reference loader: PyYAML's pure-Python ``SafeLoader`` plus the checks."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self.alias_count = 0
        self.depth = 0


if HAVE_LIBYAML:

    class _LibyamlLoader(_BoundedMixin, Composer, CParser, SafeConstructor, Resolver):
        """``_BoundedLoader`` over libyaml's scanner and parser (C).

        Only the events come from C: PyYAML's own Python ``Composer`` (with the limits
        of ``_BoundedMixin``), ``Resolver`` and ``SafeConstructor`` do the rest, as in
        ``_BoundedLoader``. ``Composer`` precedes ``CParser`` in the MRO, so CParser's
        own composer (C-recursive, without the limits) is never used; libyaml's parser
        does not recurse and is asked for one event at a time.
        """

        def __init__(self, stream: str) -> None:
            CParser.__init__(self, stream)
            Composer.__init__(self)
            SafeConstructor.__init__(self)
            Resolver.__init__(self)
            self.alias_count = 0
            self.depth = 0

        def compose_scalar_node(self, anchor: Any) -> yaml.ScalarNode:
            node = super().compose_scalar_node(anchor)
            if node.style == "":  # libyaml's plain style; PyYAML's parser says None
                node.style = None
            return node


#: Texts left to the pure-Python loader because libyaml reads them differently: a tab
#: as a separator, NEL/LS/PS line breaks, a BOM after the start, lone surrogates
#: (libyaml reads UTF-8 only), a comment glued to a block scalar header, and the
#: non-specific tag ``!`` (libyaml resolves an empty scalar tagged ``!`` as a string,
#: PyYAML as null).
_PURE_ONLY = re.compile(
    r"[\t\x85\u2028\u2029\ufeff\ud800-\udfff]|[|>][-+0-9]*#|(?<![^\s\[\]{},])!(?![^\s\[\]{},])"
)


def _compose_with_libyaml(text: str) -> tuple[_BoundedMixin, yaml.Node | None] | None:
    """The document composed over libyaml's parser, or ``None``: the reference decides.

    Why (measured with ``benchmarks/yaml_load.py``, docs/performance.md): PyYAML's
    pure-Python scanner and parser are most of a load. Over libyaml's events the
    embedded MiniMax-M3 recipes root (13 files, 23 KB) loads in 0.010 s of CPU instead
    of 0.045 s, and the 86 embedded ledger files (287 KB) in 0.071 s instead of 0.33 s:
    on every audit (the recipe) and every audit of a clean checkout (the ledger: CI).

    Only a composed document is taken from libyaml. Any refusal while parsing or
    composing (libyaml's own, such as its nesting limit, or ours) and any text libyaml
    reads differently (``_PURE_ONLY``, no final line break) is left to the pure-Python
    ``_BoundedLoader``, so messages and lines are exactly its own. The checks made after
    composing (duplicate keys, alias expansion, values) run on a node graph equal to the
    one it composes (``tests/test_safe_yaml_fast.py``).
    """
    if not HAVE_LIBYAML or not text.endswith("\n") or _PURE_ONLY.search(text):
        return None
    loader = _LibyamlLoader(text)
    try:
        node = loader.get_single_node()
    except Exception:  # the reference loader decides and reports
        loader.dispose()
        return None
    return loader, node


def _short(node: yaml.Node) -> str:
    if isinstance(node, yaml.ScalarNode):
        value = str(node.value)
        return repr(value if len(value) <= 40 else value[:40] + "...")
    return "node"


class _LimitExceededError(Exception):
    def __init__(self, message: str, mark: yaml.Mark | None) -> None:
        super().__init__(message)
        self.message = message
        self.mark = mark


def _decode(raw: bytes, path: str) -> str:
    if raw.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise InputError("file is UTF-16/32 encoded; YAML inputs must be UTF-8", path=path, line=1)
    if raw.startswith(b"\xef\xbb\xbf"):
        raw = raw[3:]
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise InputError(
            f"file is not valid UTF-8 (byte 0x{raw[exc.start]:02x} at offset {exc.start})",
            path=path,
            line=line,
        ) from None


def _same_node(left: yaml.Node, right: yaml.Node) -> bool:
    """Structural equality of two composed nodes (tag and value, recursively)."""
    if type(left) is not type(right) or left.tag != right.tag:
        return False
    if isinstance(left, yaml.ScalarNode):
        return bool(left.value == right.value)
    if isinstance(left, yaml.SequenceNode):
        return len(left.value) == len(right.value) and all(
            _same_node(a, b) for a, b in zip(left.value, right.value, strict=True)
        )
    if isinstance(left, yaml.MappingNode):
        return len(left.value) == len(right.value) and all(
            _same_node(ak, bk) and _same_node(av, bv)
            for (ak, av), (bk, bv) in zip(left.value, right.value, strict=True)
        )
    return False


@dataclass
class _WalkState:
    lines: dict[KeyPath, int]
    path: str
    seen: set[int]
    identical_duplicates: bool = False
    duplicates: list[tuple[KeyPath, int]] = field(default_factory=list)
    last_duplicates: bool = False
    overridden: list[tuple[KeyPath, int, int]] = field(default_factory=list)


def _walk(node: yaml.Node, key_path: KeyPath, depth: int, state: _WalkState) -> None:
    lines, path, seen = state.lines, state.path, state.seen
    if depth > MAX_DEPTH:
        raise InputError(
            f"YAML nesting deeper than {MAX_DEPTH} levels",
            path=path,
            line=node.start_mark.line + 1,
            key_path=format_key_path(key_path) or None,
        )
    lines.setdefault(key_path, node.start_mark.line + 1)
    # Aliased nodes are shared objects; visiting one again cannot find new keys.
    if id(node) in seen:
        return
    seen.add(id(node))
    if isinstance(node, yaml.MappingNode):
        keys: dict[object, int] = {}
        values: dict[object, yaml.Node] = {}
        for key_node, value_node in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                _walk(value_node, key_path, depth + 1, state)
                continue
            if not isinstance(key_node, yaml.ScalarNode):
                raise InputError(
                    "mapping keys must be scalars",
                    path=path,
                    line=key_node.start_mark.line + 1,
                    key_path=format_key_path(key_path) or None,
                )
            key = key_node.value
            line = key_node.start_mark.line + 1
            if key in keys and state.identical_duplicates:
                first = values[key]
                if _same_node(first, value_node):
                    state.duplicates.append(((*key_path, key), line))
                    continue
            if key in keys and state.last_duplicates:
                # PyYAML's constructor assigns in order: this value replaces the first.
                state.overridden.append(((*key_path, key), line, keys[key]))
                child = (*key_path, key)
                for stale in [p for p in lines if p[: len(child)] == child]:
                    del lines[stale]
            elif key in keys:
                raise InputError(
                    f"duplicate key {key!r} (first defined on line {keys[key]})",
                    path=path,
                    line=line,
                    key_path=format_key_path((*key_path, key)),
                )
            keys[key] = line
            values[key] = value_node
            child = (*key_path, key)
            lines[child] = line
            _walk(value_node, child, depth + 1, state)
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            _walk(item, (*key_path, index), depth + 1, state)


def _check_expanded_size(root: yaml.Node, path: str) -> None:
    sizes: dict[int, int] = {}
    open_nodes: set[int] = set()

    def size(node: yaml.Node) -> int:
        known = sizes.get(id(node))
        if known is not None:
            return known
        if id(node) in open_nodes:
            raise InputError(
                "recursive YAML alias (a node contains itself)",
                path=path,
                line=node.start_mark.line + 1,
            )
        open_nodes.add(id(node))
        total = 1
        if isinstance(node, yaml.MappingNode):
            for key_node, value_node in node.value:
                total += size(key_node) + size(value_node)
        elif isinstance(node, yaml.SequenceNode):
            for item in node.value:
                total += size(item)
        total = min(total, MAX_EXPANDED_NODES + 1)
        open_nodes.discard(id(node))
        sizes[id(node)] = total
        return total

    if size(root) > MAX_EXPANDED_NODES:
        raise InputError(
            f"YAML aliases expand to more than {MAX_EXPANDED_NODES} nodes (alias bomb)",
            path=path,
            line=root.start_mark.line + 1,
        )


def load_yaml_text(
    text: str,
    path: str,
    *,
    identical_duplicates: bool = False,
    keep_node: bool = False,
    last_duplicates: bool = False,
) -> LoadedYaml:
    """Parse one YAML document from ``text``; ``path`` is used in diagnostics only.

    ``identical_duplicates=True`` tolerates a repeated key whose value is identical to
    the first one (real InferenceX recipes contain such repeats; the meaning is not in
    doubt). The repeats are listed in ``LoadedYaml.duplicates``. A repeated key with a
    different value is an error, unless ``last_duplicates=True``: then (for files whose
    consumer reads them with ``yaml.safe_load``) it replaces the earlier value as PyYAML
    does, and is listed in ``LoadedYaml.overridden``. ``keep_node=True`` keeps the composed node
    graph in ``LoadedYaml.node`` (for checks on scalar styles, see ``recipes.yaml12``).

    With libyaml, the document is composed over libyaml's parser when it can be
    (:func:`_compose_with_libyaml`); otherwise by the pure-Python ``_BoundedLoader``.
    Either way the result, or the refusal, is the pure-Python loader's.
    """
    _check_text_size(text, path)
    composed = _compose_with_libyaml(text)
    if composed is not None:
        loader, node = composed
        return _load(
            loader,
            path,
            identical_duplicates,
            keep_node,
            composed=(node,),
            last_duplicates=last_duplicates,
        )
    return _load(
        _reference_loader(text, path),
        path,
        identical_duplicates,
        keep_node,
        last_duplicates=last_duplicates,
    )


def load_yaml_text_reference(
    text: str,
    path: str,
    *,
    identical_duplicates: bool = False,
    keep_node: bool = False,
    last_duplicates: bool = False,
) -> LoadedYaml:
    """:func:`load_yaml_text` with the pure-Python loader only: the reference behaviour
    the libyaml path must reproduce (the equivalence tests compare the two)."""
    _check_text_size(text, path)
    return _load(
        _reference_loader(text, path),
        path,
        identical_duplicates,
        keep_node,
        last_duplicates=last_duplicates,
    )


def _check_text_size(text: str, path: str) -> None:
    if len(text.encode("utf-8", "surrogatepass")) > MAX_YAML_BYTES:
        raise InputError(f"YAML file larger than {MAX_YAML_BYTES} bytes", path=path)


def _reference_loader(text: str, path: str) -> _BoundedLoader:
    try:
        # The reader checks for unprintable characters as soon as it is built.
        return _BoundedLoader(text)
    except yaml.reader.ReaderError as exc:
        raise InputError(
            f"invalid YAML: character U+{int(exc.character):04X} is not allowed in YAML",
            path=path,
            line=text[: max(exc.position, 0)].count("\n") + 1,
        ) from None


def _load(
    loader: _BoundedMixin,
    path: str,
    identical_duplicates: bool,
    keep_node: bool,
    composed: tuple[yaml.Node | None] | None = None,
    *,
    last_duplicates: bool = False,
) -> LoadedYaml:
    """Compose (unless ``composed`` holds the root already), check and construct."""
    try:
        node = loader.get_single_node() if composed is None else composed[0]
        lines: dict[KeyPath, int] = {}
        if node is None:
            return LoadedYaml(path=path, data=None, lines=lines)
        duplicates: tuple[tuple[KeyPath, int], ...] = ()
        state = _WalkState(
            lines, path, set(), identical_duplicates, last_duplicates=last_duplicates
        )
        _walk(node, (), 0, state)
        if loader.alias_count:
            _check_expanded_size(node, path)
        data = loader.construct_document(node)  # type: ignore[attr-defined]
        duplicates = tuple(state.duplicates)
        overridden = tuple(state.overridden)
    except _LimitExceededError as exc:
        line = exc.mark.line + 1 if exc.mark else None
        raise InputError(exc.message, path=path, line=line) from None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else None
        problem = exc.problem or exc.context or "unparsable YAML"
        if isinstance(exc, yaml.constructor.ConstructorError):
            if "could not determine a constructor" in problem:
                problem = f"YAML tag not allowed ({problem})"
            else:
                problem = f"invalid tagged value ({problem})"
        raise InputError(f"invalid YAML: {problem}", path=path, line=line) from None
    except yaml.YAMLError as exc:
        raise InputError(f"invalid YAML: {exc}", path=path) from None
    except RecursionError:
        raise InputError(f"YAML nesting deeper than {MAX_DEPTH} levels", path=path) from None
    finally:
        loader.dispose()  # type: ignore[attr-defined]
    return LoadedYaml(
        path=path,
        data=data,
        lines=lines,
        duplicates=duplicates,
        overridden=overridden,
        node=node if keep_node else None,
    )


def load_yaml_bytes(
    raw: bytes,
    path: str,
    *,
    identical_duplicates: bool = False,
    keep_node: bool = False,
    last_duplicates: bool = False,
) -> LoadedYaml:
    """Parse YAML from bytes (for git blobs); enforces the size limit before decoding."""
    if len(raw) > MAX_YAML_BYTES:
        raise InputError(
            f"YAML file is {len(raw)} bytes, over the {MAX_YAML_BYTES}-byte limit", path=path
        )
    return load_yaml_text(
        _decode(raw, path),
        path,
        identical_duplicates=identical_duplicates,
        keep_node=keep_node,
        last_duplicates=last_duplicates,
    )


def load_yaml(
    path: str | Path, *, display_path: str | None = None, keep_node: bool = False
) -> LoadedYaml:
    """Read (:func:`read_yaml_file`) and parse a YAML file from disk."""
    shown = display_path or str(path)
    return load_yaml_bytes(read_yaml_file(path, shown), shown, keep_node=keep_node)


def read_yaml_file(path: str | Path, shown: str) -> bytes:
    """The bytes of a YAML file; InputError naming ``shown`` when it cannot be one.

    Only regular files are read, and never more than the size limit: a checkout
    can hold a symlink to ``/dev/zero`` or a FIFO, whose ``stat`` size says 0.
    """
    file = Path(path)
    try:
        info = file.stat()
        if stat.S_ISDIR(info.st_mode):
            raise IsADirectoryError
        if not stat.S_ISREG(info.st_mode):
            raise InputError("not a regular file (device, FIFO or socket)", path=shown)
        if info.st_size > MAX_YAML_BYTES:
            raise InputError(
                f"YAML file is {info.st_size} bytes, over the {MAX_YAML_BYTES}-byte limit",
                path=shown,
            )
        with file.open("rb") as handle:
            # (a buffer of the file's size, not of the limit: 2 MiB a file cost ~0.04 ms)
            raw = handle.read(info.st_size + 1)
            if len(raw) > info.st_size:  # it grew since: read on, up to the limit
                raw += handle.read(MAX_YAML_BYTES + 1 - len(raw))
    except FileNotFoundError:
        raise InputError("file not found", path=shown) from None
    except IsADirectoryError:
        raise InputError("is a directory, expected a YAML file", path=shown) from None
    except OSError as exc:
        raise InputError(f"cannot read file: {exc.strerror}", path=shown) from None
    return raw


def _describe(error: dict[str, Any]) -> str:
    kind = error.get("type", "")
    if kind == "extra_forbidden":
        return "unknown key"
    if kind == "missing":
        return "required key is missing"
    return str(error.get("msg", "invalid value"))


def iter_error_locations(exc: ValidationError) -> Iterator[tuple[KeyPath, str]]:
    for error in exc.errors():
        loc = tuple(p for p in error["loc"] if isinstance(p, str | int))
        yield loc, _describe(dict(error))


def parse_model(model: type[M], loaded: LoadedYaml, *, root: KeyPath = ()) -> M:
    """Validate ``loaded.data`` (or the sub-tree at ``root``) as ``model``.

    The first validation error becomes an :class:`InputError` naming the file,
    the line and the key path; the count of further errors is mentioned.
    """
    data: Any = loaded.data
    for part in root:
        data = data[part]
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        errors = list(iter_error_locations(exc))
        loc, text = errors[0]
        full = (*root, *loc)
        more = f" (and {len(errors) - 1} more error(s))" if len(errors) > 1 else ""
        raise InputError(f"{text}{more}", location=loaded.location(full)) from None
