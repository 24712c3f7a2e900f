from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, ConfigDict

from provenance.errors import EXIT_INPUT, InputError
from provenance.safe_yaml import load_yaml, load_yaml_bytes, load_yaml_text, parse_model


def test_lines_are_recorded_for_every_key_path() -> None:
    loaded = load_yaml_text("x:\n  y:\n    - 1\n    - z: 2\n", "ok.yaml")
    assert loaded.data == {"x": {"y": [1, {"z": 2}]}}
    assert loaded.line_of(("x", "y", 1, "z")) == 4
    # Unknown descendants resolve to the nearest known ancestor.
    assert loaded.line_of(("x", "y", 1, "z", "nope")) == 4


def test_duplicate_key_names_file_line_and_path() -> None:
    with pytest.raises(InputError) as info:
        load_yaml_text("a: 1\nb:\n  c: 2\n  c: 3\n", "x.yaml")
    assert info.value.exit_code == EXIT_INPUT
    assert info.value.diagnostic() == (
        "invalid input: x.yaml:4 (b.c): duplicate key 'c' (first defined on line 3)"
    )


def test_object_constructing_tags_are_refused() -> None:
    with pytest.raises(InputError, match=r"t.yaml:1: invalid YAML: YAML tag not allowed"):
        load_yaml_text("a: !!python/object/apply:os.system [echo hi]\n", "t.yaml")


def test_alias_bomb_is_refused() -> None:
    lines = ["a: &a [x, x, x, x, x, x, x, x, x]"]
    for i in range(9):
        prev, cur = chr(97 + i), chr(98 + i)
        lines.append(f"{cur}: &{cur} [" + ", ".join([f"*{prev}"] * 9) + "]")
    with pytest.raises(InputError, match="alias bomb"):
        load_yaml_text("\n".join(lines) + "\n", "bomb.yaml")


def test_unparsable_yaml_names_line() -> None:
    with pytest.raises(InputError, match=r"bad.yaml:2: invalid YAML"):
        load_yaml_text("a: [1, 2\nb: c: d\n", "bad.yaml")


def test_non_utf8_and_bom(tmp_path: Path) -> None:
    assert load_yaml_bytes(b"\xef\xbb\xbfa: 1\n", "bom.yaml").data == {"a": 1}
    with pytest.raises(InputError, match=r"latin.yaml:2: file is not valid UTF-8"):
        load_yaml_bytes(b"a: 1\nb: caf\xe9\n", "latin.yaml")
    with pytest.raises(InputError, match="UTF-16"):
        load_yaml_bytes(b"\xff\xfea\x00", "utf16.yaml")
    with pytest.raises(InputError, match="file not found"):
        load_yaml(tmp_path / "missing.yaml")


def test_deep_nesting_is_refused() -> None:
    with pytest.raises(InputError, match="nesting deeper"):
        load_yaml_text("[" * 200 + "]" * 200, "deep.yaml")


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str
    count: int


def test_parse_model_maps_validation_errors_to_lines() -> None:
    loaded = load_yaml_text("name: a\ncount: 1\nextra: 2\n", "m.yaml")
    with pytest.raises(InputError) as info:
        parse_model(_Model, loaded)
    assert str(info.value) == "m.yaml:3 (extra): unknown key"
    loaded = load_yaml_text("name: a\ncount: lots\n", "m.yaml")
    with pytest.raises(InputError, match=r"m.yaml:2 \(count\): Input should be a valid integer"):
        parse_model(_Model, loaded)


def test_identical_duplicates_are_tolerated_only_when_asked() -> None:
    text = "backend:\n  env:\n    X: '1'\n    X: '1'\n"
    with pytest.raises(InputError, match="duplicate key 'X'"):
        load_yaml_text(text, "r.yaml")
    loaded = load_yaml_text(text, "r.yaml", identical_duplicates=True)
    assert loaded.data == {"backend": {"env": {"X": "1"}}}
    assert loaded.duplicates == ((("backend", "env", "X"), 4),)
    with pytest.raises(InputError, match=r"r.yaml:4 \(backend.env.X\): duplicate key"):
        load_yaml_text(text.replace("X: '1'\n", "X: '2'\n", 1), "r.yaml", identical_duplicates=True)


def test_last_duplicates_keep_the_last_value_as_pyyaml_does() -> None:
    text = "a:\n  b:\n    x: 1\n  c: 2\n  b: 3\n  c: 2\n  b: [4]\n"
    with pytest.raises(InputError, match=r"r.yaml:5 \(a.b\): duplicate key 'b'"):
        load_yaml_text(text, "r.yaml", identical_duplicates=True)
    loaded = load_yaml_text(text, "r.yaml", identical_duplicates=True, last_duplicates=True)
    assert loaded.data == yaml.safe_load(text) == {"a": {"b": [4], "c": 2}}
    # Each differing repeat names the one it replaced; the identical one is only tolerated.
    assert loaded.overridden == ((("a", "b"), 5, 2), (("a", "b"), 7, 5))
    assert loaded.duplicates == ((("a", "c"), 6),)
    # Lines are the winning value's: the first value's nested keys are gone.
    assert loaded.line_of(("a", "b")) == 7
    assert ("a", "b", "x") not in loaded.lines
    assert loaded.line_of(("a", "b", 0)) == 7


@settings(max_examples=200, deadline=None, database=None, derandomize=True)
@given(
    st.lists(
        st.tuples(st.sampled_from(["k", "m", "n"]), st.sampled_from(["1", "'1'", "x", "{y: 2}"])),
        min_size=1,
        max_size=8,
    )
)
def test_last_duplicates_read_what_safe_load_reads(pairs: list[tuple[str, str]]) -> None:
    text = "top:\n" + "".join(f"  {key}: {value}\n" for key, value in pairs)
    loaded = load_yaml_text(text, "g.yaml", last_duplicates=True)
    assert loaded.data == yaml.safe_load(text)
    repeats = len(pairs) - len({key for key, _ in pairs})
    assert len(loaded.overridden) == repeats
