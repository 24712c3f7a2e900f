"""FlagSet: the diff size shortcut and the dict-backed mapping methods agree with their
definitions."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from provenance.flags.model import FlagSet

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
