"""FlagSet: the diff size shortcut and the dict-backed mapping methods agree with their
definitions."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, ValidationError

from provenance.model.flags import FlagSet

plain = st.dictionaries(st.sampled_from("abcdef"), st.sampled_from(("1", "2", "x")), max_size=6)


@given(plain, plain)
def test_diff_size_is_the_size_of_the_diff(left: dict[str, str], right: dict[str, str]) -> None:
    a, b = FlagSet(left), FlagSet(right)
    diff = a.diff(b)
    assert a.diff_size(b) == diff.size == b.diff_size(a)
    assert (a.diff_size(b) == 0) == (a == b)
    assert diff.only_left == {k: v for k, v in left.items() if k not in right}
    changed = {k: (v, right[k]) for k, v in left.items() if k in right and right[k] != v}
    assert diff.changed == changed


@given(plain, st.sampled_from("abcdefg"))
def test_mapping_methods_follow_the_sorted_mapping(items: dict[str, str], key: str) -> None:
    flags = FlagSet(items)
    ordered = dict(sorted(items.items()))
    assert list(flags.items()) == list(ordered.items())
    assert list(flags.keys()) == list(ordered) == list(flags)
    assert list(flags.values()) == list(ordered.values())
    assert (key in flags) == (key in items)
    assert flags.get(key) == items.get(key)
    assert flags.get(key, "default") == items.get(key, "default")
    assert flags.key_set() == frozenset(items)
    assert flags.item_set() == frozenset(items.items())


def test_a_pickled_flagset_is_rehashed_by_the_process_that_loads_it() -> None:
    """Its cached hash is not carried over: string hashing is salted per process."""
    make = "from provenance.model.flags import FlagSet; f = FlagSet({'a': '1', 'b': 'x'})"
    dump = (
        f"import pickle, sys; {make}; hash(f); f.item_set(); "
        "sys.stdout.buffer.write(pickle.dumps(f))"
    )
    load = (
        f"import pickle, sys; {make}; g = pickle.loads(sys.stdin.buffer.read()); "
        "print({f: 'found'}.get(g, 'missing'), g.item_set() == f.item_set())"
    )

    def run(code: str, seed: str, data: bytes = b"") -> bytes:
        env = {**os.environ, "PYTHONHASHSEED": seed}
        done = subprocess.run(
            [sys.executable, "-c", code], input=data, env=env, capture_output=True, check=True
        )
        return done.stdout

    assert run(load, "2", run(dump, "1")).split() == [b"found", b"True"]


class _Holder(BaseModel):
    flags: FlagSet


@pytest.mark.parametrize("bad", [5, "x", None, 1.5, True])
def test_a_non_mapping_is_a_validation_error_in_both_modes(bad: object) -> None:
    """Never a bare TypeError: a record file or a cache entry with such a role must
    be reported as invalid input, not crash the command."""
    with pytest.raises(ValidationError, match="expected a mapping of flag key to value"):
        _Holder.model_validate({"flags": bad})
    with pytest.raises(ValidationError, match="expected a mapping of flag key to value"):
        _Holder.model_validate_json(json.dumps({"flags": bad}))


@settings(max_examples=200)
@given(
    st.dictionaries(
        st.text(min_size=1, max_size=12),
        st.one_of(st.text(max_size=12), st.integers(), st.booleans()),
        max_size=8,
    )
)
def test_json_and_python_validation_agree(items: dict[str, object]) -> None:
    """JSON objects of strings take a fast path; every JSON form gives the same FlagSet
    as validating the parsed value in Python."""
    raw = json.dumps({"flags": items})
    from_json = _Holder.model_validate_json(raw).flags
    from_python = _Holder.model_validate(json.loads(raw)).flags
    assert from_json == from_python
    assert list(from_json.items()) == list(from_python.items())
    assert hash(from_json) == hash(from_python)


def test_json_list_form_still_validates() -> None:
    raw = json.dumps({"flags": [{"key": "b", "value": "2"}, {"key": "a", "value": "1"}]})
    assert _Holder.model_validate_json(raw).flags == FlagSet({"a": "1", "b": "2"})


@given(plain, plain)
def test_of_strings_and_merged_equal_the_general_constructor(
    left: dict[str, str], right: dict[str, str]
) -> None:
    assert FlagSet.of_strings(left) == FlagSet(left)
    assert list(FlagSet.of_strings(left).items()) == list(FlagSet(left).items())
    merged = FlagSet(left).merged(FlagSet(right))
    assert merged == FlagSet({**left, **right}) == FlagSet(left).merged(dict(right))
    assert hash(merged) == hash(FlagSet({**left, **right}))
