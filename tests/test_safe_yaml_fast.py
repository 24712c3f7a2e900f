"""The libyaml path of ``safe_yaml`` against the pure-Python reference loader.

``load_yaml_text`` composes over libyaml's parser (``_compose_with_libyaml``: libyaml
events, PyYAML's Python composer, constructor and the project's checks) and re-does any
refusal with the pure-Python ``_BoundedLoader``. These tests prove that the result is the
reference's: the same data, lines and tolerated duplicates on success, the same
``InputError`` (message, file, line) on refusal, for generated YAML-like text and
for every YAML file of the project and of the shared corpus. They also prove the
fast path is really taken on real files (not silently always falling back).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from provenance import safe_yaml
from provenance.errors import InputError
from provenance.safe_yaml import (
    MAX_DEPTH,
    MAX_YAML_BYTES,
    LoadedYaml,
    load_yaml_text,
    load_yaml_text_reference,
)

REPO_ROOT = Path(__file__).resolve().parents[1]
CORPUS = REPO_ROOT.parent / "shared" / "corpus"


def test_pyyaml_has_libyaml() -> None:
    """The PyYAML wheels pip installs bundle libyaml; the audit's speed assumes it, and
    these tests compare it with the reference (they would prove nothing without it)."""
    assert safe_yaml.HAVE_LIBYAML, "PyYAML was built without libyaml"


Outcome = tuple[Any, ...]


def _data_key(value: Any) -> Any:
    """A comparable form of loaded data: types kept, NaN equal to NaN, sets ordered."""
    if isinstance(value, float) and math.isnan(value):
        return ("nan",)
    if isinstance(value, dict):
        return ("map", tuple((_data_key(k), _data_key(v)) for k, v in value.items()))
    if isinstance(value, list):
        return ("seq", tuple(_data_key(v) for v in value))
    if isinstance(value, set):
        return ("set", tuple(sorted(repr(v) for v in value)))
    return (type(value).__name__, repr(value))


def _node_key(node: yaml.Node | None, seen: dict[int, int] | None = None) -> Any:
    """A comparable form of a composed node graph (what ``recipes.yaml12`` reads).

    ``flow_style`` is left out: PyYAML's parser leaves it ``None`` on an indentless
    block sequence, libyaml says ``False`` (block); nothing reads it.
    """
    if node is None:
        return None
    seen = {} if seen is None else seen
    if id(node) in seen:  # an alias: the same object again
        return ("alias", seen[id(node)])
    seen[id(node)] = len(seen)
    head = (type(node).__name__, node.tag, node.start_mark.line, node.start_mark.column)
    if isinstance(node, yaml.ScalarNode):
        return (*head, node.value, node.style)
    if isinstance(node, yaml.SequenceNode):
        return (*head, tuple(_node_key(n, seen) for n in node.value))
    assert isinstance(node, yaml.MappingNode)
    pairs = tuple((_node_key(k, seen), _node_key(v, seen)) for k, v in node.value)
    return (*head, pairs)


def _loaded_key(loaded: LoadedYaml) -> Outcome:
    return (
        "ok",
        _data_key(loaded.data),
        sorted(loaded.lines.items(), key=repr),
        loaded.duplicates,
        _node_key(loaded.node),
    )


def _outcome(load: Callable[..., LoadedYaml], text: str, duplicates: bool) -> Outcome:
    try:
        loaded = load(text, "doc.yaml", identical_duplicates=duplicates, keep_node=True)
    except InputError as exc:
        return ("refused", exc.diagnostic(), exc.location)
    return _loaded_key(loaded)


def _fast_only(text: str, duplicates: bool) -> Outcome | None:
    """The libyaml path alone, without the fallback (``None``: it is not taken)."""
    composed = safe_yaml._compose_with_libyaml(text)
    if composed is None:
        return None
    loader, node = composed
    try:
        loaded = safe_yaml._load(loader, "doc.yaml", duplicates, True, composed=(node,))
    except InputError as exc:
        return ("refused", exc.diagnostic(), exc.location)
    return _loaded_key(loaded)


def _assert_same_as_reference(text: str, duplicates: bool = False) -> bool:
    """``load_yaml_text`` behaves as the reference; ``True`` if libyaml loaded it alone."""
    reference = _outcome(load_yaml_text_reference, text, duplicates)
    assert _outcome(load_yaml_text, text, duplicates) == reference
    fast = _fast_only(text, duplicates)
    if fast is None:  # libyaml refused or reads the text differently: the reference decided
        return False
    # A document composed over libyaml is checked and built exactly as the reference's.
    assert fast == reference
    return bool(fast[0] == "ok")


# --- generated documents ----------------------------------------------------------

_TOKENS = [
    "a", "b", "key", "1", "-7", "0x1f", "0o17", "017", "1_000", "1e3", "1:30", ".5",
    "+.inf", ".NaN", "on", "Yes", "~", "null", "2020-01-01", "2020-01-01 10:00:00",
    "2001:db8::1", '"q\\"x"', '"\\u00e9\\x41"', "'s''t'", '"a\nb"', "'a\n\n b'", "a b",
    ":", ": ", "- ", "-", "? ", "?", ",", "[", "]", "{", "}", "[]", "{}", "&a ", "*a",
    "&b ", "*b", "<<: *a", "<<", "!!str ", "!!int ", "!!float ", "!!bool ", "!!null ",
    "!!binary ", "!!set ", "!!omap ", "!!timestamp ", "!<tag:yaml.org,2002:str> ", "! ",
    "!x ", "!!python/name:os.system ", "#c", " # c", "\n", "\n  ", "\n    ", "\n- ", "  ",
    " ", "---", "...", "--- ", "%YAML 1.1\n", "%YAML 1.2\n", "%TAG ! tag:x,2000:\n",
    "|", ">", "|-", ">+", "|2", "|#", "\r\n", "\r", '"', "'", "\\", "é", "%", "@", "`",
    "=", "k: v", "x:\n  y: z", "? a\n: b", "- - x", "\t", "\x85", "\u2028", "\ufeff",
    "\x07", "\x00", "\U0001f600",
    # refused after composing (by the checks on the node graph, not by the parser)
    "a: 1\n", "a: 2\n", "b:\n  a: 1\n  a: 1\n", "!!int x", "!!bool maybe", "2026-13-45",
    "9" * 5000, "<<: 2\n", "&x [*x]", "[*a, *a]",
]  # fmt: skip

_DOCUMENTS = st.builds(
    lambda parts, newline: "".join(parts) + ("\n" if newline else ""),
    st.lists(st.sampled_from(_TOKENS), min_size=1, max_size=30),
    st.booleans(),
)

_PROPERTY = settings(
    max_examples=400,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    database=None,
    derandomize=True,
)


@_PROPERTY
@given(_DOCUMENTS, st.booleans())
def test_generated_documents_load_as_the_reference_loads_them(text: str, duplicates: bool) -> None:
    _assert_same_as_reference(text, duplicates)


_MAPPINGS = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(),
        st.floats(allow_nan=True),
        st.text(max_size=12),
        st.dates(),
    ),
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=25,
)


@_PROPERTY
@given(_MAPPINGS, st.sampled_from([None, True, False]), st.sampled_from([None, '"', "'", "|"]))
def test_dumped_data_loads_as_the_reference_loads_it(
    data: Any, flow: bool | None, style: str | None
) -> None:
    """PyYAML's own dumps of random data (every scalar style, block and flow collections)."""
    text = yaml.safe_dump(
        data, default_flow_style=flow, default_style=style, allow_unicode=True, sort_keys=False
    )
    _assert_same_as_reference(text)


def test_fast_path_is_taken_for_ordinary_documents(monkeypatch: pytest.MonkeyPatch) -> None:
    """With the reference loader made to fail, an ordinary document still loads."""

    def no_reference(text: str, path: str) -> None:
        raise AssertionError("the pure-Python loader was used")

    monkeypatch.setattr(safe_yaml, "_reference_loader", no_reference)
    loaded = load_yaml_text("a:\n  - 1\n  - 'x'\nb: &k {c: null}\nd: *k\n", "doc.yaml")
    assert loaded.data == {"a": [1, "x"], "b": {"c": None}, "d": {"c": None}}
    assert loaded.line_of(("a", 1)) == 3


def test_refusals_after_composing_do_not_parse_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """A duplicate key is found on the libyaml-composed graph: reported directly (a 2 MiB
    file of keys would otherwise cost the pure-Python parse, ~20 s, on top)."""

    def no_reference(text: str, path: str) -> None:
        raise AssertionError("the pure-Python loader was used")

    monkeypatch.setattr(safe_yaml, "_reference_loader", no_reference)
    with pytest.raises(InputError) as info:
        load_yaml_text("a: 1\nb: 2\na: 3\n", "dup.yaml")
    assert info.value.diagnostic() == (
        "invalid input: dup.yaml:3 (a): duplicate key 'a' (first defined on line 1)"
    )


@pytest.mark.parametrize(
    "text",
    [
        "a:\tb\n",  # tab as a separator (libyaml accepts it, PyYAML refuses it)
        "a: |#c\n  x\n",  # comment glued to a block scalar header
        "a: 1\x85b: 2\n",  # NEL line break
        "a: b\u2028c\n",
        "a: \ufeffb\n",
        "---",  # no final line break: libyaml's end mark is on the next line
        "a: b",
        "a: \ud800\n",  # a lone surrogate (only reachable from text)
        "! \n",  # an empty scalar tagged "!" is null, as in PyYAML
        "a: [1, 2\n",  # refused: the reference loader's message and line
        "%YAML 1.3\n--- a\n",  # libyaml refuses, PyYAML accepts: accepted
        "a: 1\na: 2\n",  # duplicate key: refused on the composed graph
        "a: !!int x\n",
        "a: 2026-13-45\n",
        "a: &x 1\nb: &x 2\n",  # duplicate anchor
        "a: *nope\n",  # undefined alias
        "a: &x [*x]\n",  # recursive alias
        "a: &x 1\nb: [" + "*x, " * 256 + "*x]\n",  # one alias over the limit
        "a: &x 1\nb: " + "[" * 64 + "*x" + "]" * 64 + "\n",  # an alias past the depth limit
        "a: &x 1\nb: " + "[" * 63 + "*x" + "]" * 63 + "\n",  # an alias at the depth limit
        "!!str a: !!int 1\n? [x]\n: {y: !!binary AAAA}\n",
    ],
)
def test_inputs_where_libyaml_and_pyyaml_differ_load_as_the_reference(text: str) -> None:
    """Also documents refused after composing: their error comes from the checks on the
    libyaml-composed node graph directly, and must be the reference's."""
    _assert_same_as_reference(text)
    _assert_same_as_reference(text, duplicates=True)


def test_without_libyaml_the_reference_loader_is_used(monkeypatch: pytest.MonkeyPatch) -> None:
    text = "a:\n  b: [1, 2.5, x]\n  c: 2020-01-01\n"
    expected = _outcome(load_yaml_text, text, False)
    monkeypatch.setattr(safe_yaml, "HAVE_LIBYAML", False)
    monkeypatch.delattr(safe_yaml, "_LibyamlLoader")
    assert _outcome(load_yaml_text, text, False) == expected


@pytest.mark.parametrize(
    "bomb",
    [
        "[" * (MAX_YAML_BYTES - 1) + "\n",
        "{" * (MAX_YAML_BYTES - 1) + "\n",
        "- " * ((MAX_YAML_BYTES - 1) // 2) + "\n",
        "".join(" " * i + "a:\n" for i in range(1400)),
    ],
    ids=["flow-sequences", "flow-mappings", "block-sequences", "block-mappings"],
)
def test_libyaml_refuses_a_2_mib_nesting_bomb_after_the_depth_limit(bomb: str) -> None:
    """libyaml does not recurse and is asked for one event at a time: the composer's depth
    check (or libyaml's own nesting limit, from libyaml 0.2.6) stops it whatever the size
    (no C-level recursion, no crash), and the reference loader then gives the message."""
    assert len(bomb.encode()) <= MAX_YAML_BYTES
    assert safe_yaml._compose_with_libyaml(bomb) is None
    with pytest.raises(InputError, match=f"deeper than {MAX_DEPTH} levels"):
        load_yaml_text(bomb, "bomb.yaml")
    _assert_same_as_reference(bomb)


# --- real files -------------------------------------------------------------------


def _yaml_files(root: Path) -> list[Path]:
    if not root.is_dir():
        return []
    return sorted(p for p in root.rglob("*") if p.suffix in (".yaml", ".yml") and p.is_file())


def _check_file(path: Path, *, both_modes: bool = True) -> bool:
    """Same result as the reference; ``True`` when the libyaml path loaded it by itself."""
    raw = path.read_bytes()
    if len(raw) > MAX_YAML_BYTES:
        return False
    try:
        text = safe_yaml._decode(raw, str(path))
    except InputError:
        return False
    if both_modes:
        _assert_same_as_reference(text)
    return _assert_same_as_reference(text, duplicates=True)


@pytest.mark.parametrize("folder", ["recipes", "ledger"])
def test_every_project_yaml_loads_as_the_reference_loads_it(folder: str) -> None:
    files = _yaml_files(REPO_ROOT / folder)
    assert files
    fast = [path for path in files if _check_file(path)]
    # Every file of the embedded recipe and ledger takes the libyaml path.
    assert fast == files


@pytest.mark.corpus
@pytest.mark.skipif(not CORPUS.is_dir(), reason="no ../shared/corpus")
@pytest.mark.slow
def test_every_corpus_yaml_loads_as_the_reference_loads_it() -> None:
    # One mode, and the big master configs and perf-changelogs of the older snapshots
    # (inferencex-at/) left out: the pure-Python reference is slow (~10 s per MiB).
    files = [
        path
        for path in _yaml_files(CORPUS)
        if "inferencex-at" not in path.parts or path.stat().st_size <= 64 * 1024
    ]
    fast = [path for path in files if _check_file(path, both_modes=False)]
    assert len(fast) >= len(files) * 9 // 10, "the libyaml path should take most real files"


def test_libyaml_composer_is_never_used() -> None:
    """CParser has its own composer in C (recursive, without the limits): the MRO puts
    PyYAML's Python ``Composer`` (under the bounded ``compose_node``) first."""
    from yaml.composer import Composer

    loader = safe_yaml._LibyamlLoader
    assert loader.get_single_node is Composer.get_single_node
    assert loader.compose_document is Composer.compose_document
    assert loader.compose_node is safe_yaml._BoundedMixin.compose_node
    assert loader.compose_sequence_node is Composer.compose_sequence_node
    assert loader.compose_mapping_node is Composer.compose_mapping_node
