"""The arguments the GitHub Action adds to every ``provenance audit`` call.

The Action's ``ledger`` and ``evidence`` inputs become ``--ledger``/``--evidence``, and
``extra-args`` is split into words the way a POSIX shell splits them, without running
anything: quotes (``'…'``, ``"…"``) and backslashes group and escape, spaces and newlines
separate, and ``$NAME`` / ``${NAME}`` are replaced by the variable from the step's
environment (an unset one is an error). There is no command substitution, globbing or
tilde expansion: the input is data, never code.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping

from provenance.errors import UsageError

#: the environment variables the Action's steps set from its inputs
LEDGER_ENV = "INPUT_LEDGER"
EVIDENCE_ENV = "INPUT_EVIDENCE"
EXTRA_ARGS_ENV = "EXTRA_ARGS"

_VARIABLE = re.compile(r"\$(?:\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*))")


def expand_variables(word: str, env: Mapping[str, str]) -> str:
    """``$NAME`` and ``${NAME}`` in ``word`` replaced from ``env``; UsageError when unset."""

    def value(match: re.Match[str]) -> str:
        name = match.group(1) or match.group(2)
        if name not in env:
            raise UsageError(f"extra-args: ${name} is not set in the step's environment")
        return env[name]

    return _VARIABLE.sub(value, word)


def split_words(text: str, env: Mapping[str, str]) -> tuple[str, ...]:
    """``text`` split into shell words, variables expanded (see the module docstring)."""
    try:
        words = shlex.split(text, comments=False, posix=True)
    except ValueError as exc:  # unbalanced quotes, a trailing backslash
        raise UsageError(f"extra-args: {exc} in {text!r}") from None
    return tuple(expand_variables(word, env) for word in words)


def action_arguments(env: Mapping[str, str]) -> tuple[str, ...]:
    """Every argument the Action adds: ``--ledger``/``--evidence`` from its inputs, then
    the words of ``extra-args``."""
    args: list[str] = []
    for option, name in (("--ledger", LEDGER_ENV), ("--evidence", EVIDENCE_ENV)):
        given = env.get(name, "")
        if given:
            args += [option, expand_variables(given, env)]
    return (*args, *split_words(env.get(EXTRA_ARGS_ENV, ""), env))
