"""Normalise every spelling of a vLLM server argument into one canonical ``FlagSet``.

Three inputs are accepted:

* an argv (``vllm serve MODEL --x y ...``, with or without the leading
  ``vllm serve``) — :func:`normalise_argv`;
* an srt-slurm ``vllm_config.<role>`` mapping (keys without ``--``, YAML
  scalars, JSON strings or YAML mappings for config values) —
  :func:`normalise_mapping` / :func:`normalise_mapping_command`;
* environment variables, for either of them, as ``env:NAME`` keys.

The rules (see ``docs/flags.md`` for the full list with examples):

* **Keys.** The flag name (everything before the first ``.``) is lowercase
  with ``_`` as the only separator (``--max-num-seqs`` and ``--max_num_seqs``
  are one key). A flag whose value is a JSON object, or that is given in
  dotted form (``--attention_config.backend X``), is exploded into one key per
  leaf: ``attention_config.backend``. Sub-keys after the first ``.`` are kept
  verbatim, as vLLM keeps them. Environment variables become ``env:NAME``.
* **Values.** Canonical text: ``true``/``false`` for booleans (``True``,
  ``"true"``, bare flags and ``--no-x`` included), numbers by value (``0.90``
  → ``0.9``, ``1.0`` → ``1``, ``007`` → ``7``), lists as compact JSON,
  ``null``, ``{}`` for an empty object, everything else verbatim.
* **Occurrences.** Plain occurrences of a flag: the last one wins (argparse's
  ``store``). Dotted occurrences of one config are merged in order (a later
  sub-key overrides an earlier one, ``key+`` appends to a list). How a JSON
  form and dotted forms of the same config combine is a choice,
  :class:`ConfigMerge`: by default exactly as vLLM's ``FlexibleArgumentParser``
  does it — the merged dotted object is appended *after* every other argument,
  so it replaces any JSON form of that config wherever the JSON form stood.

Parsing is strict and total: every input either yields a result or raises
:class:`~provenance.errors.InputError` that names the offending token or key.

Why one module (about 1,100 lines): it is one concept, vLLM's argument grammar and
its inverse. The argv and mapping parsers share the tables (short options, boolean
and multi-value flags, defaults), the value rules and the occurrence resolver;
rendering (:func:`render_argv`, :func:`render_env`) is their inverse, proven by the
round trip in ``tests/flags/test_normalise_properties.py``. Split by section, every
table and helper below would become public API between modules that no one else
may call.
"""

from __future__ import annotations

import functools
import json
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from enum import StrEnum

from pydantic import BaseModel, ConfigDict

from provenance.errors import InputError
from provenance.model.flags import FlagSet

__all__ = [
    "BOOLEAN_FLAGS",
    "FALSE_BY_DEFAULT",
    "ONE_BY_DEFAULT",
    "SHORT_OPTIONS",
    "ConfigMerge",
    "NormalisedCommand",
    "canonical_flag_name",
    "canonical_text",
    "canonical_value",
    "model_basename",
    "normalise_argv",
    "normalise_mapping",
    "normalise_mapping_command",
    "render_argv",
    "render_command",
    "render_env",
    "split_key",
]


class ConfigMerge(StrEnum):
    """How a JSON-valued config and dotted overrides of the same config combine.

    ``vllm`` (default): what vLLM's ``FlexibleArgumentParser`` does. All dotted
    occurrences ``--c.k v`` of a config ``c`` are merged into one object which
    is passed as a final ``--c '<json>'``; argparse keeps the last value, so a
    JSON form ``--c '{...}'`` anywhere in the argv is replaced, not merged.

    ``merge``: every occurrence, JSON or dotted, is deep-merged into one object
    in argv order (later keys override earlier ones). This is what authors of
    mixed spellings usually mean; use it to see what such a command intended.
    """

    VLLM = "vllm"
    MERGE = "merge"


class NormalisedCommand(BaseModel):
    """One ``vllm serve`` command in canonical form.

    ``model``, ``served_model_name``, ``host`` and ``port`` are kept out of
    ``flags``: they identify or address the server rather than configure it.
    ``served_model_name`` holds several names as a compact JSON list.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    model: str | None = None
    served_model_name: str | None = None
    host: str | None = None
    port: str | None = None
    flags: FlagSet = FlagSet()
    #: What the normaliser decided that a reader may not expect: values a JSON
    #: config lost to its dotted options, explicit defaults dropped.
    notes: tuple[str, ...] = ()

    @property
    def model_name(self) -> str | None:
        """The model's basename (a local path and a Hugging Face id of one checkpoint agree)."""
        return None if self.model is None else model_basename(self.model)


# ---------------------------------------------------------------------------
# Tables
# ---------------------------------------------------------------------------

#: vLLM's short aliases that this normaliser resolves (from vLLM's
#: ``EngineArgs.add_cli_args``). Other short options are refused: ``-O``
#: meant ``--compilation-config`` level in older vLLM and ``--optimization-level``
#: in newer ones, so its meaning depends on the version.
SHORT_OPTIONS: dict[str, str] = {
    "-tp": "tensor_parallel_size",
    "-pp": "pipeline_parallel_size",
    "-dp": "data_parallel_size",
    "-dpl": "data_parallel_size_local",
    "-dpn": "data_parallel_rank",
    "-dpr": "data_parallel_start_rank",
    "-dpa": "data_parallel_address",
    "-dpp": "data_parallel_rpc_port",
    "-dpb": "data_parallel_backend",
    "-dph": "data_parallel_hybrid_lb",
    "-dpe": "data_parallel_external_lb",
    "-dcp": "decode_context_parallel_size",
    "-pcp": "prefill_context_parallel_size",
    "-ep": "enable_expert_parallel",
    "-n": "nnodes",
    "-r": "node_rank",
    "-q": "quantization",
    "-cc": "compilation_config",
}

#: Flags vLLM declares as booleans (``store_true`` or ``BooleanOptionalAction``).
#: Knowing them matters only when a bare flag is followed by a token that is
#: not an option: for these the token is a positional argument (or, when it is
#: literally ``true``/``false``, the flag's value, as old vLLM's ``StoreBoolean``
#: accepted); for any other flag it is the flag's value.
BOOLEAN_FLAGS: frozenset[str] = frozenset(
    {
        "async_scheduling",
        "data_parallel_external_lb",
        "data_parallel_hybrid_lb",
        "disable_cascade_attn",
        "disable_custom_all_reduce",
        "disable_log_requests",
        "disable_log_stats",
        "disable_sliding_window",
        "enable_auto_tool_choice",
        "enable_chunked_prefill",
        "enable_cumem_allocator",
        "enable_dbo",
        "enable_eplb",
        "enable_expert_parallel",
        "enable_flashinfer_autotune",
        "enable_log_requests",
        "enable_lora",
        "enable_prefix_caching",
        "enable_prompt_tokens_details",
        "enable_request_id_headers",
        "enable_return_routed_experts",
        "enable_server_load_tracking",
        "enable_sleep_mode",
        "enforce_eager",
        "headless",
        "kv_cache_metrics",
        "language_model_only",
        "skip_tokenizer_init",
        "trust_remote_code",
    }
)

#: Boolean flags whose vLLM default has always been ``False``: an explicit
#: ``--no-x`` / ``x: false`` says the same as leaving the flag out, so it is
#: dropped (spec §7: "equivalent-to-default flags do not count"). InferenceX
#: agentic srt-slurm recipes write ``enable-expert-parallel: false``. Flags
#: whose default changed across vLLM versions (prefix caching, chunked
#: prefill, async scheduling) are not here: their explicit ``false`` stays.
FALSE_BY_DEFAULT: frozenset[str] = frozenset(
    {
        "data_parallel_external_lb",
        "data_parallel_hybrid_lb",
        "enable_auto_tool_choice",
        "enable_dbo",
        "enable_eplb",
        "enable_expert_parallel",
        "enable_lora",
        "enforce_eager",
        "headless",
        "language_model_only",
        "trust_remote_code",
    }
)

#: Parallel sizes whose vLLM default is ``1``: an explicit ``1`` says the same as
#: leaving the flag out, so it is dropped like the false booleans above. InferenceX
#: srt-slurm recipes write ``tensor-parallel-size: 1`` and ``pipeline-parallel-size: 1``
#: for DEP workers; the recipes site never writes them.
ONE_BY_DEFAULT: frozenset[str] = frozenset(
    {"tensor_parallel_size", "pipeline_parallel_size", "data_parallel_size"}
)

#: Flags whose value vLLM takes as one or more tokens (``nargs="+"``). Their
#: canonical value is always a list, also when one value is given.
_MULTI_VALUE_FLAGS: frozenset[str] = frozenset(
    {"api_key", "cuda_graph_sizes", "lora_modules", "middleware", "served_model_name"}
)

#: Flags whose values are names or paths: never reinterpreted as numbers or
#: booleans (a revision ``1.10`` is not ``1.1``).
_VERBATIM_VALUE_FLAGS: frozenset[str] = frozenset(
    {
        "chat_template",
        "code_revision",
        "download_dir",
        "revision",
        "tokenizer",
        "tokenizer_revision",
    }
)

#: Keys whose value names a checkpoint that launchers give as a local path
#: (``/data/models/MiniMax-M3-EAGLE3-GQA``) and recipes as a Hugging Face id
#: (``Inferact/MiniMax-M3-EAGLE3-GQA``): compared by basename (spec §3.8).
_BASENAME_KEYS: frozenset[str] = frozenset({"speculative_config.model"})

#: Flags handled explicitly and kept out of ``flags``.
_IDENTITY_FLAGS: frozenset[str] = frozenset({"model", "served_model_name", "host", "port"})

_FLAG_NAME = re.compile(r"[a-z0-9][a-z0-9_]*")
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_DECIMAL = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")
_NEGATIVE_NUMBER = re.compile(r"-(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")
_HUMAN_INT = re.compile(r"(\d+(?:\.\d+)?)([kKmMgGtT])")
_BOOL_WORDS = {"true": "true", "false": "false"}
#: Beyond this decimal exponent numbers are written as Python floats, so a
#: value such as ``1e999999`` is never expanded into a huge integer.
_MAX_INTEGRAL_DIGITS = 30


# ---------------------------------------------------------------------------
# Values
# ---------------------------------------------------------------------------


def _canonical_number(text: str) -> str:
    """Canonical text of a decimal literal (already matched by ``_DECIMAL``)."""
    try:
        number = Decimal(text)
    except InvalidOperation:  # pragma: no cover - _DECIMAL admits only valid literals
        return text
    if number.is_zero():
        return "0"
    if number.adjusted() <= _MAX_INTEGRAL_DIGITS and number == number.to_integral_value():
        return str(int(number))
    as_float = float(number)
    if math.isinf(as_float):
        return text
    if as_float == int(as_float) and abs(as_float) < 10**_MAX_INTEGRAL_DIGITS:
        return str(int(as_float))
    return repr(as_float)


def canonical_text(text: str, *, parse_lists: bool = True) -> str:
    """Canonical text of a scalar written as text (argv token, YAML/JSON string).

    ``True``/``"true"`` → ``true``; decimal numbers by value; a JSON list →
    compact JSON of canonical elements; anything else verbatim.
    """
    word = _BOOL_WORDS.get(text.lower())
    if word is not None:
        return word
    if _DECIMAL.fullmatch(text):
        return _canonical_number(text)
    if parse_lists and text.startswith("[") and text.endswith("]"):
        try:
            parsed = json.loads(text)
        except (json.JSONDecodeError, RecursionError):
            return text
        if isinstance(parsed, list):
            return _compact_json(_canonical_json_value(parsed))
    return text


def _canonical_json_value(value: object) -> object:
    """A JSON value with every scalar in canonical form (list elements, nested)."""
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int | float | str):
        text = canonical_value(value) if not isinstance(value, str) else value
        return _typed_scalar(canonical_text(text, parse_lists=False))
    if isinstance(value, list | tuple):
        return [_canonical_json_value(item) for item in value]
    if isinstance(value, Mapping):
        return {str(k): _canonical_json_value(v) for k, v in value.items()}
    raise InputError(f"unsupported value type {type(value).__name__}: {value!r}")


def _typed_scalar(text: str) -> object:
    """Inverse of canonical scalar text: the JSON value a canonical text stands for."""
    if text == "true":
        return True
    if text == "false":
        return False
    if text == "null":
        return None
    if _DECIMAL.fullmatch(text):
        number = Decimal(text)
        if number == number.to_integral_value() and number.adjusted() <= _MAX_INTEGRAL_DIGITS:
            return int(number)
        as_float = float(number)
        return as_float if math.isfinite(as_float) else text
    return text


def _compact_json(value: object) -> str:
    return json.dumps(value, separators=(",", ":"), sort_keys=True, ensure_ascii=False)


def canonical_value(value: object) -> str:
    """Canonical text of a scalar or list value from YAML or JSON."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return _canonical_number(str(value))
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            return repr(value)
        return _canonical_number(repr(value))
    if isinstance(value, str):
        return canonical_text(value)
    if isinstance(value, list | tuple):
        return _compact_json(_canonical_json_value(list(value)))
    if isinstance(value, Mapping):
        if not value:
            return "{}"
        raise InputError("a non-empty object has no single canonical value; explode it")
    raise InputError(f"unsupported value type {type(value).__name__}: {value!r}")


# ---------------------------------------------------------------------------
# Names
# ---------------------------------------------------------------------------


def model_basename(reference: str) -> str:
    """``Inferact/X-EAGLE3`` and ``/data/models/X-EAGLE3/`` both give ``X-EAGLE3``."""
    stripped = reference.rstrip("/")
    return stripped.rsplit("/", 1)[-1] if stripped else reference


def canonical_flag_name(name: str, *, source: str | None = None) -> str:
    """``--max-num-seqs`` / ``max_num_seqs`` → ``max_num_seqs``; refuses anything else."""
    bare = name[2:] if name.startswith("--") else name
    canonical = bare.replace("-", "_")
    if not _FLAG_NAME.fullmatch(canonical):
        hint = "flag names are lowercase letters, digits, '-' and '_' (vLLM is case-sensitive)"
        raise _error(f"not a flag name: {name!r}", source, hint=hint)
    return canonical


def _env_key(name: object, source: str | None) -> str:
    if not isinstance(name, str) or not _ENV_NAME.fullmatch(name):
        raise _error(f"not an environment variable name: {name!r}", source)
    return f"env:{name}"


def _env_value(value: object, name: str, source: str | None) -> str:
    """Env values stay text: the program reading them parses them itself."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float | str):
        return str(value) if not isinstance(value, float) else repr(value)
    raise _error(f"environment variable {name} has a non-scalar value {value!r}", source)


def _error(
    message: str, source: str | None, *, key_path: str | None = None, hint: str | None = None
) -> InputError:
    if source is not None:
        return InputError(message, path=source, key_path=key_path, hint=hint)
    if key_path:
        message = f"{key_path}: {message}"
    return InputError(message, hint=hint)


# ---------------------------------------------------------------------------
# Occurrences: one per spelling, resolved with vLLM's precedence
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class _Occurrence:
    """One flag occurrence. ``path`` is empty for a plain one, else the dotted sub-keys."""

    name: str
    path: tuple[str, ...]
    value: object  # str (argv text) | parsed JSON/YAML value
    append: bool = False
    from_text: bool = False


def _parse_dotted_value(text: str) -> object:
    """vLLM's reading of a dotted value: JSON, else a human-readable int, else text."""
    try:
        return json.loads(text)
    except (json.JSONDecodeError, RecursionError):
        pass
    match = _HUMAN_INT.fullmatch(text.strip())
    if match:
        number, suffix = match.groups()
        decimal = {"k": 10**3, "m": 10**6, "g": 10**9, "t": 10**12}
        binary = {"K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}
        if suffix in decimal:
            return int(float(number) * decimal[suffix])
        if "." not in number:
            return int(number) * binary[suffix]
    return text


def _json_object(text: str) -> dict[str, object] | None:
    if not text.startswith("{"):
        return None
    try:
        parsed = json.loads(text)
    except (json.JSONDecodeError, RecursionError):
        return None
    return parsed if isinstance(parsed, dict) else None


def _nested(path: tuple[str, ...], value: object) -> object:
    for key in reversed(path):
        value = {key: value}
    return value


def _update(original: dict[str, object], update: Mapping[str, object]) -> None:
    """vLLM's recursive update: dicts merge, lists concatenate, anything else replaces."""
    for key, value in update.items():
        current = original.get(key)
        if isinstance(value, Mapping) and isinstance(current, dict):
            _update(current, value)
        elif isinstance(value, list) and isinstance(current, list):
            original[key] = current + value
        elif isinstance(value, Mapping):
            fresh: dict[str, object] = {}
            _update(fresh, value)
            original[key] = fresh
        else:
            original[key] = value


def _resolve(
    occurrences: Iterable[_Occurrence], merge: ConfigMerge
) -> tuple[dict[str, object], list[str]]:
    """Apply last-wins and the dotted/JSON rule: final value per flag name, and notes."""
    plain: dict[str, object] = {}
    dotted: dict[str, dict[str, object]] = {}
    merged: dict[str, object] = {}
    for occ in occurrences:
        value: object = occ.value
        if occ.path:
            if occ.append:
                items = value if isinstance(value, list) else [value]
                value = list(items)
            update = _nested(occ.path, value)
            assert isinstance(update, dict)
            _update(dotted.setdefault(occ.name, {}), update)
            target = merged.get(occ.name)
            if not isinstance(target, dict):
                target = {}
                merged[occ.name] = target
            _update(target, update)
            continue
        if occ.from_text and isinstance(value, str):
            obj = _json_object(value)
            if obj is not None:
                value = obj
        plain[occ.name] = value
        if isinstance(value, Mapping) and isinstance(merged.get(occ.name), dict):
            current = merged[occ.name]
            assert isinstance(current, dict)
            _update(current, value)
        elif isinstance(value, Mapping):
            fresh: dict[str, object] = {}
            _update(fresh, value)
            merged[occ.name] = fresh
        else:
            merged[occ.name] = value
    if merge is ConfigMerge.MERGE:
        return merged, []
    resolved = dict(plain)
    resolved.update(dotted)
    notes = [
        f"--{name.replace('_', '-')}: its dotted options replace its JSON value (as in vLLM); "
        f"dropped {', '.join(lost)}"
        for name in sorted(set(plain) & set(dotted))
        if (lost := _lost_keys(name, plain[name], dotted[name]))
    ]
    return resolved, notes


def _lost_keys(name: str, replaced: object, kept: dict[str, object]) -> list[str]:
    """Keys of ``replaced`` (exploded) that ``kept`` does not set."""
    before: dict[str, str] = {}
    after: dict[str, str] = {}
    try:
        _explode(name, replaced, before, None, from_text=False)
        _explode(name, kept, after, None, from_text=False)
    except InputError:
        return [name]
    return sorted(set(before) - set(after))


def _explode(
    name: str, value: object, out: dict[str, str], source: str | None, from_text: bool
) -> None:
    """Write ``value`` under ``name``: objects become dotted leaves, scalars canonical text."""
    if isinstance(value, Mapping):
        if not value:
            out[name] = "{}"
            return
        for sub, inner in value.items():
            _explode(f"{name}.{_key_segment(sub, name, source)}", inner, out, source, False)
        return
    if isinstance(value, str) and name in _BASENAME_KEYS:
        out[name] = model_basename(value)
        return
    if isinstance(value, str) and from_text:
        base = name.split(".", 1)[0]
        out[name] = value if base in _VERBATIM_VALUE_FLAGS else canonical_text(value)
        return
    out[name] = canonical_value(value)


def _key_segment(sub: object, parent: str, source: str | None) -> str:
    """One sub-key as it appears in a canonical key; JSON-quoted when it contains a dot.

    ``{"lmcache.mp.port": 1}`` under ``kv_connector_extra_config`` is the key
    ``...kv_connector_extra_config."lmcache.mp.port"``, distinct from the nested
    ``...lmcache.mp.port`` that a dotted CLI spelling would mean.
    """
    if isinstance(sub, bool):
        text = "true" if sub else "false"
    elif isinstance(sub, int | float) or sub is None:
        text = json.dumps(sub)
    elif isinstance(sub, str):
        text = sub
    else:
        raise _error(f"config key {sub!r} under {parent} is not a string", source, key_path=parent)
    if not text or "." in text or text.startswith('"') or text != text.strip():
        return json.dumps(text, ensure_ascii=False)
    return text


def split_key(key: str) -> list[str]:
    """Split a canonical key into its flag name and sub-keys (undoing JSON quoting)."""
    parts: list[str] = []
    decoder = json.JSONDecoder()
    i = 0
    while True:
        if key.startswith('"', i):
            try:
                segment, i = decoder.raw_decode(key, i)
            except json.JSONDecodeError:
                raise InputError(f"malformed quoted sub-key in {key!r}") from None
            if i < len(key) and key[i] != ".":
                raise InputError(f"malformed quoted sub-key in {key!r}")
            parts.append(str(segment))
        else:
            end = key.find(".", i)
            end = len(key) if end < 0 else end
            parts.append(key[i:end])
            i = end
        if i >= len(key):
            return parts
        i += 1  # the "." separator


def _flagset(
    occurrences: Sequence[_Occurrence],
    env: Mapping[str, object] | None,
    merge: ConfigMerge,
    source: str | None,
) -> tuple[FlagSet, tuple[str, ...]]:
    resolved, notes = _resolve(occurrences, merge)
    text_names = {occ.name for occ in occurrences if occ.from_text and not occ.path}
    out: dict[str, str] = {}
    for name, value in resolved.items():
        _explode(name, value, out, source, from_text=name in text_names)
    for name in sorted(FALSE_BY_DEFAULT):
        if out.get(name) == "false":
            del out[name]
            notes.append(f"{name}=false is vLLM's default: dropped")
    for name in sorted(ONE_BY_DEFAULT):
        if out.get(name) == "1":
            del out[name]
            notes.append(f"{name}=1 is vLLM's default: dropped")
    for env_name, env_value in (env or {}).items():
        key = _env_key(env_name, source)
        out[key] = _env_value(env_value, key[4:], source)
    return FlagSet.of_strings(out), tuple(notes)


# ---------------------------------------------------------------------------
# argv
# ---------------------------------------------------------------------------


def _is_value_token(arg: str) -> bool:
    return not arg.startswith("-") or bool(_NEGATIVE_NUMBER.fullmatch(arg)) or arg == "-"


@dataclass
class _Identity:
    model: str | None = None
    served_model_name: str | None = None
    host: str | None = None
    port: str | None = None

    def command(self, result: tuple[FlagSet, tuple[str, ...]]) -> NormalisedCommand:
        flags, notes = result
        return NormalisedCommand(
            model=self.model,
            served_model_name=self.served_model_name,
            host=self.host,
            port=self.port,
            flags=flags,
            notes=notes,
        )


def _set_identity(
    identity: _Identity, name: str, value: object, origin: str, source: str | None
) -> None:
    if name == "model":
        if identity.model is not None:
            raise _error(
                f"the model is given twice ({identity.model!r} and {value!r})",
                source,
                key_path=origin,
            )
        if not isinstance(value, str) or not value:
            raise _error(
                f"the model must be a non-empty string, not {value!r}", source, key_path=origin
            )
        identity.model = value
    elif name == "served_model_name":
        if isinstance(value, list | tuple):
            names = [str(item) for item in value]
            if not names:
                raise _error("--served-model-name needs at least one name", source, key_path=origin)
            identity.served_model_name = names[0] if len(names) == 1 else _compact_json(names)
        elif isinstance(value, str | int | float) and not isinstance(value, bool):
            identity.served_model_name = str(value)
        else:
            raise _error(
                f"--served-model-name needs a name, not {value!r}", source, key_path=origin
            )
    elif name == "host":
        if not isinstance(value, str) or not value:
            raise _error(f"--host needs a value, not {value!r}", source, key_path=origin)
        identity.host = value
    else:
        if isinstance(value, bool) or not isinstance(value, str | int):
            raise _error(f"--port needs a value, not {value!r}", source, key_path=origin)
        identity.port = canonical_text(str(value))


def _shell_words(arg: str) -> list[str]:
    """An option element whose *name* holds whitespace, split as a shell splits it.

    The recipes site renders flags unquoted (recipes-builder-spec §3.6), so a
    recipe element ``"--max-model-len auto"`` reaches vLLM as two words.
    vLLM itself would refuse the unsplit element, so splitting it never hides
    a command that ran. Values (after ``=``) and non-option elements are kept.
    """
    if not arg.startswith("-") or _NEGATIVE_NUMBER.fullmatch(arg):
        return [arg]
    head = arg.split("=", 1)[0]
    if not any(ch.isspace() for ch in head):
        return [arg]
    return arg.split()


def _argv_occurrences(
    argv: Sequence[str], source: str | None, merge: ConfigMerge
) -> tuple[list[_Occurrence], _Identity]:
    tokens: list[str] = []
    for index, arg in enumerate(argv):
        if not isinstance(arg, str):
            raise _error(f"argv[{index}] is not a string: {arg!r}", source)
        tokens += _shell_words(arg)
    if tokens[:2] == ["vllm", "serve"]:
        tokens = tokens[2:]
    elif tokens[:1] == ["serve"]:
        tokens = tokens[1:]
    elif tokens[:1] == ["vllm"]:
        raise _error("only `vllm serve` commands can be normalised", source, key_path="argv[1]")

    identity = _Identity()
    occurrences: list[_Occurrence] = []
    positionals: list[str] = []
    short_dotted: dict[str, str] = {}
    long_dotted: set[str] = set()
    i = 0
    while i < len(tokens):
        arg = tokens[i]
        where = f"argv: {arg!r}"
        if arg == "--":
            raise _error("a bare '--' (end of options) is not supported", source, key_path=where)
        if arg.startswith("--"):
            head, eq, inline = arg.partition("=")
            if "." in head:
                long_dotted.add(canonical_flag_name(head.partition(".")[0], source=source))
            i = _read_long_option(
                tokens, i, head, inline if eq else None, occurrences, identity, source
            )
            continue
        if arg.startswith("-") and not _NEGATIVE_NUMBER.fullmatch(arg) and arg != "-":
            head, eq, inline = arg.partition("=")
            base, dot, rest = head.partition(".")
            long_name = SHORT_OPTIONS.get(base)
            if long_name is None:
                raise _error(
                    f"unsupported short option {arg!r}",
                    source,
                    key_path=where,
                    hint="supported: "
                    + ", ".join(sorted(SHORT_OPTIONS))
                    + "; write other options in their long form (-O depends on the vLLM version)",
                )
            long_head = f"--{long_name}" + (dot + rest if dot else "")
            if dot:
                short_dotted[long_name] = base
            i = _read_long_option(
                tokens, i, long_head, inline if eq else None, occurrences, identity, source
            )
            continue
        positionals.append(arg)
        i += 1

    mixed = sorted(set(short_dotted) & long_dotted)
    if mixed and merge is ConfigMerge.VLLM:
        name = mixed[0]
        raise _error(
            f"dotted {short_dotted[name]}.* and --{name.replace('_', '-')}.* options are mixed",
            source,
            hint="vLLM merges each spelling separately and keeps only one of the two objects; "
            "write one spelling (or normalise with merge=ConfigMerge.MERGE to see the intent)",
        )
    if positionals:
        if len(positionals) > 1 or identity.model is not None:
            extra = positionals[1:] if identity.model is None else positionals
            raise _error(
                f"unexpected positional argument(s) {extra!r}",
                source,
                hint="vllm serve takes one positional argument, the model",
            )
        _set_identity(identity, "model", positionals[0], "argv", source)
    return occurrences, identity


def _read_long_option(
    tokens: list[str],
    i: int,
    head: str,
    inline: str | None,
    occurrences: list[_Occurrence],
    identity: _Identity,
    source: str | None,
) -> int:
    """Read the option at ``tokens[i]`` (``head`` = ``--name[.sub...]``); return the next index."""
    arg = tokens[i]
    where = f"argv: {arg!r}"
    name_part, dot, sub_part = head.partition(".")
    append = False
    if dot:
        if sub_part.endswith("+"):
            append = True
            sub_part = sub_part[:-1]
        path = tuple(sub_part.split("."))
        if any(not part for part in path):
            raise _error(f"empty sub-key in {arg!r}", source, key_path=where)
    else:
        path = ()
    name = canonical_flag_name(name_part, source=source)
    negated = name.startswith("no_")
    if negated:
        if dot or inline is not None:
            raise _error(
                f"{name_part} is a negation and takes no value or sub-key", source, key_path=where
            )
        occurrences.append(_Occurrence(canonical_flag_name(name[3:], source=source), (), False))
        return i + 1

    if path:
        # vLLM always consumes the next arg as a dotted option's value.
        if inline is None:
            if i + 1 >= len(tokens):
                raise _error(f"{head} expects a value", source, key_path=where)
            text = tokens[i + 1]
            nxt = i + 2
        else:
            text, nxt = inline, i + 1
        value: object = [*text.split(",")] if append else _parse_dotted_value(text)
        if name in _IDENTITY_FLAGS:
            raise _error(f"{name} cannot take dotted sub-keys", source, key_path=where)
        occurrences.append(_Occurrence(name, path, value, append=append))
        return nxt

    if name == "config":
        raise _error(
            "--config FILE cannot be resolved statically",
            source,
            key_path=where,
            hint="inline the file's arguments into the command",
        )

    if name in _MULTI_VALUE_FLAGS:
        values: list[str] = [] if inline is None else [inline]
        nxt = i + 1
        if inline is None:
            while nxt < len(tokens) and _is_value_token(tokens[nxt]):
                values.append(tokens[nxt])
                nxt += 1
        if not values:
            raise _error(f"{head} expects at least one value", source, key_path=where)
        if name in _IDENTITY_FLAGS:
            _set_identity(identity, name, values, where, source)
        else:
            occurrences.append(_Occurrence(name, (), values))
        return nxt

    if inline is not None:
        text, nxt = inline, i + 1
    elif (
        i + 1 < len(tokens)
        and _is_value_token(tokens[i + 1])
        and (name not in BOOLEAN_FLAGS or tokens[i + 1].lower() in _BOOL_WORDS)
    ):
        text, nxt = tokens[i + 1], i + 2
    else:
        if name in _IDENTITY_FLAGS:
            raise _error(f"{head} expects a value", source, key_path=where)
        occurrences.append(_Occurrence(name, (), True))
        return i + 1

    if name in _IDENTITY_FLAGS:
        _set_identity(identity, name, text, where, source)
    else:
        occurrences.append(_Occurrence(name, (), text, from_text=True))
    return nxt


def normalise_argv(
    argv: Sequence[str],
    env: Mapping[str, object] | None = None,
    *,
    merge: ConfigMerge = ConfigMerge.VLLM,
    source: str | None = None,
) -> NormalisedCommand:
    """Normalise a ``vllm serve`` argv (leading ``vllm serve`` optional) and its env.

    ``source`` names the input in error messages (a file path).
    """
    # The type is part of the key: 1, 1.0 and True are equal (and hash alike) in Python.
    env_items = tuple((k, type(v), v) for k, v in (env or {}).items())
    try:
        return _normalise_argv_cached(tuple(argv), env_items, merge, source)
    except TypeError:  # an unhashable env value: normalise without the cache
        occurrences, identity = _argv_occurrences(argv, source, merge)
        return identity.command(_flagset(occurrences, env, merge, source))


@functools.lru_cache(maxsize=8192)
def _normalise_argv_cached(
    argv: tuple[str, ...],
    env_items: tuple[tuple[str, type, object], ...],
    merge: ConfigMerge,
    source: str | None,
) -> NormalisedCommand:
    """Audits normalise the same commands for many combinations; results are frozen."""
    occurrences, identity = _argv_occurrences(argv, source, merge)
    env = {name: value for name, _, value in env_items}
    return identity.command(_flagset(occurrences, env, merge, source))


# ---------------------------------------------------------------------------
# srt-slurm vllm_config mappings
# ---------------------------------------------------------------------------


def _mapping_occurrences(
    config: Mapping[str, object], source: str | None, key_prefix: str
) -> tuple[list[_Occurrence], _Identity]:
    if not isinstance(config, Mapping):
        raise _error(
            f"expected a mapping of flags, not {type(config).__name__}",
            source,
            key_path=key_prefix or None,
        )
    identity = _Identity()
    occurrences: list[_Occurrence] = []
    for raw_key, value in config.items():
        key_path = f"{key_prefix}.{raw_key}" if key_prefix else str(raw_key)
        if not isinstance(raw_key, str):
            raise _error(f"flag name must be a string, not {raw_key!r}", source, key_path=key_path)
        name_part, dot, sub_part = raw_key.partition(".")
        try:
            name = canonical_flag_name(name_part)
        except InputError as exc:
            raise _error(exc.message, source, key_path=key_path, hint=exc.hint) from None
        if value is None:
            raise _error(
                f"{raw_key} has no value (null)",
                source,
                key_path=key_path,
                hint="write true/false for a boolean flag, or remove the key",
            )
        if name == "config":
            raise _error(
                "a nested --config file cannot be resolved statically",
                source,
                key_path=key_path,
            )
        if name.startswith("no_"):
            if dot or value is not True:
                raise _error(
                    f"{raw_key} is a negation: only `{raw_key}: true` is meaningful",
                    source,
                    key_path=key_path,
                )
            occurrences.append(_Occurrence(canonical_flag_name(name[3:]), (), False))
            continue
        if dot:
            path = tuple(sub_part.split("."))
            if any(not part for part in path) or name in _IDENTITY_FLAGS:
                raise _error(f"bad dotted key {raw_key!r}", source, key_path=key_path)
            occurrences.append(_Occurrence(name, path, value))
            continue
        if name in _IDENTITY_FLAGS:
            if name != "served_model_name" and isinstance(value, list | dict):
                raise _error(f"{raw_key} needs a scalar value", source, key_path=key_path)
            if isinstance(value, Mapping):
                raise _error(
                    f"{raw_key} needs a name or a list of names", source, key_path=key_path
                )
            _set_identity(identity, name, value, key_path, source)
            continue
        if name in _MULTI_VALUE_FLAGS:
            items = value if isinstance(value, list) else [value]
            if not items or any(isinstance(item, list | Mapping | bool) for item in items):
                raise _error(
                    f"{raw_key} needs one value or a list of values", source, key_path=key_path
                )
            occurrences.append(_Occurrence(name, (), list(items)))
        elif isinstance(value, str):
            occurrences.append(_Occurrence(name, (), value, from_text=True))
        elif isinstance(value, bool | int | float | list | Mapping):
            occurrences.append(_Occurrence(name, (), value))
        else:
            raise _error(f"unsupported value {value!r}", source, key_path=key_path)
    return occurrences, identity


def normalise_mapping_command(
    config: Mapping[str, object],
    env: Mapping[str, object] | None = None,
    *,
    merge: ConfigMerge = ConfigMerge.VLLM,
    source: str | None = None,
    key_prefix: str = "",
) -> NormalisedCommand:
    """Normalise an srt-slurm ``vllm_config.<role>`` mapping, keeping model/host/port apart.

    ``key: true`` is the bare flag, ``key: false`` is ``--no-key`` (both as
    vLLM's own ``--config`` YAML loader reads them), ``no-key: true`` is
    ``key=false``; a mapping or a JSON-object string is a config object.
    ``key_prefix`` (e.g. ``backend.vllm_config.prefill``) prefixes key paths in errors.
    """
    occurrences, identity = _mapping_occurrences(config, source, key_prefix)
    return identity.command(_flagset(occurrences, env, merge, source))


def normalise_mapping(
    config: Mapping[str, object],
    env: Mapping[str, object] | None = None,
    *,
    merge: ConfigMerge = ConfigMerge.VLLM,
    source: str | None = None,
    key_prefix: str = "",
) -> FlagSet:
    """The canonical ``FlagSet`` of an srt-slurm ``vllm_config.<role>`` mapping and its env."""
    return normalise_mapping_command(
        config, env, merge=merge, source=source, key_prefix=key_prefix
    ).flags


# ---------------------------------------------------------------------------
# Rendering
# ---------------------------------------------------------------------------


def _option(name: str) -> str:
    return "--" + name.replace("_", "-")


def render_argv(flags: FlagSet) -> list[str]:
    """The argv a FlagSet stands for (without ``vllm serve`` and without env).

    Booleans render bare (``--x``) or negated (``--no-x``); configs render as
    one compact JSON object per flag; values starting with ``-`` use ``--x=v``.
    ``normalise_argv(render_argv(f), render_env(f)).flags == f`` for every
    FlagSet ``f`` this module produced.
    """
    argv: list[str] = []
    configs: dict[str, dict[str, object]] = {}
    for key, value in flags.items():
        if key.startswith("env:"):
            continue
        name, *parts = split_key(key)
        if parts:
            node = configs.setdefault(name, {})
            for part in parts[:-1]:
                child = node.setdefault(part, {})
                if not isinstance(child, dict):
                    raise InputError(f"{key} conflicts with a scalar at {name}.{part}")
                node = child
            node[parts[-1]] = _leaf_json(value)
            continue
        if name in _MULTI_VALUE_FLAGS:
            items = _leaf_json(value)
            if not isinstance(items, list) or any(
                not isinstance(item, str | int | float) or str(item).startswith("-")
                for item in items
            ):
                raise InputError(f"{key}={value} cannot be rendered as separate values")
            argv += [_option(name), *(canonical_value(item) for item in items)]
        elif value == "true":
            argv.append(_option(name))
        elif value == "false":
            argv.append(_option("no_" + name))
        elif value.startswith("-") or value == "" or name in BOOLEAN_FLAGS:
            argv.append(f"{_option(name)}={value}")
        else:
            argv += [_option(name), value]
    for name in sorted(configs):
        if name in flags:
            raise InputError(f"{name} has both a value and sub-keys")
        argv += [_option(name), _compact_json(configs[name])]
    return argv


def _leaf_json(text: str) -> object:
    if text == "{}":
        return {}
    if text.startswith("[") and text.endswith("]"):
        try:
            return json.loads(text)
        except json.JSONDecodeError:
            return text
    return _typed_scalar(text)


def render_env(flags: FlagSet) -> dict[str, str]:
    """The environment variables of a FlagSet (``env:NAME`` keys), by name."""
    return {key[4:]: value for key, value in flags.items() if key.startswith("env:")}


def render_command(command: NormalisedCommand) -> list[str]:
    """The full ``vllm serve`` argv of a normalised command (env excluded)."""
    argv = ["vllm", "serve"]
    if command.model is not None:
        argv.append(command.model)
    if command.served_model_name is not None:
        names = command.served_model_name
        parsed = json.loads(names) if names.startswith("[") else None
        argv += ["--served-model-name", *(parsed if isinstance(parsed, list) else [names])]
    if command.host is not None:
        argv += ["--host", command.host]
    if command.port is not None:
        argv += ["--port", command.port]
    return argv + render_argv(command.flags)
