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

from collections.abc import Mapping

from pydantic import BaseModel, ConfigDict, Field

from provenance.evidence.bash.evaluator import (
    DEFAULT_LIMITS,
    Evaluation,
    Limits,
    RunContext,
    ServeCapture,
    evaluate_script,
)
from provenance.evidence.bash.values import Text, holes, render
from provenance.model.record import PartialMarker


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


def evaluate_launcher(
    script: str,
    path: str,
    env: Mapping[str, str],
    helpers: Mapping[str, str] | None = None,
    limits: Limits = DEFAULT_LIMITS,
    context: RunContext | None = None,
) -> LauncherResult:
    """Statically evaluate ``script`` for ``env``; see the module docstring.

    ``helpers`` maps a sourced file's path or basename (e.g. ``benchmark_lib.sh``)
    to its text, so the evaluator follows it instead of using built-in facts.
    ``context.inherited``: variables the runner launcher exports to the script;
    they reach ``env`` as the script leaves them.
    """
    evaluation = evaluate_script(script, path, env, helpers=helpers, limits=limits, context=context)
    return launcher_result(evaluation)


def launcher_result(evaluation: Evaluation) -> LauncherResult:
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
    for word in serve.argv:
        markers.extend(_markers_of(word))
    env: dict[str, str] = {}
    for name, value in serve.env:
        markers.extend(_markers_of(value))
        env[name] = render(value)
    return LauncherResult(
        argv=[render(word) for word in serve.argv],
        env=env,
        partial=_ordered(markers),
        served=True,
        sourced=list(evaluation.sourced),
        heredocs=heredocs,
        serve_line=serve.line,
    )


def _markers_of(text: Text) -> list[PartialMarker]:
    return [hole.marker for hole in holes(text)]


def _ordered(markers: list[PartialMarker]) -> list[PartialMarker]:
    unique = list(dict.fromkeys(markers))
    return sorted(unique, key=lambda m: (m.line or 0, m.construct_name, m.detail))
