"""Where a recipe YAML writes each canonical flag key: every arg list entry and env entry.

A recipe writes flags as runs of argv tokens in lists (``model.base_args``,
``variants.<v>.extra_args``, feature ``args``, …) and env entries in maps (``extra_env``,
``env``). :func:`flag_places` walks the loaded YAML once and returns, per canonical key
(``provenance.normalise.canonical``), every place that writes it: the key path of the
list or map, the token index, the tokens of the unit and the canonical value. The SARIF
report uses it to point at the line of a flag; ``provenance suggest`` to find the lists
an edit must change.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from provenance.errors import ProvenanceError
from provenance.safe_yaml import KeyPath

__all__ = ["FlagPlace", "flag_places"]


@dataclass(frozen=True)
class FlagPlace:
    """One place a recipe writes a flag: ``container`` is the key path of the arg list (or
    env map), ``index`` the unit's first token in it (None for env), ``tokens`` the unit."""

    container: KeyPath
    index: int | None
    tokens: tuple[str, ...]
    value: str | None

    @property
    def key_path(self) -> KeyPath:
        """The key path of the token (or env entry) itself."""
        if self.index is None:
            return (*self.container, self.tokens[0])
        return (*self.container, self.index)

    @property
    def is_env(self) -> bool:
        return self.index is None


def _canonical_keys(tokens: list[str]) -> dict[str, str]:
    from provenance.normalise.canonical import normalise_argv

    try:
        return dict(normalise_argv(tokens).flags.items())
    except ProvenanceError:
        return {}


def flag_places(data: Any) -> dict[str, list[FlagPlace]]:
    """Every place of ``data`` (a loaded recipe) that writes each canonical key."""
    places: dict[str, list[FlagPlace]] = {}
    _walk(data, (), places)
    return places


def _walk(node: Any, key_path: KeyPath, places: dict[str, list[FlagPlace]]) -> None:
    if isinstance(node, dict):
        is_env = bool(key_path) and str(key_path[-1]).endswith("env")
        for key, value in node.items():
            if is_env and not isinstance(value, dict | list):
                place = FlagPlace(key_path, None, (str(key),), str(value))
                places.setdefault(f"env:{key}", []).append(place)
            else:
                _walk(value, (*key_path, str(key)), places)
    elif isinstance(node, list):
        if node and all(isinstance(item, str) for item in node):
            _args(node, key_path, places)
        else:
            for index, item in enumerate(node):
                _walk(item, (*key_path, index), places)


def _args(tokens: list[str], key_path: KeyPath, places: dict[str, list[FlagPlace]]) -> None:
    index = 0
    while index < len(tokens):
        token = tokens[index]
        if not token.startswith("-"):
            index += 1
            continue
        pair = [token]
        if index + 1 < len(tokens) and not tokens[index + 1].startswith("-"):
            pair.append(tokens[index + 1])
        for key, value in _canonical_keys(pair).items():
            places.setdefault(key, []).append(FlagPlace(key_path, index, tuple(pair), value))
        index += len(pair)
