"""What a one-shot command keeps alive until its process ends.

The console script (:func:`provenance.cli.main.main`) ends the process with
``os._exit``: memory is handed back to the system in one piece, never freed object
by object. The large structures a command builds and drops just before it ends
(after a MiniMax-M3 audit: the evidence graph, the judges' and auditors' memos, the
report, about 0.05 s of reference-count freeing in all) need not be freed one by one
either: the command appends them to :func:`kept` instead.

Only the console script turns this on (:func:`keep_until_exit`). Everywhere else
(click's test runner, a library caller, a long-lived process) :func:`kept` is
``None`` and everything is freed as usual, so nothing accumulates across commands.
"""

from __future__ import annotations

_kept: list[object] | None = None


def keep_until_exit() -> None:
    """From now on, :func:`kept` collects what commands would free (console script only)."""
    global _kept
    if _kept is None:
        _kept = []


def kept() -> list[object] | None:
    """The list to append soon-dropped structures to, or ``None``: free them as usual."""
    return _kept
