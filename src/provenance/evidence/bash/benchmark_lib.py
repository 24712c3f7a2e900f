"""Facts about InferenceX's ``benchmarks/benchmark_lib.sh`` for when it is not followed.

Launchers ``source "$(dirname "$0")/../../benchmark_lib.sh"``. The evaluator
never reads files itself; when the caller does not pass the helper's text
(``helpers=``), these facts stand in for it: the variables its top level sets,
and for each of its functions the global variables it assigns (values known
only at run time, so they become holes). Functions not listed assign no
globals. Facts read from the file at InferenceX 843c625 (names only).
"""

from __future__ import annotations

from typing import Final

from provenance.evidence.bash.values import Var, text_of

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


def apply_top_level(variables: dict[str, Var]) -> None:
    """The effect of sourcing ``benchmark_lib.sh`` at top level (exports, not by the launcher)."""
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
