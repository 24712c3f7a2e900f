"""The arguments the GitHub Action adds to its one ``provenance audit`` call.

The audit runs outside the checked-out pull request (its current directory is under
``$RUNNER_TEMP``), so every path the Action's inputs give relative to
``working-directory`` is made absolute here against :data:`REPO_ENV`, the checkout's
absolute path:

* ``ledger`` and ``evidence`` become ``--ledger``/``--evidence``;
* ``sarif-file``, when set, becomes ``--report sarif=PATH``: a copy of the SARIF the
  Action uploads from ``$RUNNER_TEMP``. The pull request controls the checkout's files, so
  the path is refused when it contains ``..`` or when the file, or any directory on its
  way below ``$GITHUB_WORKSPACE``, is a symbolic link (a committed link may point
  anywhere; the report writer would write through it), or when it names something other
  than a regular file;
* ``extra-args`` is split into words the way a POSIX shell splits them, without running
  anything: quotes (``'…'``, ``"…"``) and backslashes group and escape, spaces and
  newlines separate, and ``$NAME`` / ``${NAME}`` are replaced by the variable from the
  step's environment (an unset one is an error). There is no command substitution,
  globbing or tilde expansion: the input is data, never code. Its words are passed as
  they are (a relative path in them is relative to the audit's directory under
  ``$RUNNER_TEMP``, not to the checkout).
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping
from pathlib import Path

from provenance.errors import UsageError

#: the environment variables the Action's steps set from its inputs
LEDGER_ENV = "INPUT_LEDGER"
EVIDENCE_ENV = "INPUT_EVIDENCE"
EXTRA_ARGS_ENV = "EXTRA_ARGS"
SARIF_FILE_ENV = "INPUT_SARIF_FILE"
#: the checkout's absolute path (``$GITHUB_WORKSPACE/<working-directory>``)
REPO_ENV = "REPO"
WORKSPACE_ENV = "GITHUB_WORKSPACE"

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


def _in_checkout(given: str, what: str, env: Mapping[str, str]) -> Path:
    """``given`` (variables expanded) made absolute against the checkout."""
    path = Path(expand_variables(given, env))
    if path.is_absolute():
        return path
    repo = env.get(REPO_ENV, "")
    if not Path(repo).is_absolute():
        raise UsageError(f"{what}: a relative path needs ${REPO_ENV}, the checkout's absolute path")
    return Path(repo) / path


def _symlink_on_the_way(path: Path, workspace: Path | None) -> Path | None:
    """The first symbolic link among ``path`` and its directories below ``workspace``
    (only ``path`` itself when it is not inside the workspace)."""
    try:
        inside = path.relative_to(workspace) if workspace is not None else None
    except ValueError:
        inside = None
    if inside is None:
        return path if path.is_symlink() else None
    here = workspace
    assert here is not None
    for part in inside.parts:
        here = here / part
        if here.is_symlink():
            return here
    return None


def sarif_copy_path(given: str, env: Mapping[str, str]) -> Path:
    """Where the ``sarif-file`` copy is written (see the module docstring); UsageError
    when the path is refused."""
    path = _in_checkout(given, "sarif-file", env)
    if ".." in path.parts:
        raise UsageError(f"sarif-file: {given!r} contains '..'; name the file directly")
    workspace = env.get(WORKSPACE_ENV, "")
    link = _symlink_on_the_way(path, Path(workspace) if Path(workspace).is_absolute() else None)
    if link is not None:
        raise UsageError(
            f"sarif-file: {link} is a symbolic link; refusing to write through it "
            "(the SARIF the Action uploads stays under $RUNNER_TEMP)"
        )
    if path.exists() and not path.is_file():
        raise UsageError(f"sarif-file: {path} exists and is not a regular file")
    return path


def action_arguments(env: Mapping[str, str]) -> tuple[str, ...]:
    """Every argument the Action adds: ``--ledger``/``--evidence`` from its inputs, the
    ``sarif-file`` copy, then the words of ``extra-args``."""
    args: list[str] = []
    for option, name in (("--ledger", LEDGER_ENV), ("--evidence", EVIDENCE_ENV)):
        given = env.get(name, "")
        if given:
            args += [option, str(_in_checkout(given, option[2:], env))]
    sarif_file = env.get(SARIF_FILE_ENV, "")
    if sarif_file:
        args += ["--report", f"sarif={sarif_copy_path(sarif_file, env)}"]
    return (*args, *split_words(env.get(EXTRA_ARGS_ENV, ""), env))
