"""What the launcher's surroundings can change about the served ``vllm``: the runner
launcher that starts it and the ``benchmark_lib.sh`` it sources.

The benchmark script is evaluated by :mod:`.launcher`; the runner launcher
(``runners/launch_<fleet>.sh``) that runs it with ``bash`` and the library it
sources (replaced by facts, :mod:`.benchmark_lib`) run in or before the
script's shell, so both can change what the served ``vllm`` is or receives.
Both are read here syntactically for the constructs that would; the library
whole (every statement, taken or not), the runner only where its run goes:
:mod:`.runner` evaluates it and keeps the constructs on the path to the
script's invocation, and carries the engine variables it passes exactly.
The constructs:

* runner launcher: a function exported to the script's bash (``export -f``,
  ``declare -fx``), a construct that redefines ``vllm`` for child shells
  (``PATH`` ahead of ``$PATH``, ``BASH_ENV``/``ENV``, a ``vllm`` function:
  :mod:`.resolution`), and an engine variable set for the script
  (``VLLM_*=…`` assigned, exported, or passed by ``env``/``srun --export``/
  ``docker -e``) or a variable that changes how the script's bash starts
  (``SHELLOPTS``, ``BASHOPTS``, ``POSIXLY_CORRECT``, ``BASH_FUNC_*``);
* library: everything the evaluator itself marks in a launcher (resolution,
  traps, shell options, exported functions) plus an engine variable it sets.

Each becomes a partial marker naming the file and line. A false positive makes
a record partial; a miss would let a complete record differ from what runs.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from functools import lru_cache
from typing import Final

from provenance.errors import InputError
from provenance.evidence.bash import hazards
from provenance.evidence.bash.evaluator import RunContext
from provenance.evidence.bash.launcher import LauncherResult, evaluate_launcher
from provenance.evidence.bash.resolution import CONSTRUCT as REDEFINITION
from provenance.evidence.bash.resolution import redefinitions
from provenance.evidence.bash.runner import (
    RUNNER_ENVIRONMENT,
    UNREADABLE,
    Candidate,
    RunnerFindings,
    RunnerLauncher,
    runner_findings,
    statement_start,
)
from provenance.evidence.bash.syntax import Node, descendants, line_of, node_text, parse_script
from provenance.model.record import PartialMarker

LIBRARY_ENVIRONMENT: Final = "library-environment"
__all__ = [
    "LIBRARY_ENVIRONMENT",
    "RUNNER_ENVIRONMENT",
    "RunnerFindings",
    "RunnerLauncher",
    "evaluate_in_context",
    "library_markers",
    "runner_findings_for",
    "runner_markers",
]

# An engine variable (or one that changes how bash starts) given a value: ``NAME=``.
_SETS: Final = re.compile(
    r"(?<![A-Za-z0-9_$\{!#])"
    r"(VLLM_[A-Za-z0-9_]*|SHELLOPTS|BASHOPTS|POSIXLY_CORRECT|BASH_FUNC_[A-Za-z0-9_%]*)="
)
_SHELL_STARTUP: Final = frozenset({"SHELLOPTS", "BASHOPTS", "POSIXLY_CORRECT"})

_Add = Callable[[str, Node, str], None]


def evaluate_in_context(
    script: str,
    path: str,
    env: Mapping[str, str],
    runner: RunnerLauncher | RunnerFindings | None = None,
    library: tuple[str, str] | None = None,
    conditional: bool = False,
) -> LauncherResult:
    """:func:`~.launcher.evaluate_launcher` run as the runner launcher runs it, plus the
    markers of the runner's path to it and, when the script sources it, of
    ``benchmark_lib.sh`` (``(text, path)``). ``env`` is the workflow's, for both;
    ``runner`` may be given already evaluated (:func:`runner_findings_for`);
    ``conditional``: values that depend on run-time conditions are kept as alternatives
    (:func:`~.launcher.evaluate_launcher`)."""
    extra: list[PartialMarker] = []
    context: RunContext | None = None
    if runner is not None:
        findings = (
            runner_findings_for(runner, env, path) if isinstance(runner, RunnerLauncher) else runner
        )
        extra.extend(findings.markers)
        if findings.engine_env:
            context = RunContext(inherited=findings.engine_env)
    result = evaluate_launcher(script, path, env, context=context, conditional=conditional)
    if library is not None and any(
        s.endswith(library[1].rsplit("/", 1)[-1]) for s in result.sourced
    ):
        extra.extend(library_markers(*library))
    if not extra:
        return result
    partial = sorted(
        dict.fromkeys([*result.partial, *extra]),
        key=lambda m: (m.path != path, m.path, m.line or 0, m.construct_name, m.detail),
    )
    return result.model_copy(update={"partial": partial})


def runner_findings_for(
    runner: RunnerLauncher, env: Mapping[str, str], script: str
) -> RunnerFindings:
    """The hazards on ``runner``'s path to ``script`` and the engine env it passes it."""
    return runner_findings(runner, env, script, runner_candidates)


def runner_markers(text: str, path: str) -> tuple[PartialMarker, ...]:
    """Constructs of a runner launcher, anywhere in it, that change what the script's
    ``vllm`` is or gets (ingest keeps those on the run's path: :mod:`.runner`)."""
    return tuple(m for m, _ in runner_candidates(text, path))


@lru_cache(maxsize=64)
def runner_candidates(text: str, path: str) -> tuple[Candidate, ...]:
    """:func:`runner_markers`, each with the start byte of the statement it is in."""
    return _scan(text, path, library=False)


@lru_cache(maxsize=16)
def library_markers(text: str, path: str) -> tuple[PartialMarker, ...]:
    """Constructs of a sourced library that the facts standing in for it do not carry."""
    return tuple(m for m, _ in _scan(text, path, library=True))


def _scan(text: str, path: str, library: bool) -> tuple[Candidate, ...]:
    try:
        parsed = parse_script(text, path)
    except InputError as exc:
        line = exc.location.line if exc.location is not None else None
        marker = PartialMarker(construct_name=UNREADABLE, path=path, line=line, detail=exc.message)
        return ((marker, 0),)
    found: dict[tuple[str, int, str], Candidate] = {}

    def add(construct: str, node: Node, detail: str) -> None:
        marker = PartialMarker(
            construct_name=construct, path=path, line=line_of(node), detail=detail[:200]
        )
        found.setdefault(
            (construct, marker.line or 0, marker.detail), (marker, statement_start(node))
        )

    functions = _function_bodies(parsed.root)
    for node in descendants(parsed.root):
        for redefinition in redefinitions(node):
            add(REDEFINITION, redefinition.node, redefinition.detail)
        if node.type == "declaration_command":
            _declaration(node, add)
        if node.type in ("variable_assignment", "word", "string", "raw_string", "concatenation"):
            if node.parent is not None and node.parent.type in ("string", "concatenation"):
                continue  # the whole string or word is scanned once
            for match in _SETS.finditer(node_text(node)):
                name = match.group(1)
                if library and name.startswith("VLLM_"):
                    add(LIBRARY_ENVIRONMENT, node, f"{name} is set for the engine by the library")
                elif not library:
                    what = (
                        "how the script's bash starts" if name in _SHELL_STARTUP else "the engine"
                    )
                    add(
                        RUNNER_ENVIRONMENT, node, f"{name} is set for {what} by the runner launcher"
                    )
        if library and node.type == "command":
            _library_command(node, functions, add)
        elif node.type == "command":
            _runner_command(node, add)
    return tuple(
        sorted(found.values(), key=lambda c: (c[0].line or 0, c[0].construct_name, c[0].detail))
    )


def _runner_command(node: Node, add: _Add) -> None:
    """``source``/``.``/``eval`` in the runner: code the scan does not read."""
    name = node.child_by_field_name("name")
    head = node_text(name) if name is not None else ""
    if head in ("source", ".", "eval"):
        add(
            "source" if head != "eval" else "eval",
            node,
            f"{head} in the runner launcher may change what the script inherits",
        )


def _declaration(node: Node, add: _Add) -> None:
    keyword = node.children[0].type if node.children else ""
    flags = "".join(node_text(c)[1:] for c in node.children[1:] if node_text(c).startswith("-"))
    exports = keyword == "export" or "x" in flags
    if "f" in flags and exports:
        names = [node_text(c) for c in node.named_children if not node_text(c).startswith("-")]
        add(
            REDEFINITION,
            node,
            f"{keyword} -{flags} {' '.join(names)[:60]} exports shell functions to child shells",
        )
    elif exports:
        for child in node.named_children:
            name = node_text(child).partition("=")[0]
            if child.type == "variable_name" and name in _SHELL_STARTUP:
                add(
                    RUNNER_ENVIRONMENT,
                    child,
                    f"{keyword} {name}: child shells start with this shell's options",
                )


def _library_command(node: Node, functions: dict[str, list[Node]], add: _Add) -> None:
    name = node.child_by_field_name("name")
    if name is None:
        return
    head = node_text(name)
    args = [
        node_text(c).strip("'\"")
        for i, c in enumerate(node.children)
        if node.field_name_for_child(i) == "argument"
    ]
    if head == "set":
        reason = hazards.set_reason(args)
        if reason is not None:
            add(hazards.SHELL_OPTION, node, reason)
    elif head == "shopt":
        reason = hazards.shopt_reason(args)
        if reason is not None:
            add(hazards.SHELL_OPTION, node, reason)
    elif head == "trap":
        for signal, action in hazards.trap_settings(args) or ():
            if action is None:
                continue
            reason = hazards.trap_reason(
                signal,
                action,
                lambda code: hazards.may_run_vllm(code, lambda n: functions.get(n, [])),
            )
            if reason is not None:
                add(hazards.TRAP, node, reason)


def _function_bodies(root: Node) -> dict[str, list[Node]]:
    bodies: dict[str, list[Node]] = {}
    for node in descendants(root):
        if node.type == "function_definition":
            name, body = node.child_by_field_name("name"), node.child_by_field_name("body")
            if name is not None and body is not None:
                bodies.setdefault(node_text(name), []).append(body)
    return bodies
