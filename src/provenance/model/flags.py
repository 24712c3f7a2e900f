"""``Flag`` and ``FlagSet``: the canonical, comparable form of a server argument.

A ``Flag`` is a canonical key and a canonical value, both strings:

* keys are lowercase with ``_`` as the only word separator, JSON-valued
  configs exploded into dotted sub-keys (``attention_config.backend``) and
  environment variables spelled ``env:NAME`` (name kept verbatim);
* values are canonical text: booleans ``"true"``/``"false"``, integers without
  sign noise or leading zeros, floats in Python's shortest ``repr``, lists and
  other JSON as compact sorted JSON, everything else verbatim. Numbers compare
  by value: a float with an integral value is written as an integer (``1.0``
  → ``1``), so ``0.90``/``0.9`` and ``1``/``1.0`` each give one value (see
  ``provenance.normalise.canonical``).

Keeping values as canonical strings makes equality exact: ``True``, ``1`` and
``1.0`` never collide as they would as Python objects. See ``docs/flags.md``.
"""

from __future__ import annotations

from collections.abc import ItemsView, Iterable, Iterator, KeysView, Mapping, ValuesView
from enum import StrEnum
from typing import Any, TypeVar, overload

from pydantic import BaseModel, ConfigDict

_T = TypeVar("_T")


class FlagClass(StrEnum):
    """Policy class of a flag key (see ``provenance.normalise.policy``)."""

    MAJOR = "major"
    TUNING = "tuning"
    HARNESS = "harness"
    FUNCTIONAL = "functional"


class Flag(BaseModel):
    """One canonical ``key = value`` pair."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    key: str
    value: str

    def __str__(self) -> str:
        return f"{self.key}={self.value}"

    @property
    def is_env(self) -> bool:
        return self.key.startswith("env:")


class FlagSet(Mapping[str, str]):
    """An immutable, hashable set of flags with unique keys (one role's view).

    Behaves as a read-only mapping ``key -> value``; iteration is in sorted key
    order so that equal sets always print, hash and serialise the same way.
    """

    __slots__ = ("_hash", "_item_set", "_items", "_key_set")

    def __init__(self, flags: Iterable[Flag] | Mapping[str, str] = ()) -> None:
        items: dict[str, str] = {}
        if isinstance(flags, Mapping):
            for key, value in flags.items():
                items[str(key)] = str(value)
        else:
            for flag in flags:
                items[flag.key] = flag.value
        self._items: dict[str, str] = dict(sorted(items.items()))
        self._hash: int | None = None
        self._key_set: frozenset[str] | None = None
        self._item_set: frozenset[tuple[str, str]] | None = None

    # Mapping protocol -------------------------------------------------------
    def __getitem__(self, key: str) -> str:
        return self._items[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    # The Mapping mixins go through __getitem__ one key at a time; the dict does it in C.
    def __contains__(self, key: object) -> bool:
        return key in self._items

    @overload
    def get(self, key: str, /) -> str | None: ...
    @overload
    def get(self, key: str, /, default: str | _T) -> str | _T: ...
    def get(self, key: str, /, default: object = None) -> object:
        return self._items.get(key, default)

    def keys(self) -> KeysView[str]:
        return self._items.keys()

    def items(self) -> ItemsView[str, str]:
        return self._items.items()

    def values(self) -> ValuesView[str]:
        return self._items.values()

    def __hash__(self) -> int:
        if self._hash is None:
            self._hash = hash(tuple(self._items.items()))
        return self._hash

    def __reduce__(self) -> tuple[type[FlagSet], tuple[dict[str, str]]]:
        # Rebuilt from its items: the cached hash and sets belong to the process that
        # computed them (string hashing is salted per process).
        return (FlagSet, (self._items,))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, FlagSet):
            return self._items == other._items
        return NotImplemented

    def __repr__(self) -> str:
        inner = ", ".join(f"{k}={v}" for k, v in self._items.items())
        return f"FlagSet({inner})"

    # Helpers ---------------------------------------------------------------
    @property
    def flags(self) -> tuple[Flag, ...]:
        return tuple(Flag(key=k, value=v) for k, v in self._items.items())

    def restrict(self, keys: Iterable[str]) -> FlagSet:
        wanted = set(keys)
        return FlagSet({k: v for k, v in self._items.items() if k in wanted})

    def without(self, keys: Iterable[str]) -> FlagSet:
        dropped = set(keys)
        return FlagSet({k: v for k, v in self._items.items() if k not in dropped})

    def merged(self, other: Mapping[str, str]) -> FlagSet:
        """A new set where ``other`` overrides this one key by key."""
        if isinstance(other, FlagSet):  # both all str already
            return FlagSet.of_strings({**self._items, **other._items})
        return FlagSet({**self._items, **dict(other)})

    def diff(self, other: FlagSet) -> FlagSetDiff:
        """What changes from ``self`` (e.g. recipe) to ``other`` (e.g. evidence)."""
        only_self, only_other, changed = self.diff_parts(other)
        return FlagSetDiff(only_left=only_self, only_right=only_other, changed=changed)

    def diff_parts(
        self, other: FlagSet
    ) -> tuple[dict[str, str], dict[str, str], dict[str, tuple[str, str]]]:
        """:meth:`diff` as three new dicts: keys only in ``self``, only in ``other``, and
        changed (``self``'s value, ``other``'s), each in key order."""
        mine, theirs = self._items, other._items
        only_self = {k: v for k, v in mine.items() if k not in theirs}
        only_other = {k: v for k, v in theirs.items() if k not in mine}
        changed = {k: (v, theirs[k]) for k, v in mine.items() if k in theirs and theirs[k] != v}
        return only_self, only_other, changed

    def key_set(self) -> frozenset[str]:
        """The keys as a frozenset (computed once: diff sizes are set operations on it)."""
        if self._key_set is None:
            self._key_set = frozenset(self._items)
        return self._key_set

    def item_set(self) -> frozenset[tuple[str, str]]:
        """The ``(key, value)`` pairs as a frozenset (computed once)."""
        if self._item_set is None:
            self._item_set = frozenset(self._items.items())
        return self._item_set

    def diff_size(self, other: FlagSet) -> int:
        """``self.diff(other).size`` without building the diff.

        Keys only on one side count once each, keys on both sides with different
        values once: ``len(a) + len(b) - |keys(a) & keys(b)| - |items(a) & items(b)|``.
        """
        return (
            len(self._items)
            + len(other._items)
            - len(self.key_set() & other.key_set())
            - len(self.item_set() & other.item_set())
        )

    def to_json(self) -> dict[str, str]:
        return dict(self._items)

    @classmethod
    def of_strings(cls, items: dict[str, str]) -> FlagSet:
        """A FlagSet of a dict whose keys and values are all ``str`` already (validated
        JSON, the normaliser's output, two FlagSets merged): no conversion per item."""
        made = cls.__new__(cls)
        made._items = dict(sorted(items.items()))
        made._hash = made._key_set = made._item_set = None
        return made

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: Any) -> Any:
        from pydantic_core import core_schema

        def validate(value: Any) -> FlagSet:
            if isinstance(value, FlagSet):
                return value
            if isinstance(value, Mapping):
                return FlagSet(value)  # keys and values become str there
            if isinstance(value, list):
                return FlagSet(Flag.model_validate(item) for item in value)
            # a ValueError, not a TypeError: pydantic reports it as a validation error
            raise ValueError("expected a mapping of flag key to value")

        strings = core_schema.dict_schema(core_schema.str_schema(), core_schema.str_schema())
        any_form = core_schema.no_info_plain_validator_function(validate)
        return core_schema.json_or_python_schema(
            # JSON: an object of strings is checked in Rust (most of a record's validation
            # time went to this function otherwise); any other form as in Python
            json_schema=core_schema.union_schema(
                [core_schema.no_info_after_validator_function(cls.of_strings, strings), any_form],
                mode="left_to_right",
                custom_error_type="flag_set",
                custom_error_message="expected a mapping of flag key to value",
            ),
            python_schema=any_form,
            serialization=core_schema.plain_serializer_function_ser_schema(lambda fs: fs.to_json()),
        )

    # (the JSON Schema of a FlagSet field: an object of strings)
    @classmethod
    def __get_pydantic_json_schema__(cls, schema: Any, handler: Any) -> Any:
        from pydantic_core import core_schema

        return handler(core_schema.dict_schema(core_schema.str_schema(), core_schema.str_schema()))


class FlagSetDiff(BaseModel):
    """Difference between two FlagSets: keys only on the left, only on the right, changed."""

    model_config = ConfigDict(frozen=True)

    only_left: dict[str, str]
    only_right: dict[str, str]
    changed: dict[str, tuple[str, str]]

    @property
    def size(self) -> int:
        return len(self.only_left) + len(self.only_right) + len(self.changed)

    @property
    def empty(self) -> bool:
        return self.size == 0
