"""``evaluate_launcher``: the ``vllm serve`` command an InferenceX launcher builds.

Agreed API (see the team brief): given a launcher script's text, its repository
path and the environment the benchmark workflow gives it for one search-space
point, return the ``vllm serve`` argv the script would run, the environment it
exports to the engine, and what could not be evaluated. The script is parsed
and evaluated statically; it is never executed.

Conventions:

* ``argv`` starts with ``"vllm", "serve"``; words are after expansion, quote
  removal and word splitting. A word (or part of one) that could not be
  evaluated is rendered ``<unevaluated:CONSTRUCT>`` and a :class:`PartialMarker`
  for it is in ``partial``. ``argv`` is ``None`` when no serve command is reached.
* ``env`` holds only variables the launcher itself exports (``export X=...``,
  ``declare -x``) while the serve command runs, plus assignments prefixed to the
  command (``VAR=x vllm serve``, ``env VAR=x vllm serve``), plus the engine
  variables the runner launcher exports to it (``RunContext.inherited``) as the
  launcher leaves them. Variables the workflow passes in, or that a sourced
  helper exports, are not reported.
* ``partial`` lists holes that reach ``argv``/``env``, conditions that decide
  whether the serve command runs, and constructs that could change anything
  (``eval``, ``source`` of an unknown file, a ``vllm serve`` hidden in a string).
  Sorted by line. Empty means the argv is exact for this env. A launcher that
  reaches ``vllm serve`` more than once (a sweep loop) reports the first, with
  a ``multiple-serve`` marker. Paths that ``exit`` are not the evidence and are
  dropped without a marker.
* ``conditional=True``: a value that depends on a condition known only at run time
  (a host probe), whose paths the evaluator followed exactly, is no hole: ``conditions``
  lists those conditions and ``alternatives`` the argv and env of every combination of
  their outcomes (``argv``/``env`` then show such a value as ``<unevaluated:…>``,
  without a marker). Without it (the default) such a value is a hole, as any other.
  More than :data:`MAX_CONDITIONS` conditions, or a plain hole in the argv or env
  besides, leave them holes.
* ``sourced`` lists the paths the script sources, as evaluated.
* ``heredocs`` lists the here-documents on the evaluated path (command, file
  targets, raw body, and the content bash would feed: expanded with the
  variables in scope when the delimiter is unquoted; never run): ``python3 - <<EOF`` bodies that
  patch the engine and ``cat > f <<EOF`` config files are evidence a linker
  should flag.
* Errors: an unparsable script (tree-sitter-bash ``ERROR``/``MISSING`` node),
  text the parser cannot safely read (NUL, lone surrogates, a character above
  U+00FF right after ``{``), or one exceeding the evaluation bounds (size,
  nesting, steps, loop iterations, call depth, value size), raises
  :class:`~provenance.errors.InputError` with path and line. Nothing else is
  raised for any input text.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from typing import Final

from pydantic import BaseModel, ConfigDict, Field

from provenance.evidence.bash.evaluator import (
    DEFAULT_LIMITS,
    Evaluation,
    Limits,
    RunContext,
    ServeCapture,
    evaluate_script,
)
from provenance.evidence.bash.values import (
    Decision,
    Text,
    Unknown,
    holes,
    plain_holes,
    render,
    resolve_text,
    text_decisions,
)
from provenance.model.record import PartialMarker, RuntimeCondition

#: Run-time conditions one serve command's values may depend on (2**N alternatives).
MAX_CONDITIONS: Final = 6


class Heredoc(BaseModel):
    """A here-document on the evaluated path (engine patch or generated config)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    path: str
    line: int
    command: list[str]
    targets: list[str]
    delimiter: str
    expands: bool
    body: str
    #: The body as bash feeds it (expanded when ``expands``); holes rendered
    #: ``<unevaluated:…>`` with their markers in ``content_partial``.
    content: str = ""
    content_partial: list[PartialMarker] = Field(default_factory=list)


class ServedAlternative(BaseModel):
    """The argv and env of one combination of the run-time conditions' outcomes
    (``outcomes``: one per :attr:`LauncherResult.conditions`, ``True``: it held)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    outcomes: tuple[bool, ...]
    argv: list[str]
    env: dict[str, str]


class LauncherResult(BaseModel):
    """What a launcher would serve for one env (see module docstring)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    argv: list[str] | None
    env: dict[str, str]
    partial: list[PartialMarker]
    served: bool
    sourced: list[str] = Field(default_factory=list)
    heredocs: list[Heredoc] = Field(default_factory=list)
    #: Line of the (first) ``vllm serve`` command, when one is reached.
    serve_line: int | None = None
    #: run-time conditions argv or env depend on (``conditional=True`` only)
    conditions: list[RuntimeCondition] = Field(default_factory=list)
    #: argv and env for every combination of :attr:`conditions`' outcomes
    alternatives: list[ServedAlternative] = Field(default_factory=list)


def evaluate_launcher(
    script: str,
    path: str,
    env: Mapping[str, str],
    helpers: Mapping[str, str] | None = None,
    limits: Limits = DEFAULT_LIMITS,
    context: RunContext | None = None,
    conditional: bool = False,
) -> LauncherResult:
    """Statically evaluate ``script`` for ``env``; see the module docstring.

    ``helpers`` maps a sourced file's path or basename (e.g. ``benchmark_lib.sh``)
    to its text, so the evaluator follows it instead of using built-in facts.
    ``context.inherited``: variables the runner launcher exports to the script;
    they reach ``env`` as the script leaves them.
    """
    evaluation = evaluate_script(script, path, env, helpers=helpers, limits=limits, context=context)
    return launcher_result(evaluation, conditional)


def launcher_result(evaluation: Evaluation, conditional: bool = False) -> LauncherResult:
    markers: list[PartialMarker] = list(evaluation.markers)
    heredocs = [
        Heredoc(
            path=h.path,
            line=h.line,
            command=list(h.command),
            targets=list(h.targets),
            delimiter=h.delimiter,
            expands=h.expands,
            body=h.body,
            content=render(h.content),
            content_partial=_ordered(_markers_of(h.content)),
        )
        for h in evaluation.heredocs
    ]
    if not evaluation.serves:
        return LauncherResult(
            argv=None,
            env={},
            partial=_ordered(markers),
            served=False,
            sourced=list(evaluation.sourced),
            heredocs=heredocs,
        )
    serve: ServeCapture = evaluation.serves[0]
    if len(evaluation.serves) > 1:
        lines = ", ".join(str(line) for line in sorted({s.line for s in evaluation.serves}))
        markers.append(
            PartialMarker(
                construct_name="multiple-serve",
                path=evaluation.path,
                line=evaluation.serves[1].line,
                detail=f"vllm serve reached {len(evaluation.serves)} times (line {lines}); "
                "argv is the first",
            )
        )
    markers.extend(serve.markers)
    words: list[Text] = list(serve.argv)
    values: dict[str, Text] = dict(serve.env)
    decisions = sorted(
        set().union(*map(text_decisions, [*words, *values.values()])), key=lambda d: d.number
    )
    unknown = any(h.choice is None for text in [*words, *values.values()] for h in holes(text))
    followed = conditional and len(decisions) <= MAX_CONDITIONS and not unknown
    if not followed:
        words = [plain_holes(word) for word in words]
        values = {name: plain_holes(value) for name, value in values.items()}
        decisions = []
    for text in [*words, *values.values()]:
        markers.extend(hole.marker for hole in holes(text) if hole.choice is None)
    env = {name: render(value) for name, value in values.items()}
    return LauncherResult(
        argv=[render(word) for word in serve.argv],
        env=env,
        partial=_ordered(markers),
        served=True,
        sourced=list(evaluation.sourced),
        heredocs=heredocs,
        serve_line=serve.line,
        conditions=[d.condition for d in decisions],
        alternatives=_alternatives(words, values, decisions),
    )


def _alternatives(
    words: list[Text], values: Mapping[str, Text], decisions: list[Decision]
) -> list[ServedAlternative]:
    """The argv and env on each combination of the decisions' outcomes (none: no
    alternatives). An env value that is a variable unset on a path is absent there."""
    if not decisions:
        return []
    out = []
    for outcomes in itertools.product((True, False), repeat=len(decisions)):
        taken = dict(zip(decisions, outcomes, strict=True))
        env: dict[str, str] = {}
        for name, value in values.items():
            single = value[0] if len(value) == 1 else None
            if isinstance(single, Unknown) and single.choice is not None:
                resolved = single.choice.resolve(taken)
                if resolved is not None:
                    env[name] = resolved
            else:
                env[name] = resolve_text(value, taken)
        argv = [resolve_text(word, taken) for word in words]
        out.append(ServedAlternative(outcomes=outcomes, argv=argv, env=env))
    return out


def _markers_of(text: Text) -> list[PartialMarker]:
    return [hole.marker for hole in holes(text)]


def _ordered(markers: list[PartialMarker]) -> list[PartialMarker]:
    unique = list(dict.fromkeys(markers))
    return sorted(unique, key=lambda m: (m.line or 0, m.construct_name, m.detail))
