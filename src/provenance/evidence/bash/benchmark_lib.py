"""Facts about InferenceX's ``benchmarks/benchmark_lib.sh`` for when it is not followed.

Launchers ``source "$(dirname "$0")/../../benchmark_lib.sh"``. The evaluator
never reads files itself; when the caller does not pass the helper's text
(``helpers=``), these facts stand in for it: the variables its top level sets
(and its agentic rule: ``MAX_MODEL_LEN`` is unset for agentic callers), for
each of its functions the global variables it assigns (values known only at
run time, so they become holes), and the exit-status rules of the KV-offload
checks launchers branch on. Functions not listed assign no globals. Facts read
from the file at InferenceX 843c625; for another commit, pass the file's text
in ``helpers`` to be exact.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Final, Literal

from provenance.evidence.bash.values import Var, known, text_of

# A status rule reads variables through ``Lookup`` (None when unset) and returns
# the function's status (True/False), "exit" when the function exits the script,
# or None when it cannot be decided statically.
Lookup = Callable[[str], "str | None"]
Status = bool | Literal["exit"] | None

FILE_NAME: Final = "benchmark_lib.sh"

# Top level: ``export PORT="${PORT:-8888}"``, ``export PYTHONDONTWRITEBYTECODE=1``,
# ``export PYTHONPYCACHEPREFIX="${PYTHONPYCACHEPREFIX:-/tmp/inferencex-pycache}"``.
_TOP_LEVEL_DEFAULTS: Final = (
    ("PORT", "8888"),
    ("PYTHONDONTWRITEBYTECODE", None),
    ("PYTHONPYCACHEPREFIX", "/tmp/inferencex-pycache"),  # noqa: S108 - a fact, not a path we use
)
_TOP_LEVEL_FIXED: Final = {"PYTHONDONTWRITEBYTECODE": "1"}

_EVAL_GLOBALS: Final = (
    "MODEL_NAME",
    "OPENAI_API_KEY",
    "EVAL_RESULT_DIR",
    "INFERENCEX_LM_EVAL_RUNTIME_READY",
    "PYTHONPATH",
)
_DISAGG_GLOBALS: Final = (
    "TP",
    "PREFILL_TP",
    "PREFILL_EP",
    "EP_SIZE",
    "PREFILL_NUM_WORKERS",
    "DECODE_TP",
    "DECODE_EP",
    "DECODE_NUM_WORKERS",
    "DP_ATTENTION",
    "PREFILL_DP_ATTENTION",
    "DECODE_DP_ATTENTION",
)
_GPU_MONITOR_GLOBALS: Final = (
    "GPU_METRICS_CSV",
    "GPU_MONITOR_INTERVAL",
    "GPU_MONITOR_VENDOR",
    "GPU_MONITOR_PID",
)

FUNCTION_GLOBALS: Final[dict[str, tuple[str, ...]]] = {
    "check_env_vars": (),
    "start_gpu_monitor": _GPU_MONITOR_GLOBALS,
    "stop_gpu_monitor": _GPU_MONITOR_GLOBALS,
    "wait_for_server_ready": (),
    "wait_for_ready": (),
    "run_benchmark_serving": (),
    "setup_eval_context": ("EVAL_MAX_MODEL_LEN",),
    "compute_eval_context_length": ("EVAL_MAX_MODEL_LEN",),
    "run_lm_eval": _EVAL_GLOBALS,
    "run_eval": _EVAL_GLOBALS,
    "append_lm_eval_summary": (),
    "bridge_disagg_eval_metadata": _DISAGG_GLOBALS,
    "_patch_lm_eval": ("PYTHONPATH",),
    "_ensure_modal_credentials": ("MODAL_TOKEN_ID", "MODAL_TOKEN_SECRET", "HOME"),
}


def _kv_offloading(lookup: Lookup) -> str | None:
    value = lookup("KV_OFFLOADING")
    return value if value else None


def _offload_enabled(args: list[str], lookup: Lookup) -> Status:
    kv = _kv_offloading(lookup)
    if kv is None:
        return "exit"
    return kv != "none"


def _offload_none(args: list[str], lookup: Lookup) -> Status:
    kv = _kv_offloading(lookup)
    if kv is None or kv != "none" or lookup("KV_OFFLOAD_BACKEND"):
        return "exit"
    return True


def _offload_backend(args: list[str], lookup: Lookup) -> Status:
    kv = _kv_offloading(lookup)
    backend = lookup("KV_OFFLOAD_BACKEND") or ""
    if kv == "none":
        return "exit" if backend else False
    if kv == "dram":
        expected = args[0] if args else ""
        dram = lookup("TOTAL_CPU_DRAM_GB") or ""
        if backend != expected or not re.fullmatch(r"[1-9][0-9]*", dram):
            return "exit"
        return True
    return "exit"


# Functions whose exit status launchers branch on: their rule, from the
# functions' text (KV_OFFLOADING none/dram validation).
STATUS_RULES: Final[dict[str, Callable[[list[str], Lookup], Status]]] = {
    "agentic_kv_offload_enabled": _offload_enabled,
    "require_agentic_kv_offload_none": _offload_none,
    "require_agentic_kv_offload_backend": _offload_backend,
}


def is_agentic(variables: dict[str, Var], script_path: str) -> bool | None:
    """The library's agentic test: caller under ``agentic/``, IS_AGENTIC=1 or the scenario type."""
    if "/agentic/" in script_path or re.search(r"/agentic_[^/]*\.sh$", script_path):
        return True
    for name, wanted in (("IS_AGENTIC", "1"), ("SCENARIO_TYPE", "agentic-coding")):
        var = variables.get(name)
        if var is None or not var.is_set:
            continue
        value = known(var.scalar())
        if value is None:
            return None
        if value == wanted:
            return True
    return False


def _agentic_settings_invalid(variables: dict[str, Var]) -> bool:
    """The library's agentic validation of KV_OFFLOADING (True: it exits the script).

    A value known only at run time is not an error here: the path that exits is
    not the one that produced evidence.
    """

    def value(name: str) -> str | None:
        var = variables.get(name)
        if var is None or not var.is_set:
            return ""
        return known(var.scalar())

    kv, backend, dram = (
        value("KV_OFFLOADING"),
        value("KV_OFFLOAD_BACKEND"),
        value("TOTAL_CPU_DRAM_GB"),
    )
    if kv is None:
        return False
    if kv == "none":
        return bool(backend)
    if kv == "dram":
        if backend is not None and backend in ("", "none"):
            return True
        return dram is not None and not re.fullmatch(r"[1-9][0-9]*", dram)
    return True


def apply_top_level(variables: dict[str, Var], script_path: str = "") -> bool:
    """The effect of sourcing ``benchmark_lib.sh`` at top level (exports, not by the launcher).

    For agentic callers the library unsets ``MAX_MODEL_LEN`` (native context)
    and validates the KV-offload settings. Returns True when it exits the script.
    """
    agentic = is_agentic(variables, script_path)
    if agentic:
        variables.pop("MAX_MODEL_LEN", None)
        if _agentic_settings_invalid(variables):
            return True
    for name, default in _TOP_LEVEL_DEFAULTS:
        old = variables.get(name)
        value = _TOP_LEVEL_FIXED.get(name)
        if value is None:
            current = old.value if old is not None else None
            has_value = isinstance(current, tuple) and any(seg != "" for seg in current)
            if has_value and old is not None:
                variables[name] = Var(
                    old.value, exported=True, exported_by_script=old.exported_by_script
                )
                continue
            value = default or ""
        variables[name] = Var(
            text_of(value),
            exported=True,
            exported_by_script=old.exported_by_script if old is not None else False,
        )
    return False
