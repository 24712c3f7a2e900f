"""Static evaluation of InferenceX single-node launcher scripts (never executed).

Public API: :func:`evaluate_launcher` → :class:`LauncherResult`; the
lower-level :func:`evaluate_script` → :class:`Evaluation` (every serve command
reached, all markers, the final symbolic state).
"""

from provenance.evidence.bash.evaluator import Evaluation, Limits, RunContext, evaluate_script
from provenance.evidence.bash.launcher import LauncherResult, evaluate_launcher

__all__ = [
    "Evaluation",
    "LauncherResult",
    "Limits",
    "RunContext",
    "evaluate_launcher",
    "evaluate_script",
]
