"""Properties: idempotence, equivalent spellings, order, last-wins, render round trip, totality."""

from __future__ import annotations

import json
from dataclasses import dataclass

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from provenance.errors import InputError
from provenance.model.flags import FlagSet
from provenance.normalise.canonical import (
    BOOLEAN_FLAGS,
    ConfigMerge,
    normalise_argv,
    normalise_mapping,
    render_argv,
    render_env,
)

SCALAR_FLAGS = [
    "block_size",
    "max_num_seqs",
    "gpu_memory_utilization",
    "trust_remote_code",
    "enable_prefix_caching",
    "kv_cache_dtype",
    "tensor_parallel_size",
    "some_new_flag",
]
CONFIG_FLAGS = [
    "attention_config",
    "speculative_config",
    "compilation_config",
    "kv_transfer_config",
]
SUB_KEYS = ["backend", "indexer_kv_dtype", "method", "num_speculative_tokens", "mode", "kv_role"]
WORDS = ["fp8", "FLASHINFER", "auto", "eagle3", "kv_both", "FULL_DECODE_ONLY", "a b", "x-1.2"]

scalars = st.one_of(
    st.booleans(),
    st.integers(min_value=-(10**12), max_value=10**12),
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from(WORDS),
)


@dataclass(frozen=True)
class Unit:
    """One flag to spell: a scalar flag or a config with sub-keys."""

    name: str
    value: object  # scalar, or dict of sub-key -> scalar


units = st.one_of(
    st.builds(Unit, st.sampled_from(SCALAR_FLAGS), scalars),
    st.builds(
        Unit,
        st.sampled_from(CONFIG_FLAGS),
        st.dictionaries(st.sampled_from(SUB_KEYS), scalars, min_size=1, max_size=4),
    ),
)
unit_lists = st.lists(units, max_size=8, unique_by=lambda u: u.name)


def _name(name: str, style: int) -> str:
    if style == 0:
        return "--" + name.replace("_", "-")
    if style == 1:
        return "--" + name
    # mixed: alternate separators
    parts = name.split("_")
    return "--" + "".join(p + ("-" if i % 2 else "_") for i, p in enumerate(parts[:-1])) + parts[-1]


def _text(value: object, style: int) -> str:
    """A text spelling of a scalar (several per value)."""
    if isinstance(value, bool):
        return (
            ["true", "True", "TRUE"][style % 3] if value else ["false", "False", "FALSE"][style % 3]
        )
    if isinstance(value, int):
        return [str(value), f"{value}.0", f"{value:+d}"][style % 3]
    if isinstance(value, float):
        return [
            repr(value),
            repr(value) + ("0" if "." in repr(value) and "e" not in repr(value) else ""),
        ][style % 2]
    return str(value)


def spell(unit: Unit, style: int) -> list[str]:
    """Spell one unit as argv tokens in the style-th way."""
    option = _name(unit.name, style % 3)
    if isinstance(unit.value, dict):
        if style % 2 == 0:
            return [option, json.dumps(unit.value)]
        tokens: list[str] = []
        for sub, inner in unit.value.items():
            text = json.dumps(inner) if isinstance(inner, str) else _text(inner, style)
            tokens += [f"{option}.{sub}", text]
        return tokens
    value = unit.value
    if value is True and style % 2 == 0:
        return [option]
    if value is False and style % 2 == 0:
        return ["--no-" + option[2:]]
    text = _text(value, style)
    # A declared boolean flag followed by a non-boolean token leaves that
    # token positional (as vLLM's parser does): such values need "=".
    needs_equals = unit.name in BOOLEAN_FLAGS and not isinstance(value, bool)
    if needs_equals or style % 4 == 1 or text.startswith("-") or text.startswith("+"):
        return [f"{option}={text}"]
    return [option, text]


def argv_of(unit_list: list[Unit], styles: list[int]) -> list[str]:
    argv: list[str] = []
    for i, unit in enumerate(unit_list):
        argv += spell(unit, styles[i % len(styles)] if styles else 0)
    return argv


style_lists = st.lists(st.integers(min_value=0, max_value=11), min_size=1, max_size=8)
envs = st.dictionaries(
    st.sampled_from(["VLLM_FLOAT32_MATMUL_PRECISION", "NCCL_CUMEM_ENABLE", "UCX_TLS"]),
    st.sampled_from(["high", "1", "0", "cuda_copy,cuda_ipc,rc"]),
)


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(unit_lists, style_lists, style_lists, envs)
def test_equivalent_spellings_give_equal_flagsets(
    unit_list: list[Unit], styles_a: list[int], styles_b: list[int], env: dict[str, str]
) -> None:
    a = normalise_argv(argv_of(unit_list, styles_a), env).flags
    b = normalise_argv(argv_of(unit_list, styles_b), env).flags
    assert a == b


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(unit_lists, style_lists, st.randoms(use_true_random=False))
def test_order_does_not_matter_for_distinct_flags(
    unit_list: list[Unit], styles: list[int], rnd: object
) -> None:
    shuffled = list(unit_list)
    rnd.shuffle(shuffled)  # type: ignore[attr-defined]
    a = normalise_argv(argv_of(unit_list, styles)).flags
    b = normalise_argv(argv_of(shuffled, styles)).flags
    assert a == b


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(unit_lists, style_lists, st.sampled_from(SCALAR_FLAGS), scalars, scalars)
def test_last_occurrence_wins(
    unit_list: list[Unit], styles: list[int], name: str, first: object, last: object
) -> None:
    rest = [u for u in unit_list if u.name != name]
    argv = argv_of([Unit(name, first), *rest, Unit(name, last)], styles)
    expected = normalise_argv(argv_of([*rest, Unit(name, last)], styles)).flags
    assert normalise_argv(argv).flags == expected


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(unit_lists, style_lists, envs, st.sampled_from(list(ConfigMerge)))
def test_normalisation_is_idempotent_through_render(
    unit_list: list[Unit], styles: list[int], env: dict[str, str], merge: ConfigMerge
) -> None:
    first = normalise_argv(argv_of(unit_list, styles), env, merge=merge).flags
    again = normalise_argv(render_argv(first), render_env(first), merge=merge).flags
    assert again == first
    assert normalise_argv(render_argv(again), render_env(again)).flags == again


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(unit_lists, style_lists)
def test_mapping_and_argv_agree(unit_list: list[Unit], styles: list[int]) -> None:
    mapping: dict[str, object] = {}
    for i, unit in enumerate(unit_list):
        key = unit.name.replace("_", "-") if styles[i % len(styles)] % 2 else unit.name
        value = unit.value
        if isinstance(value, dict) and styles[i % len(styles)] % 3 == 0:
            value = json.dumps(value)
        mapping[key] = value
    assert normalise_mapping(mapping) == normalise_argv(argv_of(unit_list, [0])).flags


json_values = st.recursive(
    st.one_of(
        st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=8)
    ),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=12,
)


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.dictionaries(st.text(max_size=12), json_values, max_size=6))
def test_mapping_is_total_and_round_trips(config: dict[str, object]) -> None:
    try:
        flags = normalise_mapping(config)
    except InputError:
        return
    assert normalise_argv(render_argv(flags)).flags == flags


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.one_of(
            st.text(max_size=12), st.sampled_from(["--", "-tp", "--x.y", "--no-x", "{}", "-1"])
        ),
        max_size=10,
    )
)
def test_argv_is_total_and_round_trips(argv: list[str]) -> None:
    try:
        command = normalise_argv(argv)
    except InputError:
        return
    assert normalise_argv(render_argv(command.flags)).flags == command.flags


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.dictionaries(st.text(max_size=12), json_values, max_size=4))
def test_any_flagset_from_json_configs_round_trips(config: dict[str, object]) -> None:
    try:
        flags = normalise_argv(["--attention-config", json.dumps(config)]).flags
    except InputError:
        return
    rendered = render_argv(flags)
    assert normalise_argv(rendered).flags == flags
    assert isinstance(flags, FlagSet)
