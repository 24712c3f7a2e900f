"""What the runner launcher passes to the benchmark script, on the path its run takes.

A runner launcher (``runners/launch_<fleet>.sh``) runs the benchmark script with
``bash``, directly or through ``srun``/``docker run``/``env``. Whatever it leaves
in the environment of that command reaches the script's bash and the ``vllm`` it
serves: an engine variable (``VLLM_*``), an exported function, ``PATH``,
``BASH_ENV``, ``SHELLOPTS``… Reading the whole file would flag lines the run
never reaches (the multi-node branch of a runner that also runs single-node
points), so the runner is evaluated statically, like the script, with the
environment the workflow gives both (never run):

* the *invocation* is the first command reached that names the script (its
  path, as evaluated, is one of the words of a ``bash``/``srun``/``docker``/
  ``env``/``exec`` command); ``[ -f PATH ]`` tests are answered from the tree
  (the runner runs in the checkout), so the runner's choice of script is followed;
* a hazard (the syntactic rules of :mod:`.context`) counts only when its
  statement ran before or at the invocation — on the path the evaluator
  follows, or on either side of a condition it cannot decide;
* an engine variable the invocation passes is followed exactly: the value the
  runner exports (or gives by ``env X=v``, ``srun --export=ALL,X=v``, ``docker
  -e X=v`` / ``-e X``) is carried into the script's evaluation as an inherited
  export (:attr:`~.evaluator.RunContext.inherited`), so the record's env holds
  it as bash would; a value known only at run time makes the record partial;
* what cannot be followed is a marker: no invocation found, the script run by
  something other than ``bash SCRIPT``, an ``env``/``srun --export``/``docker``
  form not understood, ``source``/``eval`` before the invocation.

Variables the machine's own environment sets (``HOME``, ``USER``,
``GITHUB_WORKSPACE``, …; every name the runner reads that the workflow does
not give) are holes, never guessed, except the names the caller knows are
unset (``unset``: ``IS_MULTINODE`` for the single-node workflow).
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Final

from provenance.errors import InputError
from provenance.evidence.bash.evaluator import RunContext, ServeCapture, evaluate_script
from provenance.evidence.bash.syntax import Node
from provenance.evidence.bash.values import Text, first_hole, known
from provenance.model.record import PartialMarker

RUNNER_ENVIRONMENT: Final = "runner-environment"
INVOCATION: Final = "runner-invocation"
UNREADABLE: Final = "unreadable-context"
#: Commands that may run the benchmark script (recorded by the evaluation).
_INVOKERS: Final = frozenset({"bash", "srun", "docker", "env", "exec", "timeout", "nohup"})
#: Variables that change how the script's bash starts, or what a command name runs.
STARTUP: Final = frozenset({"SHELLOPTS", "BASHOPTS", "POSIXLY_CORRECT", "BASH_ENV", "ENV", "PATH"})
_READ: Final = re.compile(r"\$\{?[#!]?([A-Za-z_][A-Za-z0-9_]*)")
_NAME: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# Node types a hazard's statement is climbed through: the statement the
# evaluator runs is the highest of them (a word's command, an assignment's export).
_WITHIN_STATEMENT: Final = frozenset(
    {"command", "declaration_command", "variable_assignment", "variable_assignments"}
    | {"unset_command", "test_command", "word", "string", "raw_string", "concatenation"}
    | {"simple_expansion", "expansion", "array", "string_content", "file_redirect"}
    | {"heredoc_redirect", "herestring_redirect", "binary_expression", "unary_expression"}
)


@dataclass(frozen=True)
class RunnerLauncher:
    """A runner launcher's text and path, and what is known of where it runs."""

    text: str
    path: str
    #: whether a path relative to the checkout is a regular file (None: unknown)
    files: Callable[[str], bool | None] | None = field(default=None, compare=False)
    #: identifies the tree ``files`` answers for (the commit): part of the cache key
    tree: str = ""
    #: names the caller knows the machine leaves unset
    unset: frozenset[str] = frozenset()
    #: files the runner may source, (path, text): followed, and scanned like it
    helpers: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class RunnerFindings:
    """What the runner launcher does to the script's run."""

    markers: tuple[PartialMarker, ...]
    #: engine variables the invocation passes, exactly (``VLLM_*`` → value)
    engine_env: Mapping[str, str]


Candidate = tuple[PartialMarker, int]
#: ``(runner text, path) → hazards with the start byte of their statement``
Scanner = Callable[[str, str], tuple[Candidate, ...]]


def statement_start(node: Node) -> int:
    """Start byte of the statement the evaluator runs for ``node`` (see ``_WITHIN_STATEMENT``)."""
    current = node
    while current.parent is not None and current.parent.type in _WITHIN_STATEMENT:
        current = current.parent
    return current.start_byte


def runner_findings(
    runner: RunnerLauncher, env: Mapping[str, str], script: str, scan: Scanner
) -> RunnerFindings:
    """The hazards on the runner's path to ``script`` and the engine env it passes."""
    names = _names_read(runner.text)
    relevant = env if names is None else {k: v for k, v in env.items() if k in names}
    return _findings(runner, tuple(sorted(relevant.items())), script, scan)


@lru_cache(maxsize=4096)
def _findings(
    runner: RunnerLauncher, env_items: tuple[tuple[str, str], ...], script: str, scan: Scanner
) -> RunnerFindings:
    env = dict(env_items)
    candidates = [
        (m, path, start)
        for text, path in ((runner.text, runner.path), *((t, p) for p, t in runner.helpers))
        for m, start in scan(text, path)
    ]
    read = _names_read(runner.text) or frozenset()
    opaque = frozenset(
        n for n in read if n not in env and n not in runner.unset and not n.startswith("VLLM_")
    )
    try:
        evaluation = evaluate_script(
            runner.text,
            runner.path,
            env,
            helpers=dict(runner.helpers),
            record=_INVOKERS,
            context=RunContext(opaque=opaque, files=runner.files),
        )
    except InputError as exc:
        line = exc.location.line if exc.location is not None else None
        marker = PartialMarker(
            construct_name=UNREADABLE,
            path=runner.path,
            line=line,
            detail=f"runner launcher not evaluated: {exc.message}"[:200],
        )
        return RunnerFindings((marker, *(m for m, _, _ in candidates)), {})
    # ``source`` counts only where the evaluation did not follow it (a helper is followed)
    unfollowed = {(m.path, m.line) for m in evaluation.markers if m.construct_name == "source"}
    candidates = [
        c for c in candidates if c[0].construct_name != "source" or (c[1], c[0].line) in unfollowed
    ]
    invocation = next((c for c in evaluation.recorded if _script_word(c, script) is not None), None)
    if invocation is None:
        marker = PartialMarker(
            construct_name=INVOCATION,
            path=runner.path,
            detail=f"no command of the runner launcher runs {script} on the evaluated path",
        )
        ran = [m for m, path, start in candidates if (path, start) in evaluation.executed]
        return RunnerFindings((marker, *ran), {})
    markers = [
        m
        for m, path, start in candidates
        if evaluation.executed.get((path, start), invocation.step + 1) <= invocation.step
    ]
    passed, problems = _passed_env(invocation, script, runner.path)
    markers.extend(problems)
    engine: dict[str, str] = {}
    for name, value in sorted(passed.items()):
        if env.get(name) is not None and value == _text(env[name]):
            continue
        if name.startswith("VLLM_"):
            plain = known(value)
            if plain is None:
                hole = first_hole(value)
                markers.append(
                    PartialMarker(
                        construct_name=RUNNER_ENVIRONMENT,
                        path=runner.path,
                        line=invocation.line,
                        detail=f"{name} is passed to the script with a value known only at "
                        f"run time ({hole.marker.construct_name if hole else '?'})",
                    )
                )
            else:
                engine[name] = plain
        elif name in STARTUP or name.startswith("BASH_FUNC_"):
            if name in opaque and _is_seed(value, name):
                continue  # the machine's own value, unchanged
            markers.append(
                PartialMarker(
                    construct_name=RUNNER_ENVIRONMENT,
                    path=runner.path,
                    line=invocation.line,
                    detail=f"{name} is changed for the script by the runner launcher",
                )
            )
    kept = [
        m
        for m in markers
        if not (
            m.construct_name == RUNNER_ENVIRONMENT
            and (carried := _vllm_name(m.detail)) is not None
            and carried in engine
        )
    ]
    unique = dict.fromkeys(kept)
    return RunnerFindings(
        tuple(sorted(unique, key=lambda m: (m.line or 0, m.construct_name, m.detail))), engine
    )


def _text(value: str) -> Text:
    return (value,) if value else ()


def _is_seed(value: Text, name: str) -> bool:
    """Whether ``value`` is still the hole the machine's ``name`` was seeded with."""
    hole = first_hole(value)
    return (
        len(value) == 1
        and hole is not None
        and hole.marker.construct_name == "environment"
        and hole.marker.detail.startswith(f"{name} ")
    )


def _vllm_name(detail: str) -> str | None:
    match = re.match(r"(VLLM_[A-Za-z0-9_]*) is set for the engine", detail)
    return match.group(1) if match else None


def _names_read(text: str) -> frozenset[str] | None:
    """Names the runner reads; None when it may read any (indirection, env listing)."""
    if "${!" in text or re.search(r"(^|[\s;|&(])(printenv|declare -p|export -p)\b", text):
        return None
    return frozenset(_READ.findall(text))


def _script_word(capture: ServeCapture, script: str) -> int | None:
    """Index of the word of ``capture`` that is the benchmark script's path."""
    for i, word in enumerate(capture.argv):
        text = known(word)
        if text is None or not text.endswith(".sh"):
            continue
        normal = posixpath.normpath(text)
        if normal == script or normal.endswith("/" + script):
            return i
    return None


def _passed_env(
    capture: ServeCapture, script: str, path: str
) -> tuple[dict[str, Text], list[PartialMarker]]:
    """The variables the invocation's command gives the script (exported ones and those
    its wrappers add), and what in its form is not followed."""
    index = _script_word(capture, script)
    assert index is not None
    words = [known(w) for w in capture.argv[:index]]
    env: dict[str, Text] = dict(capture.env)
    problems: list[PartialMarker] = []

    def problem(detail: str) -> None:
        problems.append(
            PartialMarker(
                construct_name=INVOCATION, path=path, line=capture.line, detail=detail[:200]
            )
        )

    heads = [posixpath.basename(w) if w is not None else None for w in words]
    docker = "docker" in heads
    if docker:
        env = {}
    i = 0
    while i < len(words):
        word, head = words[i], heads[i]
        i += 1
        if word is None:
            continue
        if head == "env":
            while i < len(words) and (w := words[i]) is not None and w.startswith("-"):
                problem(f"env {w} before {script} is not followed")
                i += 1
            while i < len(words) and (w := words[i]) is not None and _assignment(w):
                name, _, value = w.partition("=")
                env[name] = _text(value)
                i += 1
        elif word.startswith("--export=") or (word == "--export" and i < len(words)):
            spec = word[9:] if word.startswith("--export=") else (words[i] or "")
            i += 0 if word.startswith("--export=") else 1
            items = spec.split(",")
            if "ALL" not in items:
                problem(f"srun --export={spec[:60]} passes only some variables")
                env = {}
            for spec_item in items:
                if _assignment(spec_item):
                    name, _, value = spec_item.partition("=")
                    env[name] = _text(value)
        elif docker and (word in ("-e", "--env") or word.startswith(("--env=", "-e="))):
            item: str | None = word.partition("=")[2]
            if not word.startswith(("--env=", "-e=")):
                item = words[i] if i < len(words) else None
                i += 1
            if item is None:
                problem("docker -e with a value known only at run time")
            elif "=" in item:
                name, _, value = item.partition("=")
                env[name] = _text(value)
            elif item in dict(capture.env):
                env[item] = dict(capture.env)[item]
        elif docker and word.startswith("--env-file"):
            problem(f"docker {word[:40]} passes variables from a file")
    before = words[index - 1] if index > 0 else None
    runs_bash = before is not None and posixpath.basename(before) == "bash"
    if docker:
        runs_bash = (
            any(
                w is not None
                and (
                    w
                    in ("--entrypoint=/bin/bash", "--entrypoint=bash", "--entrypoint=/usr/bin/bash")
                )
                for w in words
            )
            or runs_bash
        )
    if not runs_bash:
        problem(f"{script} is run by {before or 'an unknown word'!r}, not by bash SCRIPT")
    return env, problems


def _assignment(word: str) -> bool:
    name, sep, _ = word.partition("=")
    return bool(sep) and _NAME.fullmatch(name) is not None
