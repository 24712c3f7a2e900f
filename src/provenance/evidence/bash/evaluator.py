"""Static (never executing) evaluation of a bash launcher script.

The evaluator walks the tree-sitter syntax tree of a script with a symbolic
shell state (variables, arrays, functions, positional parameters, exit status)
seeded from the environment the benchmark workflow gives the launcher. It
evaluates what bash would compute — assignments, ``export``/``local``/
``declare``, ``if``/``elif``/``case`` on ``[ ]``/``[[ ]]``/``(( ))`` tests,
arithmetic, parameter expansions, arrays and associative maps, quoting and
word splitting, functions defined in the script, bounded loops — and records
every ``vllm serve`` command it reaches, with the exported environment in
scope. Nothing is ever run: no subprocess, no ``eval``, no file access.

What it cannot evaluate becomes a hole (:class:`~.values.Unknown`) carrying a
:class:`PartialMarker` (construct, path, line). Holes propagate through later
expansions and are reported only when they reach the serve command line or
its environment — a ``$(ls ...)`` in a condition whose branches do the same
thing costs nothing. When a condition is unknown both branches are evaluated
and their states joined: a variable equal in both keeps its value, one that
differs becomes a hole naming the condition. A branch that ``exit``s is
dropped (the evidence is the run that reached the serve command). Loops are
unrolled while their iteration is known (word list, condition); a loop whose
iterations cannot be followed exactly (unknown words or condition, or a
``break``/``continue`` under an unknown condition) is not run: the variables it
and the functions it calls assign become holes, and serve commands in its body
are reported with a ``loop`` marker. ``return`` under an unknown condition
joins the returning path at the end of the function.

Parts of a command that are data, not code, are recorded: here-documents
(``heredocs``) and sourced paths (``sourced``). ``source`` of a helper is
followed only when its text is passed in (``helpers``); ``benchmark_lib.sh``
is otherwise replaced by the facts in :mod:`.benchmark_lib`.

Bounded: a step budget, an iteration cap, a call-depth cap and a cap on the
size of any value; exceeding one raises :class:`~provenance.errors.InputError`
naming the file and line.

Why one module (about 2,700 lines): it is one tree walk over one symbolic shell
state. Every node handler reads and writes the same state (variables, functions,
positional parameters, budget, holes) and calls back into the walk for its
children, so a split by construct would pass that state across modules as a
public interface that exists only for this walk. What does not need the state is
already a module of its own: values (:mod:`.values`), arithmetic (:mod:`.arith`),
glob patterns (:mod:`.patterns`), the parser binding (:mod:`.syntax`) and the
benchmark library's facts (:mod:`.benchmark_lib`).
"""

from __future__ import annotations

import contextlib
import posixpath
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import Final, Literal

from provenance.errors import InputError
from provenance.evidence.bash import benchmark_lib, hazards
from provenance.evidence.bash.arith import ArithmeticEvaluator, ArithUnknown
from provenance.evidence.bash.patterns import glob_match, remove_affix, substitute
from provenance.evidence.bash.resolution import CONSTRUCT as REDEFINITION
from provenance.evidence.bash.resolution import redefinitions
from provenance.evidence.bash.syntax import (
    Node,
    ParsedScript,
    descendants,
    line_of,
    node_text,
    parse_script,
)
from provenance.evidence.bash.values import (
    EMPTY,
    FIELD_BREAK,
    QUOTED_EMPTY,
    Alternative,
    Choice,
    Decision,
    Expanded,
    Piece,
    Segment,
    Text,
    Unknown,
    Var,
    concat,
    first_hole,
    known,
    pieces_text,
    render,
    split_fields,
    text_length,
    text_of,
    unknown_text,
)
from provenance.model.record import PartialMarker, RuntimeCondition


@dataclass(frozen=True)
class Limits:
    """Bounds that make evaluation terminate quickly on any input."""

    max_steps: int = 300_000
    max_value_chars: int = 1_000_000
    max_array_items: int = 100_000
    max_loop_iterations: int = 10_000
    max_call_depth: int = 24
    max_source_depth: int = 4


DEFAULT_LIMITS: Final = Limits()


@dataclass(frozen=True)
class RunContext:
    """What is known of the machine a script runs on, beyond its environment.

    ``opaque``: names the machine's environment may set (a value never guessed:
    each is a hole when ``env`` does not give it). ``inherited``: variables
    the script's caller exports to it on top of ``env``. ``files``: whether a path
    relative to the working directory is a regular file (None: not known), for
    ``-f``/``-e`` tests; without it every file test is known only at run time.
    """

    opaque: frozenset[str] = frozenset()
    files: Callable[[str], bool | None] | None = None
    #: exported to the script by what runs it (the runner launcher), reported with
    #: the script's own exports (:attr:`ServeCapture.env`) unless the script changes them
    inherited: Mapping[str, str] = field(default_factory=dict)


# Commands that run another command given as their arguments.
_WRAPPERS: Final = frozenset(
    {"env", "exec", "nohup", "numactl", "time", "timeout", "stdbuf", "taskset", "nice"}
    | {"ionice", "setsid", "srun", "sudo", "chrt", "command"}
)
# Builtins that cannot change shell variables and succeed.
_NO_EFFECT: Final = frozenset({"echo", "printf", "umask", "disown"})
# Builtins that cannot change shell variables; their status is known only at run time.
_NO_EFFECT_STATUS_UNKNOWN: Final = frozenset(
    {"cd", "pushd", "popd", "wait", "sleep", "ulimit", "hash", "type", "which", "kill", "jobs"}
)
_STATUS_TRUE: Final = frozenset({":", "true"})

StatusValue = bool | Unknown


@dataclass(frozen=True)
class ServeCapture:
    """One ``vllm serve`` command reached by the evaluation, or (``kind="recorded"``)
    one command whose name the caller asked to record (``evaluate_script(record=...)``).

    Both kinds travel in one stream so that branches join them alike: a capture
    reached on one side of a condition known only at run time carries that
    condition's marker; words that differ between the sides become holes.
    """

    argv: tuple[Text, ...]
    env: tuple[tuple[str, Text], ...]
    line: int
    markers: frozenset[PartialMarker] = frozenset()
    kind: Literal["serve", "recorded"] = "serve"
    #: evaluation steps taken when it was reached (the most over joined branches)
    step: int = 0


@dataclass
class FunctionDef:
    body: Node
    from_script: bool
    path: str


@dataclass
class State:
    """The symbolic shell state along one path."""

    vars: dict[str, Var]
    functions: dict[str, FunctionDef | None]
    positional: tuple[Text, ...] | Unknown = ()
    frames: list[dict[str, Var | None]] = field(default_factory=list)
    status: StatusValue = True
    exited: bool = False
    returning: bool = False
    # Join of the paths that already returned from the current function
    # under a condition known only at run time (joined at the function's end).
    pending_return: State | None = None
    serves: tuple[ServeCapture, ...] = ()

    def copy(self) -> State:
        return State(
            vars=dict(self.vars),
            functions=dict(self.functions),
            positional=self.positional,
            frames=[dict(frame) for frame in self.frames],
            status=self.status,
            exited=self.exited,
            returning=self.returning,
            pending_return=self.pending_return,
            serves=self.serves,
        )


class _ExitSignal(Exception):  # noqa: N818 - control flow, not an error
    pass


class _ReturnSignal(Exception):  # noqa: N818 - control flow, not an error
    pass


class _LoopControlSignal(Exception):  # noqa: N818 - control flow, not an error
    def __init__(self, kind: str, levels: int) -> None:
        super().__init__(kind)
        self.kind = kind
        self.levels = levels


class _UnevaluableSignal(Exception):  # noqa: N818 - control flow, not an error
    """Raised inside a loop body that cannot be followed exactly."""

    def __init__(self, marker: PartialMarker) -> None:
        super().__init__(marker.detail)
        self.marker = marker


@dataclass
class Evaluation:
    """Everything the evaluation found."""

    path: str
    serves: tuple[ServeCapture, ...]
    markers: list[PartialMarker]
    sourced: list[str]
    final: State
    heredocs: list[HeredocCapture] = field(default_factory=list)
    #: the commands named in ``record`` that the evaluation reached, in order
    recorded: tuple[ServeCapture, ...] = ()
    #: (path, start byte) of every statement run → the step it first ran at
    executed: Mapping[tuple[str, int], int] = field(default_factory=dict)


MAX_HEREDOC_CHARS: Final = 65_536


@dataclass(frozen=True)
class HeredocCapture:
    """A here-document the script feeds to a command (never run, never expanded).

    ``python3 - <<EOF`` bodies that edit installed engine files are engine
    patches; ``cat > file <<EOF`` bodies are config files an engine reads.
    """

    path: str
    line: int
    command: tuple[str, ...]
    targets: tuple[str, ...]
    delimiter: str
    expands: bool  # unquoted delimiter: bash would expand $... in the body
    body: str
    # The body as bash would feed it: expanded with the state at the redirect
    # when ``expands`` (holes for what cannot be proved), else the body itself.
    content: Text = ()


class Evaluator:
    """Evaluate one parsed script. Use :func:`evaluate_script` rather than this class."""

    def __init__(
        self,
        parsed: ParsedScript,
        env: Mapping[str, str],
        helpers: Mapping[str, str] | None = None,
        limits: Limits = DEFAULT_LIMITS,
        record: frozenset[str] = frozenset(),
        context: RunContext | None = None,
    ) -> None:
        self.parsed = parsed
        self.record = record
        self.context = context or RunContext()
        #: (path, start byte) of each statement run → the step it first ran at
        self.executed: dict[tuple[str, int], int] = {}
        self.path = parsed.path
        self.env = env
        self.helpers = dict(helpers or {})
        self.limits = limits
        self.markers: list[PartialMarker] = []
        self.sourced: list[str] = []
        self.heredocs: list[HeredocCapture] = []
        self.steps = 0
        self.call_depth = 0
        self.source_depth = 0
        self.fork_depth = 0
        self.loop_bases: list[int] = []
        #: run-time conditions evaluated so far (numbers their :class:`Decision`)
        self.decisions = 0
        self.in_script = True
        self.current_line = 1
        #: line of a trap on a signal (INT, TERM, ...) whose action the evaluator does not run
        self.signal_trap_line: int | None = None

    # ------------------------------------------------------------------ helpers

    def marker(self, construct: str, node: Node | None, detail: str = "") -> PartialMarker:
        line = line_of(node) if node is not None else self.current_line
        return PartialMarker(
            construct_name=construct, path=self.path, line=line, detail=detail[:200]
        )

    def hole(self, construct: str, node: Node | None, detail: str = "") -> Text:
        return unknown_text(self.marker(construct, node, detail))

    def global_marker(self, construct: str, node: Node | None, detail: str = "") -> None:
        mark = self.marker(construct, node, detail)
        if mark not in self.markers:
            self.markers.append(mark)

    def step(self, node: Node) -> None:
        self.steps += 1
        self.current_line = line_of(node)
        if self.steps > self.limits.max_steps:
            raise InputError(
                f"static evaluation exceeded {self.limits.max_steps} steps",
                path=self.path,
                line=line_of(node),
                hint="the script loops or recurses too much to evaluate statically",
            )

    def check_size(self, text: Text, node: Node | None) -> Text:
        if text_length(text) > self.limits.max_value_chars:
            raise InputError(
                f"a value grows beyond {self.limits.max_value_chars} characters",
                path=self.path,
                line=line_of(node) if node is not None else self.current_line,
            )
        return text

    # -------------------------------------------------------------------- entry

    def run(self) -> Evaluation:
        state = State(vars={}, functions={})
        for name in sorted(self.context.opaque - self.env.keys()):
            marker = PartialMarker(
                construct_name="environment",
                path=self.path,
                detail=f"{name} comes from the machine's environment",
            )
            state.vars[name] = Var(unknown_text(marker), exported=True)
        for name, value in self.env.items():
            state.vars[name] = Var(text_of(str(value)), exported=True)
        for name, value in self.context.inherited.items():
            state.vars[name] = Var(text_of(value), exported=True, exported_by_script=True)
        state.vars["BASH_SOURCE"] = Var(((0, text_of(self.path)),), kind="indexed")
        try:
            self.exec_block(self.parsed.root.children, state)
        except _ExitSignal:
            state.exited = True
        except _ReturnSignal:
            state.returning = True
        except _LoopControlSignal:
            pass
        except RecursionError as exc:
            raise InputError(
                "script nests too deeply to evaluate", path=self.path, line=self.current_line
            ) from exc
        if state.pending_return is not None:
            state.serves = merge_serves(state.pending_return.serves, state.serves, None)
        return Evaluation(
            path=self.path,
            serves=tuple(c for c in state.serves if c.kind == "serve"),
            recorded=tuple(c for c in state.serves if c.kind == "recorded"),
            markers=self.markers,
            sourced=self.sourced,
            heredocs=self.heredocs,
            final=state,
            executed=self.executed,
        )

    # --------------------------------------------------------------- statements

    def exec_block(self, nodes: list[Node], st: State) -> None:
        """Run a sequence of statements (children of program/do_group/{ }...)."""
        for i, node in enumerate(nodes):
            if not node.is_named or node.type in ("comment", "heredoc_body", "heredoc_end"):
                continue
            background = i + 1 < len(nodes) and nodes[i + 1].type == "&"
            if background:
                sub = st.copy()
                with contextlib.suppress(_ExitSignal, _ReturnSignal, _LoopControlSignal):
                    self.exec_node(node, sub)
                st.serves = sub.serves
                st.status = True
            else:
                self.exec_node(node, st)

    def exec_node(self, node: Node, st: State) -> None:
        self.step(node)
        self.executed.setdefault((self.path, node.start_byte), self.steps)
        for found in redefinitions(node):
            self.global_marker(REDEFINITION, found.node, found.detail)
        kind = node.type
        if kind == "command":
            self.exec_command(node, st)
        elif kind == "variable_assignment":
            self.assign_node(node, st, context="assign")
            st.status = True
        elif kind == "variable_assignments":
            for child in node.named_children:
                self.assign_node(child, st, context="assign")
            st.status = True
        elif kind == "declaration_command":
            self.exec_declaration(node, st)
        elif kind == "unset_command":
            self.exec_unset(node, st)
        elif kind == "test_command":
            st.status = self.eval_test_command(node, st)
        elif kind == "compound_statement":
            self.exec_compound(node, st)
        elif kind == "do_group":
            self.exec_block(node.children, st)
        elif kind == "subshell":
            sub = st.copy()
            with contextlib.suppress(_ExitSignal, _ReturnSignal, _LoopControlSignal):
                self.exec_block(node.children, sub)
            st.serves = sub.serves
            st.status = sub.status
        elif kind == "if_statement":
            self.exec_if(node, st)
        elif kind == "while_statement":
            self.exec_while(node, st)
        elif kind == "for_statement":
            self.exec_for(node, st)
        elif kind == "c_style_for_statement":
            self.exec_c_for(node, st)
        elif kind == "case_statement":
            self.exec_case(node, st)
        elif kind == "function_definition":
            self.define_function(node, st)
        elif kind == "pipeline":
            self.exec_pipeline(node, st)
        elif kind == "list":
            self.exec_list(node, st)
        elif kind == "negated_command":
            inner = [c for c in node.named_children]
            if inner:
                self.exec_node(inner[0], st)
            st.status = (not st.status) if isinstance(st.status, bool) else st.status
        elif kind == "redirected_statement":
            self.exec_redirected(node, st)
        elif kind in ("comment", "heredoc_body", "heredoc_end", "heredoc_start"):
            return
        else:
            self.global_marker("unsupported-syntax", node, f"statement type {kind}")
            st.status = Unknown(self.marker("unsupported-syntax", node, kind))

    def exec_compound(self, node: Node, st: State) -> None:
        first = node.children[0].type if node.children else ""
        if first == "((":
            inner = [c for c in node.children if c.type not in ("((", "))")]
            result = self.eval_arith_nodes(inner, st, node)
            st.status = result if isinstance(result, Unknown) else result != 0
            return
        self.exec_block(node.children, st)

    def exec_redirected(self, node: Node, st: State) -> None:
        body = node.child_by_field_name("body")
        for child in node.named_children:
            if child.type == "heredoc_redirect":
                self.record_heredoc(node, body, child, st)
                # Heredoc bodies are data for the command; a pipeline inside the
                # redirect node (``cat <<EOF | tee f``) still runs.
                for sub in child.named_children:
                    if sub.type in ("pipeline", "list", "command"):
                        self.exec_node(sub, st)
        if body is not None:
            self.exec_node(body, st)

    def record_heredoc(self, node: Node, body: Node | None, redirect: Node, st: State) -> None:
        start = next((c for c in redirect.children if c.type == "heredoc_start"), None)
        text = next((c for c in redirect.children if c.type == "heredoc_body"), None)
        delimiter = node_text(start) if start is not None else ""
        command: tuple[str, ...] = ()
        if body is not None and body.type == "command":
            words = self.expand_fields(self.command_words(body), st.copy())
            command = tuple(render(w) for w in words[:32])
        targets = tuple(
            render(self.expand_text(dest, st.copy()))
            for c in node.named_children
            if c.type == "file_redirect" and (dest := c.child_by_field_name("destination"))
        )
        if len(self.heredocs) < 256:
            self.heredocs.append(
                HeredocCapture(
                    path=self.path,
                    line=line_of(redirect),
                    command=command,
                    targets=targets,
                    delimiter=delimiter.strip("'\""),
                    expands=not any(q in delimiter for q in "'\"\\"),
                    body=(node_text(text) if text is not None else "")[:MAX_HEREDOC_CHARS],
                    content=self.heredoc_content(text, delimiter, st.copy()),
                )
            )

    def heredoc_content(self, text: Node | None, delimiter: str, st: State) -> Text:
        """A here-document body as bash expands it: no splitting, no globbing.

        A quoted delimiter leaves the body literal. Otherwise parameter,
        arithmetic and command substitutions are expanded (quoted context) and
        ``\\`` escapes only ``$``, backquote, ``\\`` and newline, as in bash.
        Backquoted commands (left unparsed in a body) become holes.
        """
        if text is None:
            return ()
        if any(q in delimiter for q in "'\"\\"):
            return text_of(node_text(text)[:MAX_HEREDOC_CHARS])
        raw = text.text or b""
        base = text.start_byte
        pieces: Expanded = []

        def literal(chunk: str) -> None:
            plain = _unescape_heredoc(chunk)
            if plain is None:
                pieces.append(Piece(Unknown(self.marker("backticks", text, chunk[:60])), True))
            else:
                pieces.append(Piece(plain, True))

        cursor = 0
        for child in text.children:
            start, end = child.start_byte - base, child.end_byte - base
            if start > cursor:
                literal(raw[cursor:start].decode("utf-8", "replace"))
            cursor = max(cursor, end)
            if child.type == "heredoc_content":
                literal(node_text(child))
            else:
                pieces.extend(self.expand(child, st, quoted=True))
        if cursor < len(raw):
            literal(raw[cursor:].decode("utf-8", "replace"))
        return self.check_size(pieces_text(pieces), text)

    def exec_pipeline(self, node: Node, st: State) -> None:
        parts = [c for c in node.named_children]
        pure = self.pure_grep_pipeline(parts, st)
        if pure is not None:
            st.status = pure
            return
        status: StatusValue = True
        for part in parts:
            sub = st.copy()
            with contextlib.suppress(_ExitSignal, _ReturnSignal, _LoopControlSignal):
                self.exec_node(part, sub)
            st.serves = sub.serves
            status = sub.status
        st.status = status

    def pure_grep_pipeline(self, parts: list[Node], st: State) -> bool | None:
        """``printf ... | grep -q[xF] -- WORD`` (a membership test), computed without running it."""
        if len(parts) != 2 or any(p.type != "command" for p in parts):
            return None
        words = [self.expand_fields(self.command_words(p), st) for p in parts]
        producer, grep = words
        if not producer or not grep or known(grep[0]) != "grep":
            return None
        head = known(producer[0])
        if head not in ("printf", "echo"):
            return None
        output = self.pure_command(head, producer[1:], parts[0], "command-substitution")
        text = known(output)
        if text is None:
            return None
        options: set[str] = set()
        rest = [known(w) for w in grep[1:]]
        if any(w is None for w in rest):
            return None
        args = [w for w in rest if w is not None]
        while args and args[0].startswith("-") and args[0] != "-":
            flag = args.pop(0)
            if flag == "--":
                break
            options.update(flag[1:])
        if len(args) != 1 or not options <= {"q", "x", "F"} or "q" not in options:
            return None
        pattern = args[0]
        if "F" not in options and re.search(r"[.\[\]*^$\\]", pattern):
            return None
        lines = text.split("\n")
        if "x" in options:
            return pattern in lines
        return any(pattern in line for line in lines)

    def command_words(self, node: Node) -> list[Node]:
        name_node = node.child_by_field_name("name")
        if name_node is None:
            return []
        return [name_node] + [
            c for i, c in enumerate(node.children) if node.field_name_for_child(i) == "argument"
        ]

    def exec_list(self, node: Node, st: State) -> None:
        children = node.children
        left = children[0]
        self.exec_node(left, st)
        i = 1
        while i + 1 < len(children):
            op = children[i].type
            right = children[i + 1]
            i += 2
            status = st.status
            run_right: bool | None
            if isinstance(status, Unknown):
                run_right = None
            elif op == "&&":
                run_right = status
            else:
                run_right = not status
            if run_right is True:
                self.exec_node(right, st)
            elif run_right is None:
                assert isinstance(status, Unknown)
                taken = self.branch(st, _runner(self.exec_node, right))
                # a status joined from earlier run-time conditions (``a && b || c``) is
                # no new run-time fact: its paths are not independent alternatives
                condition = None if status.derived else self.decision(children[: i - 2])
                if op == "&&":
                    self.join_into(st, taken, st.copy(), status.marker, condition)
                else:
                    self.join_into(st, st.copy(), taken, status.marker, condition)

    # ------------------------------------------------------------------ branches

    def branch(self, st: State, body: Callable[[State], None]) -> State:
        sub = st.copy()
        self.fork_depth += 1
        try:
            body(sub)
        except _ExitSignal:
            sub.exited = True
        except _ReturnSignal:
            sub.returning = True
        finally:
            self.fork_depth -= 1
        return sub

    def decision(self, conditions: list[Node], text: str | None = None) -> Decision:
        """A new evaluation of the run-time condition written by ``conditions`` (``text``:
        how to show it, when not their text)."""
        self.decisions += 1
        words = [c for c in conditions if c.type not in (";", ";;", "&", "\n", "comment")]
        if text is None:
            text = " ".join(node_text(c) for c in words).strip()
        line = line_of(words[0]) if words else self.current_line
        return Decision(
            self.decisions, RuntimeCondition(text=text[:200], path=self.path, line=line)
        )

    def join_into(
        self,
        st: State,
        a: State,
        b: State,
        marker: PartialMarker,
        decision: Decision | None = None,
    ) -> None:
        """Join ``a`` (the condition held) and ``b`` (it did not) into ``st``."""
        joined = join_states(a, b, marker, decision)
        st.vars = joined.vars
        st.functions = joined.functions
        st.positional = joined.positional
        st.frames = joined.frames
        st.status = joined.status
        st.exited = joined.exited
        st.returning = joined.returning
        st.pending_return = joined.pending_return
        st.serves = joined.serves
        if st.exited:
            raise _ExitSignal
        if st.returning:
            raise _ReturnSignal

    def exec_if(self, node: Node, st: State) -> None:
        conditions = _if_conditions(node)
        body = _if_body(node)
        clauses = [c for c in node.named_children if c.type in ("elif_clause", "else_clause")]
        self.exec_conditional_chain(conditions, body, clauses, st)

    def exec_conditional_chain(
        self, conditions: list[Node], body: list[Node], rest: list[Node], st: State
    ) -> None:
        for cond in conditions:
            if cond.is_named:
                self.exec_node(cond, st)
        status = st.status
        if status is True:
            self.exec_block(body, st)
            return
        if status is False:
            self.exec_rest(rest, st)
            return
        assert isinstance(status, Unknown)
        taken = self.branch(st, lambda s: self.exec_block(body, s))
        other = self.branch(st, lambda s: self.exec_rest(rest, s))
        decision = None if status.derived else self.decision(conditions)
        self.join_into(st, taken, other, status.marker, decision)

    def exec_rest(self, rest: list[Node], st: State) -> None:
        if not rest:
            st.status = True
            return
        clause = rest[0]
        if clause.type == "else_clause":
            self.exec_block(clause.children[1:], st)
            return
        conditions = _if_conditions(clause)
        body = _if_body(clause)
        self.exec_conditional_chain(conditions, body, rest[1:], st)

    def exec_case(self, node: Node, st: State) -> None:
        value_node = node.child_by_field_name("value")
        subject = self.expand_text(value_node, st) if value_node is not None else EMPTY
        items = [c for c in node.named_children if c.type == "case_item"]
        self.exec_case_items(subject, items, st, node)

    def exec_case_items(self, subject: Text, items: list[Node], st: State, node: Node) -> None:
        if not items:
            st.status = True
            return
        item = items[0]
        patterns: list[Node] = []
        body: list[Node] = []
        seen_paren = False
        for i, child in enumerate(item.children):
            if child.type == ")" and not seen_paren:
                seen_paren = True
                continue
            if not seen_paren:
                if item.field_name_for_child(i) == "value" or child.is_named:
                    patterns.append(child)
            elif child.type in (";;", ";&", ";;&"):
                if child.type != ";;":
                    self.global_marker("case", child, f"case fall-through {child.type}")
            else:
                body.append(child)
        matched = self.case_match(subject, patterns, st, item)
        if matched is True:
            self.exec_block(body, st)
            return
        if matched is False:
            self.exec_case_items(subject, items[1:], st, node)
            return
        assert isinstance(matched, Unknown)
        taken = self.branch(st, lambda s: self.exec_block(body, s))
        other = self.branch(st, lambda s: self.exec_case_items(subject, items[1:], s, node))
        value = node.child_by_field_name("value")
        shown = " | ".join(node_text(p) for p in patterns if p.is_named)
        case = f"case {node_text(value) if value is not None else ''} in {shown})"
        self.join_into(st, taken, other, matched.marker, self.decision(patterns, case))

    def case_match(self, subject: Text, patterns: list[Node], st: State, item: Node) -> StatusValue:
        subject_str = known(subject)
        undecided: Unknown | None = None
        for pattern in patterns:
            pieces = [p for p in self.expand(pattern, st, quoted=False) if isinstance(p, Piece)]
            if subject_str is None:
                hole = first_hole(subject)
                assert hole is not None
                return hole
            result = glob_match(subject_str, pieces)
            if result is True:
                return True
            if result is None:
                undecided = Unknown(self.marker("case", item, "pattern with a hole"))
        return undecided if undecided is not None else False

    # --------------------------------------------------------------------- loops

    def exec_while(self, node: Node, st: State) -> None:
        is_until = node.children[0].type == "until"
        body = node.child_by_field_name("body")
        conditions = [
            c for i, c in enumerate(node.children) if node.field_name_for_child(i) == "condition"
        ]
        loop_marker = self.marker("loop", node, "until loop" if is_until else "while loop")

        def run(sub: State) -> None:
            iterations = 0
            while True:
                for cond in conditions:
                    if cond.is_named:
                        self.exec_node(cond, sub)
                status = sub.status
                if isinstance(status, Unknown):
                    raise _UnevaluableSignal(status.marker)
                if status == is_until:
                    break
                iterations += 1
                if iterations > self.limits.max_loop_iterations:
                    raise InputError(
                        f"loop runs more than {self.limits.max_loop_iterations} iterations",
                        path=self.path,
                        line=line_of(node),
                    )
                if body is not None and self.run_loop_body(body, sub):
                    break
            sub.status = True

        self.run_loop(node, body, st, run, loop_marker)

    def exec_for(self, node: Node, st: State) -> None:
        var_node = node.child_by_field_name("variable")
        body = node.child_by_field_name("body")
        loop_marker = self.marker("loop", node, "for loop")
        value_nodes = [
            c for i, c in enumerate(node.children) if node.field_name_for_child(i) == "value"
        ]
        name = node_text(var_node) if var_node is not None else ""

        def run(sub: State) -> None:
            if value_nodes:
                words = self.expand_fields(value_nodes, sub)
            elif isinstance(sub.positional, Unknown):
                raise _UnevaluableSignal(sub.positional.marker)
            else:
                words = list(sub.positional)
            if len(words) > self.limits.max_loop_iterations:
                raise InputError("for loop over too many words", path=self.path, line=line_of(node))
            for word in words:
                hole = first_hole(word)
                if hole is not None:
                    raise _UnevaluableSignal(hole.marker)
                self.set_scalar(sub, name, word, node)
                if body is not None and self.run_loop_body(body, sub):
                    break
            sub.status = True

        self.run_loop(node, body, st, run, loop_marker)

    def exec_c_for(self, node: Node, st: State) -> None:
        body = node.child_by_field_name("body")
        loop_marker = self.marker("loop", node, "arithmetic for loop")
        sections: list[list[Node]] = [[]]
        for child in node.children:
            if child.type in ("for", "((", "do_group", "compound_statement"):
                continue
            if child.type == "))":
                break
            if child.type == ";":
                sections.append([])
            else:
                sections[-1].append(child)
        while len(sections) < 3:
            sections.append([])

        def arith(parts: list[Node], sub: State, default: int) -> int:
            if not parts:
                return default
            result: int | Unknown = default
            for part in parts:
                if part.type == "variable_assignment":
                    self.assign_node(part, sub, context="arith")
                    continue
                result = self.eval_arith_nodes([part], sub, part)
            if isinstance(result, Unknown):
                raise _UnevaluableSignal(result.marker)
            return result

        def run(sub: State) -> None:
            arith(sections[0], sub, 0)
            iterations = 0
            while arith(sections[1], sub, 1) != 0:
                iterations += 1
                if iterations > self.limits.max_loop_iterations:
                    raise InputError(
                        f"loop runs more than {self.limits.max_loop_iterations} iterations",
                        path=self.path,
                        line=line_of(node),
                    )
                if body is not None and self.run_loop_body(body, sub):
                    break
                arith(sections[2], sub, 0)
            sub.status = True

        self.run_loop(node, body, st, run, loop_marker)

    def run_loop_body(self, body: Node, sub: State) -> bool:
        """Run one iteration; True when the loop breaks."""
        try:
            self.exec_node(body, sub)
        except _LoopControlSignal as ctl:
            if ctl.levels > 1:
                raise _UnevaluableSignal(
                    self.marker("loop", body, "multi-level break/continue")
                ) from ctl
            return ctl.kind == "break"
        return False

    def run_loop(
        self,
        node: Node,
        body: Node | None,
        st: State,
        run: Callable[[State], None],
        loop_marker: PartialMarker,
    ) -> None:
        """Unroll a loop while its iteration is known; otherwise havoc what it assigns."""
        sub = st.copy()
        failure: _UnevaluableSignal | None = None
        self.loop_bases.append(self.fork_depth)
        try:
            run(sub)
        except _UnevaluableSignal as exc:
            failure = exc
        finally:
            self.loop_bases.pop()
        if failure is None:
            _copy_state(sub, st)
            return
        why = loop_marker.model_copy(
            update={"detail": f"{loop_marker.detail}: {failure.marker.detail}"[:200]}
        )
        self.havoc_loop(node, body, st, why)

    def havoc_loop(self, node: Node, body: Node | None, st: State, marker: PartialMarker) -> None:
        hole = Unknown(marker)
        for name in sorted(_assigned_names_with_calls(node, st.functions)):
            old = st.vars.get(name)
            st.vars[name] = Var(
                hole,
                exported=old.exported if old else False,
                exported_by_script=old.exported_by_script if old else False,
            )
        # Serve commands inside the loop body are still reported, marked by the loop.
        if body is not None:
            probe = st.copy()
            with contextlib.suppress(
                _ExitSignal, _ReturnSignal, _LoopControlSignal, _UnevaluableSignal
            ):
                self.exec_node(body, probe)
            new = (
                probe.serves[len(st.serves) :]
                if probe.serves[: len(st.serves)] == st.serves
                else ()
            )
            st.serves = st.serves + tuple(replace(s, markers=s.markers | {marker}) for s in new)
        st.status = hole

    # ---------------------------------------------------------------- functions

    def define_function(self, node: Node, st: State) -> None:
        name_node = node.child_by_field_name("name")
        body = node.child_by_field_name("body")
        if name_node is None or body is None:
            return
        st.functions[node_text(name_node)] = FunctionDef(
            body, from_script=self.in_script, path=self.path
        )
        st.status = True

    def call_function(
        self, name: str, fn: FunctionDef, args: list[Text], st: State, node: Node
    ) -> None:
        if self.call_depth >= self.limits.max_call_depth:
            raise InputError(
                f"function calls nest deeper than {self.limits.max_call_depth}",
                path=self.path,
                line=line_of(node),
            )
        saved_positional = st.positional
        saved_in_script = self.in_script
        st.positional = tuple(args)
        st.frames.append({})
        self.call_depth += 1
        self.in_script = fn.from_script
        outer_pending = st.pending_return
        st.pending_return = None
        saved_path = self.path
        self.path = fn.path
        try:
            self.exec_node(fn.body, st)
        except _ReturnSignal:
            pass
        finally:
            self.call_depth -= 1
            self.in_script = saved_in_script
            self.path = saved_path
        if st.pending_return is not None:
            pending = st.pending_return.copy()
            pending.returning = False
            pending.pending_return = None
            current = st.copy()
            current.returning = False
            current.pending_return = None
            merged = join_states(
                pending, current, self.marker("function", node, f"{name} returns early")
            )
            _copy_state(merged, st)
        st.returning = False
        st.pending_return = outer_pending
        frame = st.frames.pop() if st.frames else {}
        for var_name, saved in frame.items():
            if saved is None:
                st.vars.pop(var_name, None)
            else:
                st.vars[var_name] = saved
        st.positional = saved_positional

    # ----------------------------------------------------------------- commands

    def exec_command(self, node: Node, st: State) -> None:
        name_node = node.child_by_field_name("name")
        prefix = [c for c in node.named_children if c.type == "variable_assignment"]
        if name_node is None:
            for assignment in prefix:
                self.assign_node(assignment, st, context="assign")
            st.status = True
            return
        arg_nodes = [name_node] + [
            c for i, c in enumerate(node.children) if node.field_name_for_child(i) == "argument"
        ]
        words = self.expand_fields(arg_nodes, st)
        if self.capture_serve(words, prefix, st, node):
            if words and known(words[0]) == "exec":
                raise _ExitSignal  # ``exec vllm serve`` replaces the shell
            return
        if not words:
            st.status = True
            return
        head = known(words[0])
        if head is None:
            hole = first_hole(words[0])
            assert hole is not None
            st.status = hole
            return
        args = words[1:]
        fn = st.functions.get(head, False)
        if fn is None:
            self.global_marker("function", node, f"{head} is defined only on some paths")
            st.status = Unknown(self.marker("function", node, head))
            return
        if isinstance(fn, FunctionDef):
            # ``VAR=x f``: VAR is set and exported for the duration of the call.
            saved: dict[str, Var | None] = {}
            for assignment in prefix:
                name_node = assignment.child_by_field_name("name")
                if name_node is None or name_node.type != "variable_name":
                    continue
                name = node_text(name_node)
                saved.setdefault(name, st.vars.get(name))
                st.vars[name] = Var(
                    self.assignment_value(assignment, st),
                    exported=True,
                    exported_by_script=self.in_script,
                )
            try:
                self.call_function(head, fn, args, st, node)
            finally:
                for name, old in saved.items():
                    if old is None:
                        st.vars.pop(name, None)
                    else:
                        st.vars[name] = old
            return
        if head in self.record:
            env = {
                name: var.scalar()
                for name, var in st.vars.items()
                if var.exported and var.kind == "scalar" and var.value is not None
            }
            for assignment in prefix:
                name_node = assignment.child_by_field_name("name")
                if name_node is not None:
                    env[node_text(name_node)] = self.assignment_value(assignment, st)
            capture = ServeCapture(
                argv=tuple(words),
                env=tuple(sorted(env.items())),
                line=line_of(node),
                kind="recorded",
                step=self.steps,
            )
            st.serves = (*st.serves, capture)
        self.exec_builtin(head, args, st, node)

    def exec_builtin(self, head: str, args: list[Text], st: State, node: Node) -> None:
        if head in _STATUS_TRUE:
            st.status = True
        elif head == "false":
            st.status = False
        elif head in ("exit",):
            raise _ExitSignal
        elif head == "return":
            code = known(args[0]) if args else None
            if code is not None and code.strip().lstrip("-").isdigit():
                st.status = int(code) % 256 == 0
            elif args:
                st.status = Unknown(self.marker("function", node, "return with unknown status"))
            raise _ReturnSignal
        elif head in ("break", "continue"):
            levels = 1
            if args and known(args[0]) and str(known(args[0])).isdigit():
                levels = max(1, int(str(known(args[0]))))
            if not self.loop_bases:
                return
            if self.fork_depth > self.loop_bases[-1]:
                raise _UnevaluableSignal(
                    self.marker("loop", node, f"{head} under a condition known only at run time")
                )
            raise _LoopControlSignal(head, levels)
        elif head in ("source", "."):
            self.exec_source(args, st, node)
        elif head == "eval":
            self.global_marker("eval", node, "eval is never evaluated")
            st.status = Unknown(self.marker("eval", node))
        elif head == "test" or head == "[":
            words = [a for a in args]
            if head == "[" and words and known(words[-1]) == "]":
                words = words[:-1]
            st.status = self.posix_test(words, node)
        elif head == "shift":
            count = 1
            if args and (text := known(args[0])) and text.isdigit():
                count = int(text)
            if not isinstance(st.positional, Unknown):
                st.positional = st.positional[count:]
            st.status = True
        elif head == "set":
            self.exec_set(args, st, node)
        elif head == "shopt":
            self.shell_option(args, node, hazards.shopt_reason)
            st.status = True
        elif head == "trap":
            self.exec_trap(args, st, node)
        elif head == "kill" and self.signal_trap_line is not None and not st.serves:
            self.global_marker(
                hazards.TRAP,
                node,
                f"kill may signal the script, whose trap (line {self.signal_trap_line}) runs then",
            )
            st.status = Unknown(self.marker("command-status", node, "exit status of kill"))
        elif head == "let":
            for arg in args:
                result = self.eval_arith_text(arg, st, node)
                st.status = result if isinstance(result, Unknown) else result != 0
        elif head in ("read", "mapfile", "readarray", "getopts"):
            self.havoc_builtin_targets(head, args, st, node)
        elif head == "printf" and args and known(args[0]) == "-v":
            if len(args) > 1 and (target := known(args[1])):
                self.set_scalar(st, target, self.pure_printf(args[2:], node), node)
            st.status = True
        elif head in _NO_EFFECT:
            st.status = True
        elif head in _NO_EFFECT_STATUS_UNKNOWN:
            st.status = Unknown(self.marker("command-status", node, f"exit status of {head}"))
        elif head in benchmark_lib.FUNCTION_GLOBALS or head in benchmark_lib.STATUS_RULES:
            self.apply_lib_function(head, args, st, node)
        elif head == "exec":
            # ``exec`` with only redirections; a command after it was handled by capture_serve.
            st.status = True
        elif head in hazards.STATEFUL_BUILTINS or (
            head in ("command", "builtin") and self.runs_stateful_builtin(args)
        ):
            self.global_marker(
                hazards.BUILTIN, node, f"{head} reached in a form the evaluator does not follow"
            )
            st.status = Unknown(self.marker(hazards.BUILTIN, node, head))
        else:
            st.status = Unknown(self.marker("command-status", node, f"exit status of {head}"))

    def exec_set(self, args: list[Text], st: State, node: Node) -> None:
        self.shell_option(args, node, hazards.set_reason)
        plain = [known(a) for a in args]
        if plain[:1] == ["--"]:
            st.positional = tuple(args[1:])
        elif plain[:1] == ["-"]:
            st.positional = tuple(args[1:]) if len(args) > 1 else st.positional
        elif plain and plain[0] is not None and not plain[0].startswith(("-", "+")):
            st.positional = tuple(args)
        st.status = True

    def shell_option(
        self, args: list[Text], node: Node, rule: Callable[[list[str]], str | None]
    ) -> None:
        """``set``/``shopt``: a marker when an option changes what the evaluation models."""
        plain = [known(a) for a in args]
        if any(p is None for p in plain):
            self.global_marker(hazards.SHELL_OPTION, node, "option known only at run time")
            return
        reason = rule([p for p in plain if p is not None])
        if reason is not None:
            self.global_marker(hazards.SHELL_OPTION, node, reason)

    def exec_trap(self, args: list[Text], st: State, node: Node) -> None:
        """``trap``: actions that run inside the flow, or may serve, make the record partial.

        A trap on a signal whose action cannot run vllm matters only if the script
        signals itself before serving (``kill`` then: see :meth:`exec_builtin`).
        """
        st.status = True
        plain = [known(a) for a in args]
        if any(p is None for p in plain):
            self.global_marker(
                hazards.TRAP, node, "trap with an action or signal known at run time"
            )
            return
        settings = hazards.trap_settings([p for p in plain if p is not None])
        for signal, action in settings or ():
            if action is None:
                continue
            reason = hazards.trap_reason(
                signal, action, lambda code: hazards.may_run_vllm(code, self.function_bodies(st))
            )
            if reason is not None:
                self.global_marker(hazards.TRAP, node, reason)
            elif signal != "EXIT":
                self.signal_trap_line = line_of(node)

    def function_bodies(self, st: State) -> Callable[[str], list[Node]]:
        """Every body a function name may have: its current one and each one in the script."""

        def bodies(name: str) -> list[Node]:
            found = [
                body
                for c in descendants(self.parsed.root)
                if c.type == "function_definition"
                and (n := c.child_by_field_name("name")) is not None
                and node_text(n) == name
                and (body := c.child_by_field_name("body")) is not None
            ]
            current = st.functions.get(name)
            return [current.body, *found] if current is not None else found

        return bodies

    def runs_stateful_builtin(self, args: list[Text]) -> bool:
        """``command``/``builtin`` followed (after options) by a state-changing builtin."""
        for arg in args:
            text = known(arg)
            if text is None:
                return True
            if text.startswith("-") and text not in ("-", "--"):
                if "v" in text or "V" in text:
                    return False  # ``command -v NAME`` only looks the name up
                continue
            return text in hazards.STATEFUL_BUILTINS
        return False

    def havoc_builtin_targets(self, head: str, args: list[Text], st: State, node: Node) -> None:
        names = [known(a) for a in args]
        targets = [n for n in names if n and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", n)]
        if head == "getopts" and len(targets) >= 1:
            targets = targets[1:2]
        if not targets and head in ("read",):
            targets = ["REPLY"]
        if not targets and head in ("mapfile", "readarray"):
            targets = ["MAPFILE"]
        marker = self.marker(head, node, f"{head} reads input at run time")
        for name in targets:
            self.set_var(st, name, Var(Unknown(marker)), node)
        st.status = Unknown(marker)

    def apply_lib_function(self, head: str, args: list[Text], st: State, node: Node) -> None:
        marker = self.marker(
            "helper-function", node, f"{head} (benchmark_lib.sh) sets it at run time"
        )
        rule = benchmark_lib.STATUS_RULES.get(head)
        if rule is not None:
            status = self.lib_status(rule, args, st)
            if status == "exit":
                raise _ExitSignal
            st.status = (
                status
                if isinstance(status, bool)
                else Unknown(self.marker("command-status", node, f"exit status of {head}"))
            )
            return
        for name in benchmark_lib.FUNCTION_GLOBALS.get(head, ()):
            old = st.vars.get(name)
            st.vars[name] = Var(
                Unknown(marker),
                exported=old.exported if old else False,
                exported_by_script=old.exported_by_script if old else False,
            )
        st.status = Unknown(self.marker("command-status", node, f"exit status of {head}"))

    def lib_status(
        self,
        rule: Callable[[list[str], benchmark_lib.Lookup], benchmark_lib.Status],
        args: list[Text],
        st: State,
    ) -> benchmark_lib.Status:
        plain_args = [known(a) for a in args]
        if any(a is None for a in plain_args):
            return None

        class _HoleError(Exception):
            pass

        def lookup(name: str) -> str | None:
            var = st.vars.get(name)
            if var is None or not var.is_set:
                return None
            value = known(var.scalar())
            if value is None:
                raise _HoleError
            return value

        try:
            return rule([a for a in plain_args if a is not None], lookup)
        except _HoleError:
            return None

    def exec_source(self, args: list[Text], st: State, node: Node) -> None:
        if not args:
            st.status = False
            return
        target = known(args[0])
        if target is None:
            self.sourced.append("<unevaluated>")
            self.global_marker("source", node, "sourced path is not known statically")
            st.status = Unknown(self.marker("source", node))
            return
        self.sourced.append(target)
        base = posixpath.basename(target)
        helper = self.helpers.get(target, self.helpers.get(base))
        if helper is not None:
            if self.source_depth >= self.limits.max_source_depth:
                raise InputError(
                    "helpers source each other too deeply", path=self.path, line=line_of(node)
                )
            parsed = parse_script(helper, target)
            saved_in_script, saved_path = self.in_script, self.path
            saved_source = st.vars.get("BASH_SOURCE")
            st.vars["BASH_SOURCE"] = Var(
                ((0, text_of(target)), (1, text_of(self.path))), kind="indexed"
            )
            self.in_script = False
            self.path = target
            self.source_depth += 1
            try:
                self.exec_block(parsed.root.children, st)
            finally:
                self.source_depth -= 1
                self.in_script = saved_in_script
                self.path = saved_path
                if saved_source is not None:
                    st.vars["BASH_SOURCE"] = saved_source
            return
        if base == benchmark_lib.FILE_NAME:
            if benchmark_lib.is_agentic(st.vars, self.parsed.path) is None:
                marker = self.marker("helper-function", node, "agentic test of benchmark_lib.sh")
                self.set_var(st, "MAX_MODEL_LEN", Var(Unknown(marker)), node)
            if benchmark_lib.apply_top_level(st.vars, self.parsed.path):
                raise _ExitSignal
            st.status = True
            return
        self.global_marker("source", node, f"{target} is not followed")
        st.status = Unknown(self.marker("source", node, target))

    # ------------------------------------------------------------- vllm serve

    def capture_serve(self, words: list[Text], prefix: list[Node], st: State, node: Node) -> bool:
        index = _serve_index(words)
        if index is None:
            for word in words:
                text = known(word)
                if text is not None and re.search(r"\bvllm\s+serve\b", text):
                    self.global_marker(
                        "nested-command",
                        node,
                        "a vllm serve command inside a string is not evaluated",
                    )
            return False
        env: dict[str, Text] = {}
        for name, var in st.vars.items():
            if var.exported_by_script and var.kind == "scalar" and var.value is not None:
                # a variable's alternatives as they are: unset on a path, absent from env
                chosen = var.value if isinstance(var.value, Unknown) and var.choice else None
                env[name] = (chosen,) if chosen else self.scalar_value(var, name, node)
        for assignment in prefix:
            name_node = assignment.child_by_field_name("name")
            if name_node is None:
                continue
            env[node_text(name_node)] = self.assignment_value(assignment, st)
        for word in words[:index]:
            text = known(word)
            if text is not None and re.fullmatch(
                r"[A-Za-z_][A-Za-z0-9_]*=.*", text, flags=re.DOTALL
            ):
                key, _, value = text.partition("=")
                env[key] = text_of(value)
        argv = (text_of("vllm"), *words[index + 1 :])
        capture = ServeCapture(argv=argv, env=tuple(sorted(env.items())), line=line_of(node))
        st.serves = (*st.serves, capture)
        st.status = Unknown(self.marker("command-status", node, "exit status of vllm serve"))
        return True

    # -------------------------------------------------------------- assignment

    def exec_declaration(self, node: Node, st: State) -> None:
        keyword = node.children[0].type if node.children else "declare"
        flags: set[str] = set()
        for child in node.children[1:]:
            if child.type == "word":
                text = node_text(child)
                if text.startswith(("-", "+")):
                    flags.update(text[1:] if text.startswith("-") else ())
                    if text.startswith("+") and "x" in text:
                        flags.add("unexport")
                    if keyword == "export" and text.startswith("-") and "n" in text:
                        flags.add("unexport")
                    continue
            if "f" in flags or "F" in flags:
                continue  # functions, not variables: ``export -f`` is a resolution matter
            if child.type == "variable_assignment" or child.type == "variable_name":
                self.declare_one(keyword, flags, child, st, node)
            elif child.is_named and child.type not in ("word", "comment"):
                self.global_marker("declare", child, f"{keyword} with a computed name")
        st.status = True

    def declare_one(
        self, keyword: str, flags: set[str], child: Node, st: State, node: Node
    ) -> None:
        if child.type == "variable_assignment":
            name_node = child.child_by_field_name("name")
            name = node_text(name_node) if name_node is not None else ""
            if name_node is not None and name_node.type == "subscript":
                base = name_node.child_by_field_name("name")
                name = node_text(base) if base is not None else name
        else:
            name = node_text(child)
        local = keyword == "local" or (
            keyword in ("declare", "typeset") and bool(st.frames) and "g" not in flags
        )
        if local and st.frames and name not in st.frames[-1]:
            st.frames[-1][name] = st.vars.get(name)
            st.vars.pop(name, None)
        existing = st.vars.get(name)
        hazard = hazards.declare_reason(keyword, flags, name)
        if hazard is not None:
            construct, reason = hazard
            self.global_marker(construct, node, reason)
            self.set_var(st, name, Var(Unknown(self.marker(construct, node, reason))), node)
            return
        if "A" in flags and (existing is None or existing.kind != "assoc"):
            existing = Var((), kind="assoc", exported=existing.exported if existing else False)
            st.vars[name] = existing
        elif "a" in flags and (
            existing is None or (existing.kind == "scalar" and not existing.value)
        ):
            existing = Var((), kind="indexed", exported=existing.exported if existing else False)
            st.vars[name] = existing
        if child.type == "variable_assignment":
            self.assign_node(child, st, context="declare")
        elif existing is None and keyword in ("local", "declare", "typeset"):
            st.vars[name] = Var(EMPTY, exported=False)
        exporting = keyword == "export" or "x" in flags
        if "unexport" in flags:
            var = st.vars.get(name)
            if var is not None:
                st.vars[name] = replace(var, exported=False, exported_by_script=False)
        elif exporting:
            var = st.vars.get(name)
            if var is None:
                # ``export X`` on an unset X: remember the attribute; X stays unset.
                st.vars[name] = Var(None, exported=True, exported_by_script=self.in_script)
            else:
                st.vars[name] = replace(
                    var, exported=True, exported_by_script=var.exported_by_script or self.in_script
                )

    def exec_unset(self, node: Node, st: State) -> None:
        functions = False
        for child in node.named_children:
            text = node_text(child)
            if text.startswith("-"):
                functions = "f" in text
                continue
            if functions:
                st.functions.pop(text, None)
            else:
                st.vars.pop(text, None)
        st.status = True

    def assignment_value(self, node: Node, st: State) -> Text:
        value = node.child_by_field_name("value")
        if value is None:
            return EMPTY
        return self.expand_text(value, st)

    def assign_node(self, node: Node, st: State, context: str) -> None:
        name_node = node.child_by_field_name("name")
        if name_node is None:
            return
        value_node = node.child_by_field_name("value")
        append = any(c.type == "+=" for c in node.children)
        if name_node.type == "subscript":
            self.assign_subscript(name_node, value_node, append, st, node)
            return
        name = node_text(name_node)
        if value_node is not None and value_node.type == "array":
            self.assign_array(name, value_node, append, st, node)
            return
        value = self.expand_text(value_node, st) if value_node is not None else EMPTY
        old = st.vars.get(name)
        if old is not None and old.kind != "scalar" and not isinstance(old.value, Unknown):
            # NAME=value on an array sets element 0.
            self.assign_element(st, name, old, text_of("0"), value, append, node)
            return
        if append and old is not None:
            base = self.scalar_value(old, name, node)
            value = concat(base, value)
        self.set_scalar(st, name, value, node)

    def assign_array(
        self, name: str, value_node: Node, append: bool, st: State, node: Node
    ) -> None:
        old = st.vars.get(name)
        kind = old.kind if old is not None and old.kind != "scalar" else "indexed"
        if old is not None and isinstance(old.value, Unknown) and append:
            return
        elements = [c for c in value_node.named_children if c.type != "comment"]
        if kind == "assoc":
            items: dict[str, Text] = old.assoc() if append and old is not None else {}
            for element in elements:
                key, value = self.split_keyed_element(element, st)
                if key is None:
                    self.global_marker("array", element, "associative element without [key]=value")
                    continue
                key_text = known(key)
                if key_text is None:
                    hole = first_hole(key)
                    assert hole is not None
                    self.set_var(st, name, Var(hole, kind="assoc"), node)
                    return
                items[key_text] = value
            self.store_array(st, name, "assoc", tuple(items.items()), node)
            return
        indexed: dict[int, Text] = old.indexed() if append and old is not None else {}
        if append and old is not None and old.kind == "scalar" and old.is_set:
            indexed = {0: old.scalar()}
        next_index = max(indexed) + 1 if indexed else 0
        for element in elements:
            key, value = self.split_keyed_element(element, st)
            if key is not None:
                index = self.eval_arith_text(key, st, element)
                if isinstance(index, Unknown):
                    self.set_var(st, name, Var(index, kind="indexed"), node)
                    return
                indexed[index] = value
                next_index = index + 1
                continue
            for word in self.split_fields_checked(
                self.expand(element, st, quoted=False), element, st
            ):
                indexed[next_index] = word
                next_index += 1
        self.store_array(st, name, "indexed", tuple(sorted(indexed.items())), node)

    def split_keyed_element(self, element: Node, st: State) -> tuple[Text | None, Text]:
        """Split ``[key]=value`` (tree-sitter leaves it as ``[``, key, ``]``, ``=value``)."""
        pieces = self.expand(element, st, quoted=False)
        chars: list[tuple[Segment, bool]] = []
        for piece in pieces:
            if not isinstance(piece, Piece):
                chars.append((" ", False))
            elif isinstance(piece.seg, str):
                chars.extend((ch, piece.quoted) for ch in piece.seg)
            else:
                chars.append((piece.seg, piece.quoted))
        if not chars or chars[0] != ("[", False):
            return None, pieces_text(pieces)
        for i in range(1, len(chars) - 1):
            if chars[i] == ("]", False) and chars[i + 1] == ("=", False):
                key = concat(*((seg,) for seg, _ in chars[1:i]))
                value = concat(*((seg,) for seg, _ in chars[i + 2 :]))
                return key, value
        return None, pieces_text(pieces)

    def assign_subscript(
        self, name_node: Node, value_node: Node | None, append: bool, st: State, node: Node
    ) -> None:
        base = name_node.child_by_field_name("name")
        index_node = name_node.child_by_field_name("index")
        if base is None or index_node is None:
            return
        name = node_text(base)
        value = self.expand_text(value_node, st) if value_node is not None else EMPTY
        old = st.vars.get(name)
        if old is None:
            old = Var((), kind="indexed")
        key = self.expand_text(index_node, st)
        self.assign_element(st, name, old, key, value, append, node)

    def assign_element(
        self, st: State, name: str, old: Var, key: Text, value: Text, append: bool, node: Node
    ) -> None:
        if isinstance(old.value, Unknown):
            return
        hole = first_hole(key)
        if hole is not None:
            self.set_var(st, name, replace(old, value=hole), node)
            return
        if old.kind == "assoc":
            items = old.assoc()
            key_text = known(key) or ""
            items[key_text] = concat(items.get(key_text, EMPTY), value) if append else value
            self.store_array(st, name, "assoc", tuple(items.items()), node)
            return
        index = self.eval_arith_text(key, st, node)
        if isinstance(index, Unknown):
            self.set_var(st, name, replace(old, value=index), node)
            return
        if old.kind == "scalar":
            indexed: dict[int, Text] = {0: old.scalar()} if old.is_set else {}
        else:
            indexed = old.indexed()
        indexed[index] = concat(indexed.get(index, EMPTY), value) if append else value
        self.store_array(st, name, "indexed", tuple(sorted(indexed.items())), node)

    def store_array(
        self,
        st: State,
        name: str,
        kind: str,
        items: tuple[tuple[int, Text], ...] | tuple[tuple[str, Text], ...],
        node: Node,
    ) -> None:
        if len(items) > self.limits.max_array_items:
            raise InputError("array grows too large", path=self.path, line=line_of(node))
        for _, value in items:
            self.check_size(value, node)
        old = st.vars.get(name)
        self.set_var(
            st,
            name,
            Var(
                items,
                kind=kind,
                exported=old.exported if old else False,
                exported_by_script=old.exported_by_script if old else False,
            ),
            node,
        )

    def set_scalar(self, st: State, name: str, value: Text, node: Node | None) -> None:
        self.check_size(value, node)
        old = st.vars.get(name)
        self.set_var(
            st,
            name,
            Var(
                value,
                exported=old.exported if old else False,
                exported_by_script=old.exported_by_script if old else False,
            ),
            node,
        )

    def set_var(self, st: State, name: str, var: Var, node: Node | None) -> None:
        old = st.vars.get(name)
        if old is not None and old.attributes_vary and var.value is not None:
            # the value is set on every path, exported on some: not one variable any more
            marker = old.value.marker if isinstance(old.value, Unknown) else self.marker("", node)
            var = Var(
                Unknown(marker),
                exported=var.exported,
                exported_by_script=var.exported_by_script,
            )
        st.vars[name] = var

    # -------------------------------------------------------------- lookups

    def scalar_value(self, var: Var, name: str, node: Node | None) -> Text:
        return var.scalar()

    def lookup(self, st: State, name: str, node: Node) -> Text | None:
        """Scalar value of ``$name``; ``None`` when unset."""
        if name.isdigit():
            index = int(name)
            if index == 0:
                return text_of(self.path)
            if isinstance(st.positional, Unknown):
                return (st.positional,)
            return st.positional[index - 1] if index <= len(st.positional) else None
        if name == "#":
            if isinstance(st.positional, Unknown):
                return (st.positional,)
            return text_of(str(len(st.positional)))
        if name == "?":
            status = st.status
            if isinstance(status, Unknown):
                return (status.plain(),)
            return text_of("0" if status else "1")
        if name in ("@", "*"):
            if isinstance(st.positional, Unknown):
                return (st.positional,)
            return concat(*_interleave(list(st.positional), text_of(" ")))
        if name in ("$", "!", "-", "_"):
            return self.hole("special-parameter", node, f"${name} is known only at run time")
        var = st.vars.get(name)
        if var is None or var.value is None:
            return None
        return self.scalar_value(var, name, node)

    def element_values(self, st: State, name: str, node: Node) -> list[Text] | Unknown:
        """All values of ``${name[@]}``."""
        if name in ("@", "*"):
            if isinstance(st.positional, Unknown):
                return st.positional
            return list(st.positional)
        var = st.vars.get(name)
        if var is None:
            return []
        if var.hole is not None:
            return var.hole
        return var.elements()

    def element(self, st: State, name: str, index_node: Node, node: Node) -> Text | None:
        var = st.vars.get(name)
        key = self.expand_text(index_node, st)
        hole = first_hole(key)
        if var is not None and var.hole is not None:
            return (var.hole,)
        if hole is not None:
            return (hole,)
        if var is None or not var.is_set:
            return None
        if var.kind == "assoc":
            return var.assoc().get(known(key) or "")
        index = self.eval_arith_text(key, st, node)
        if isinstance(index, Unknown):
            return (index,)
        if var.kind == "scalar":
            return var.scalar() if index == 0 else None
        items = var.indexed()
        if index < 0 and items:
            index = max(items) + 1 + index
        return items.get(index)

    # -------------------------------------------------------------- expansion

    def expand_fields(self, nodes: list[Node], st: State) -> list[Text]:
        fields: list[Text] = []
        for node in nodes:
            fields.extend(self.split_fields_checked(self.expand(node, st, quoted=False), node, st))
            if len(fields) > self.limits.max_array_items:
                raise InputError(
                    "a command expands to too many words", path=self.path, line=line_of(node)
                )
        return fields

    def split_fields_checked(self, pieces: Expanded, node: Node, st: State) -> list[Text]:
        ifs = self.field_separators(st)
        if ifs is None or any(ch not in " \t\n" for ch in ifs):
            unquoted = "".join(
                p.seg
                for p in pieces
                if isinstance(p, Piece) and not p.quoted and isinstance(p.seg, str)
            )
            if ifs is None or any(ch in unquoted for ch in ifs):
                return [self.hole("ifs", node, "splitting on a non-whitespace IFS")]
            ifs = "".join(ch for ch in ifs if ch in " \t\n")
        fields = split_fields(pieces, ifs)
        for text in fields:
            self.check_size(text, node)
        return fields

    def field_separators(self, st: State) -> str | None:
        """The IFS characters (default space, tab, newline); ``None`` when not known."""
        var = st.vars.get("IFS")
        if var is None or not var.is_set:
            return " \t\n"
        return known(var.scalar())

    def expand_text(self, node: Node, st: State) -> Text:
        """Expansion without field splitting (assignment values, case subjects, [[ ]] operands)."""
        return self.check_size(pieces_text(self.expand(node, st, quoted=False)), node)

    def expand(self, node: Node, st: State, quoted: bool) -> Expanded:
        self.step(node)
        kind = node.type
        if kind in ("word", "number", "regex", "extglob_pattern", "variable_name", "test_operator"):
            text = node_text(node)
            if kind == "word":
                return self.expand_bare_word(text, st, node, quoted)
            return [Piece(text, quoted)]
        if kind == "string" or kind == "translated_string":
            # "${A[@]}" of an empty array yields no field at all, so such a
            # string does not by itself make a (possibly empty) field.
            out: Expanded = [] if _has_all_items(node) else [QUOTED_EMPTY]
            raw = node.text or b""
            base = node.start_byte
            cursor = 0
            for child in node.children:
                start, end = child.start_byte - base, child.end_byte - base
                if start > cursor:
                    # The grammar leaves newlines between content nodes out of the tree.
                    gap = raw[cursor:start].decode("utf-8", "replace")
                    out.append(Piece(_unescape_double(gap), True))
                cursor = max(cursor, end)
                if child.type in ('"', '$"'):
                    continue
                if child.type == "string_content":
                    out.append(Piece(_unescape_double(node_text(child)), True))
                else:
                    out.extend(self.expand(child, st, quoted=True))
            return out
        if kind == "raw_string":
            return [Piece(node_text(node)[1:-1], True)]
        if kind == "ansi_c_string":
            return [Piece(_unescape_ansi_c(node_text(node)[2:-1]), True)]
        if kind == "command_name":
            out = []
            for child in node.children:
                out.extend(self.expand(child, st, quoted))
            return out
        if kind == "concatenation":
            out = []
            for child in node.children:
                out.extend(self.expand(child, st, quoted))
            self.check_brace_expansion(node, out, quoted)
            return out
        if kind == "simple_expansion":
            target = node.named_children[0] if node.named_children else None
            name = node_text(target) if target is not None else "$"
            return self.expand_parameter_all(name, st, node, quoted)
        if kind == "expansion":
            return self.expand_braced(node, st, quoted)
        if kind == "command_substitution":
            return [Piece(seg, quoted) for seg in self.command_substitution(node, st)]
        if kind == "arithmetic_expansion":
            inner = [c for c in node.children if c.type not in ("$((", "))", "$[", "]")]
            result = self.eval_arith_nodes(inner, st, node)
            seg: Segment = result if isinstance(result, Unknown) else str(result)
            return [Piece(seg, quoted)]
        if kind == "process_substitution":
            return [Piece(Unknown(self.marker("process-substitution", node)), quoted)]
        if kind == "brace_expression":
            return [Piece(Unknown(self.marker("brace-expansion", node, node_text(node))), quoted)]
        if not node.is_named:
            return [Piece(node_text(node), quoted)]
        return [
            Piece(Unknown(self.marker("unsupported-syntax", node, f"word type {kind}")), quoted)
        ]

    def check_brace_expansion(self, node: Node, out: Expanded, quoted: bool) -> None:
        if quoted:
            return
        unquoted = "".join(
            p.seg for p in out if isinstance(p, Piece) and not p.quoted and isinstance(p.seg, str)
        )
        if re.search(r"\{[^{}\s]*(,|\.\.)[^{}\s]*\}", unquoted):
            mark = Unknown(self.marker("brace-expansion", node, node_text(node)[:60]))
            out[:] = [Piece(mark, False)]

    def expand_bare_word(self, text: str, st: State, node: Node, quoted: bool) -> Expanded:
        out: Expanded = []
        if not quoted and (text == "~" or text.startswith("~/")):
            home = self.lookup(st, "HOME", node)
            if home is None:
                out.append(Piece(Unknown(self.marker("tilde", node, "HOME is not set")), True))
            else:
                out.extend(Piece(seg, True) for seg in home)
            text = text[1:]
        buf = ""
        i = 0
        while i < len(text):
            ch = text[i]
            if ch == "\\" and not quoted and i + 1 < len(text):
                if buf:
                    out.append(Piece(buf, quoted))
                    buf = ""
                if text[i + 1] != "\n":
                    out.append(Piece(text[i + 1], True))
                i += 2
                continue
            buf += ch
            i += 1
        if buf:
            out.append(Piece(buf, quoted))
        if not quoted and re.search(r"\{[^{}\s]*(,|\.\.)[^{}\s]*\}", text):
            return [Piece(Unknown(self.marker("brace-expansion", node, text[:60])), False)]
        return out

    def expand_parameter_all(self, name: str, st: State, node: Node, quoted: bool) -> Expanded:
        if name == "@" or (name == "*" and not quoted):
            positional = st.positional
            return self.expand_list(
                positional if isinstance(positional, Unknown) else list(positional), quoted, node
            )
        value = self.lookup(st, name, node)
        if value is None:
            return []
        return [Piece(seg, quoted) for seg in value]

    def expand_list(self, values: list[Text] | Unknown, quoted: bool, node: Node) -> Expanded:
        if isinstance(values, Unknown):
            return [Piece(values, quoted)]
        out: Expanded = []
        for i, value in enumerate(values):
            if i:
                out.append(FIELD_BREAK if quoted else Piece(" ", False))
            out.extend(Piece(seg, quoted) for seg in value)
            if quoted and not value:
                out.append(QUOTED_EMPTY)
        return out

    def expand_braced(self, node: Node, st: State, quoted: bool) -> Expanded:
        kids = [c for c in node.children if c.type not in ("${", "}")]
        if not kids:
            return [Piece(Unknown(self.marker("parameter-expansion", node, "empty ${}")), quoted)]
        prefix = ""
        if kids[0].type in ("#", "!") and len(kids) > 1:
            prefix = kids[0].type
            kids = kids[1:]
        target = kids[0]
        rest = kids[1:]
        if target.type == "subscript":
            base = target.child_by_field_name("name")
            index = target.child_by_field_name("index")
            name = node_text(base) if base is not None else ""
            index_text = node_text(index) if index is not None else ""
            all_items = index_text in ("@", "*")
        elif target.type in (
            "variable_name",
            "special_variable_name",
            "#",
            "!",
            "$",
            "?",
            "@",
            "*",
            "-",
        ):
            name = node_text(target)
            index = None
            all_items = False
        else:
            return [
                Piece(Unknown(self.marker("parameter-expansion", node, node_text(node))), quoted)
            ]

        if prefix == "#":
            if rest:
                return [
                    Piece(
                        Unknown(self.marker("parameter-expansion", node, node_text(node))), quoted
                    )
                ]
            if all_items or name in ("@", "*"):
                values = self.element_values(st, name, node)
                if isinstance(values, Unknown):
                    return [Piece(values, quoted)]
                return [Piece(str(len(values)), quoted)]
            value = self._single(st, name, index, node)
            if value is None:
                return [Piece("0", quoted)]
            plain = known(value)
            if plain is None:
                return [
                    Piece(
                        first_hole(value) or Unknown(self.marker("parameter-expansion", node)),
                        quoted,
                    )
                ]
            return [Piece(str(len(plain)), quoted)]
        if prefix == "!":
            if rest or all_items:
                return [
                    Piece(
                        Unknown(self.marker("parameter-expansion", node, node_text(node))), quoted
                    )
                ]
            ref = self._single(st, name, index, node)
            ref_name = known(ref) if ref is not None else ""
            if not ref_name or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*|[0-9]+", ref_name):
                return [
                    Piece(Unknown(self.marker("indirect-expansion", node, node_text(node))), quoted)
                ]
            value = self.lookup(st, ref_name, node)
            return [Piece(seg, quoted) for seg in value] if value else []

        if all_items:
            values = self.element_values(st, name, node)
            if not rest:
                return self.expand_list(values, quoted, node)
            joined = (
                None if isinstance(values, Unknown) else concat(*_interleave(values, text_of(" ")))
            )
            is_set = not isinstance(values, Unknown) and bool(values)
            value = (values,) if isinstance(values, Unknown) else joined
            if not is_set and not isinstance(values, Unknown):
                value = None
        else:
            value = self._single(st, name, index, node)
            is_set = value is not None
            chosen = st.vars.get(name) if index is None else None
            if rest and chosen is not None and chosen.choice is not None and chosen.hole:
                # set or unset, which the operator reads, is known only at run time
                return [Piece(chosen.hole, quoted)]

        if not rest:
            if value is None:
                return []
            return [Piece(seg, quoted) for seg in value]
        op = rest[0].type
        operand = rest[1:]
        if op in (":-", "-", ":=", "=", ":+", "+", ":?", "?"):
            return self.expand_default(op, name, value, operand, st, node, quoted)
        if op in ("#", "##", "%", "%%"):
            return self.expand_affix(op, value, operand, st, node, quoted)
        if op in ("/", "//", "/#", "/%"):
            return self.expand_substitute(op, value, operand, st, node, quoted)
        if op == ":":
            return self.expand_substring(value, operand, st, node, quoted)
        if op in ("^^", ",,", "^", ",") and not operand:
            plain = known(value or EMPTY)
            if plain is None:
                hole = first_hole(value or EMPTY)
                return [Piece(hole or Unknown(self.marker("parameter-expansion", node)), quoted)]
            if op == "^^":
                plain = plain.upper()
            elif op == ",,":
                plain = plain.lower()
            elif op == "^":
                plain = plain[:1].upper() + plain[1:]
            else:
                plain = plain[:1].lower() + plain[1:]
            return [Piece(plain, quoted)]
        del is_set
        return [
            Piece(Unknown(self.marker("parameter-expansion", node, node_text(node)[:60])), quoted)
        ]

    def _single(self, st: State, name: str, index: Node | None, node: Node) -> Text | None:
        if index is not None:
            return self.element(st, name, index, node)
        return self.lookup(st, name, node)

    def expand_default(
        self,
        op: str,
        name: str,
        value: Text | None,
        operand: list[Node],
        st: State,
        node: Node,
        quoted: bool,
    ) -> Expanded:
        colon = op.startswith(":")
        if value is None:
            use_value: bool | None = False
        elif not colon:
            use_value = True
        else:
            plain = known(value)
            if plain is not None:
                use_value = plain != ""
            elif any(isinstance(s, str) and s for s in value):
                use_value = True
            else:
                use_value = None
        bare = op.lstrip(":")
        if use_value is None:
            hole = first_hole(value or EMPTY)
            assert hole is not None
            return [Piece(hole, quoted)]

        def word() -> Expanded:
            # The operand is expanded only when bash would expand it.
            out: Expanded = []
            for child in operand:
                out.extend(self.expand(child, st, quoted))
            return out

        if bare == "-":
            return [Piece(s, quoted) for s in value or EMPTY] if use_value else word()
        if bare == "+":
            return word() if use_value else []
        if bare == "=":
            if use_value:
                return [Piece(s, quoted) for s in value or EMPTY]
            text = pieces_text(word())
            self.set_scalar(st, name, text, node)
            return [Piece(s, quoted) for s in text]
        # ``?``: an unset value aborts the script in bash.
        if use_value:
            return [Piece(s, quoted) for s in value or EMPTY]
        raise _ExitSignal

    def expand_affix(
        self, op: str, value: Text | None, operand: list[Node], st: State, node: Node, quoted: bool
    ) -> Expanded:
        pattern = [
            p
            for child in operand
            for p in self.expand(child, st, quoted=False)
            if isinstance(p, Piece)
        ]
        plain = known(value or EMPTY)
        if plain is None:
            return [
                Piece(
                    first_hole(value or EMPTY) or Unknown(self.marker("parameter-expansion", node)),
                    quoted,
                )
            ]
        result = remove_affix(plain, pattern, op) if len(plain) <= 4096 else None
        if result is None:
            return [
                Piece(
                    Unknown(self.marker("parameter-expansion", node, node_text(node)[:60])), quoted
                )
            ]
        return [Piece(result, quoted)]

    def expand_substitute(
        self, op: str, value: Text | None, operand: list[Node], st: State, node: Node, quoted: bool
    ) -> Expanded:
        pattern_nodes: list[Node] = []
        replacement_nodes: list[Node] = []
        seen_slash = False
        for child in operand:
            if child.type == "/" and not seen_slash:
                seen_slash = True
                continue
            (replacement_nodes if seen_slash else pattern_nodes).append(child)
        pattern = [
            p
            for child in pattern_nodes
            for p in self.expand(child, st, quoted=False)
            if isinstance(p, Piece)
        ]
        replacement = concat(
            *(pieces_text(self.expand(c, st, quoted=False)) for c in replacement_nodes)
        )
        plain = known(value or EMPTY)
        replacement_text = known(replacement)
        if plain is None or replacement_text is None:
            hole = first_hole(value or EMPTY) or first_hole(replacement)
            return [Piece(hole or Unknown(self.marker("parameter-expansion", node)), quoted)]
        result = substitute(plain, pattern, replacement_text, op) if len(plain) <= 4096 else None
        if result is None:
            return [
                Piece(
                    Unknown(self.marker("parameter-expansion", node, node_text(node)[:60])), quoted
                )
            ]
        self.check_size(text_of(result), node)
        return [Piece(result, quoted)]

    def expand_substring(
        self, value: Text | None, operand: list[Node], st: State, node: Node, quoted: bool
    ) -> Expanded:
        parts: list[list[Node]] = [[]]
        for child in operand:
            if child.type == ":":
                parts.append([])
            else:
                parts[-1].append(child)
        numbers: list[int] = []
        for part in parts[:2]:
            result = self.eval_arith_nodes(part, st, node) if part else 0
            if isinstance(result, Unknown):
                return [Piece(result, quoted)]
            numbers.append(result)
        plain = known(value or EMPTY)
        if plain is None:
            return [
                Piece(
                    first_hole(value or EMPTY) or Unknown(self.marker("parameter-expansion", node)),
                    quoted,
                )
            ]
        offset = numbers[0]
        if offset < 0:
            offset = max(0, len(plain) + offset)
        if len(numbers) > 1 and len(parts) > 1:
            length = numbers[1]
            end = offset + length if length >= 0 else len(plain) + length
            return [Piece(plain[offset:end], quoted)]
        return [Piece(plain[offset:], quoted)]

    # ---------------------------------------------------- command substitution

    def command_substitution(self, node: Node, st: State) -> Text:
        """Evaluate ``$(...)`` only for pure helpers (dirname, basename, printf, echo)."""
        construct = "backticks" if node_text(node).startswith("`") else "command-substitution"
        statements = [c for c in node.named_children if c.type != "comment"]
        body = statements[0] if len(statements) == 1 else None
        if body is not None and body.type == "redirected_statement":
            fed = self.cat_heredoc(body, st)
            if fed is not None:
                return fed
            redirects = [c for c in body.named_children if c.type == "file_redirect"]
            if all(node_text(r).replace(" ", "") in ("2>/dev/null",) for r in redirects):
                body = body.child_by_field_name("body")
            else:
                body = None
        if body is not None and body.type == "list":
            ran = self.pure_list(body, st, construct)
            if ran is not None and not isinstance(ran[1], Unknown):
                return ran[0] if ran[0] is not None else EMPTY
        if body is not None and body.type == "command":
            name_node = body.child_by_field_name("name")
            prefix = [c for c in body.named_children if c.type == "variable_assignment"]
            if name_node is not None and not prefix:
                args = [
                    c
                    for i, c in enumerate(body.children)
                    if body.field_name_for_child(i) == "argument"
                ]
                words = self.expand_fields([name_node, *args], st)
                head = known(words[0]) if words else None
                if head in ("dirname", "basename", "printf", "echo"):
                    return self.pure_command(head, words[1:], node, construct)
        return self.hole(construct, node, node_text(node)[:80])

    def pure_list(
        self, node: Node, st: State, construct: str
    ) -> tuple[Text | None, StatusValue] | None:
        """``[[ T ]] && printf A || printf B`` inside ``$(…)``: (output, status), or None
        when a part is not a test or a pure helper, a status is known only at run time,
        or more than one part prints (only one output is followed)."""
        if node.type == "test_command":
            return None, self.eval_test_command(node, st)
        if node.type == "command":
            name_node = node.child_by_field_name("name")
            if name_node is None or any(
                c.type == "variable_assignment" for c in node.named_children
            ):
                return None
            args = [
                c for i, c in enumerate(node.children) if node.field_name_for_child(i) == "argument"
            ]
            words = self.expand_fields([name_node, *args], st)
            head = known(words[0]) if words else None
            if head in _STATUS_TRUE or head == "false":
                return None, head != "false"
            if head in ("dirname", "basename", "printf", "echo"):
                return self.pure_command(head, words[1:], node, construct), True
            return None
        if node.type != "list" or len(node.named_children) != 2:
            return None
        left_node, right_node = node.named_children
        operator = next((node_text(c) for c in node.children if c.type in ("&&", "||")), "")
        left = self.pure_list(left_node, st, construct)
        if left is None or isinstance(left[1], Unknown) or operator not in ("&&", "||"):
            return None
        if left[1] != (operator == "&&"):
            return left
        right = self.pure_list(right_node, st, construct)
        if right is None or (left[0] is not None and right[0] is not None):
            return None
        return (left[0] if right[0] is None else right[0]), right[1]

    def cat_heredoc(self, node: Node, st: State) -> Text | None:
        """``$(cat <<EOF … EOF)``: the here-document's content without trailing newlines."""
        command = node.child_by_field_name("body")
        others = [c for c in node.named_children if c != command]
        if (
            command is None
            or command.type != "command"
            or len(command.named_children) != 1
            or node_text(command) != "cat"
            or len(others) != 1
            or others[0].type != "heredoc_redirect"
            or any(c.type in ("pipeline", "list", "command") for c in others[0].named_children)
        ):
            return None
        redirect = others[0]
        start = next((c for c in redirect.children if c.type == "heredoc_start"), None)
        text = next((c for c in redirect.children if c.type == "heredoc_body"), None)
        delimiter = node_text(start) if start is not None else ""
        return _strip_newlines(self.heredoc_content(text, delimiter, st))

    def pure_command(self, head: str, args: list[Text], node: Node, construct: str) -> Text:
        plain_args = [known(a) for a in args]
        if any(a is None for a in plain_args):
            hole = next(first_hole(a) for a in args if first_hole(a) is not None)
            assert hole is not None
            return (hole,)
        values = [a for a in plain_args if a is not None]
        if head == "dirname" and len(values) == 1:
            return text_of(_dirname(values[0]))
        if head == "basename" and 1 <= len(values) <= 2:
            base = _basename(values[0])
            if len(values) == 2 and base.endswith(values[1]) and base != values[1]:
                base = base[: -len(values[1])]
            return text_of(base)
        if head == "echo" and not any(v.startswith("-") for v in values[:1]):
            return text_of(" ".join(values))
        if head == "printf":
            return _strip_newlines(self.pure_printf(args, node))
        return self.hole(construct, node, node_text(node)[:80])

    def pure_printf(self, args: list[Text], node: Node) -> Text:
        values = [known(a) for a in args]
        ended = values[:1] == ["--"]  # the end of options: the format follows
        if ended:
            values = values[1:]
        if not values or any(v is None for v in values):
            return self.hole("command-substitution", node, "printf with unknown arguments")
        if not ended and str(values[0]).startswith("-"):
            return self.hole("command-substitution", node, "printf with an option")
        result = _printf([v for v in values if v is not None])
        if result is None:
            return self.hole("command-substitution", node, "printf format not supported")
        return text_of(result)

    # ------------------------------------------------------------------ tests

    def eval_test_command(self, node: Node, st: State) -> StatusValue:
        double = bool(node.children) and node.children[0].type == "[["
        inner = [c for c in node.children if c.type not in ("[", "]", "[[", "]]")]
        if not inner:
            return False
        if len(inner) > 1:
            return Unknown(self.marker("test", node, node_text(node)[:60]))
        return self.eval_cond(inner[0], st, double)

    def eval_cond(self, node: Node, st: State, double: bool) -> StatusValue:
        self.step(node)
        kind = node.type
        if kind == "parenthesized_expression":
            inner = node.named_children
            return self.eval_cond(inner[0], st, double) if inner else False
        if kind == "unary_expression":
            op_node = node.child_by_field_name("operator")
            if op_node is None:
                op_node = node.children[0]
            op = node_text(op_node)
            operand_nodes = [c for c in node.children if c.id != op_node.id]
            if op == "!":
                value = self.eval_cond(operand_nodes[0], st, double) if operand_nodes else False
                return (not value) if isinstance(value, bool) else value
            operand = concat(*(self.expand_text(c, st) for c in operand_nodes))
            return self.unary_test(op, operand, node, st)
        if kind == "binary_expression":
            left_node = node.child_by_field_name("left")
            right_node = node.child_by_field_name("right")
            op_node = node.child_by_field_name("operator")
            if left_node is None or right_node is None or op_node is None:
                return Unknown(self.marker("test", node, node_text(node)[:60]))
            op = node_text(op_node)
            if op in ("&&", "-a", "||", "-o"):
                left = self.eval_cond(left_node, st, double)
                is_and = op in ("&&", "-a")
                if left is (not is_and):
                    return left
                right = self.eval_cond(right_node, st, double)
                if isinstance(left, bool):
                    return right
                if right is (not is_and):
                    return right
                return left
            left_text = self.expand_text(left_node, st)
            if op in ("==", "=", "!=") and double:
                pattern = [
                    p for p in self.expand(right_node, st, quoted=False) if isinstance(p, Piece)
                ]
                subject = known(left_text)
                if subject is None:
                    return first_hole(left_text) or Unknown(self.marker("test", node))
                matched = glob_match(subject, pattern)
                if matched is None:
                    hole = next((p.seg for p in pattern if isinstance(p.seg, Unknown)), None)
                    return hole.plain() if hole else Unknown(self.marker("test", node, "pattern"))
                return matched if op != "!=" else not matched
            right_text = self.expand_text(right_node, st)
            return self.binary_test(op, left_text, right_text, node, st, double)
        if kind in ("test_operator",):
            return True
        # A lone word: true when non-empty.
        return self.unary_test("-n", self.expand_text(node, st), node, st)

    def unary_test(self, op: str, operand: Text, node: Node, st: State) -> StatusValue:
        if op in ("-z", "-n"):
            plain = known(operand)
            if plain is None:
                if any(isinstance(s, str) and s for s in operand):
                    return op == "-n"
                return first_hole(operand) or Unknown(self.marker("test", node))
            return (plain == "") if op == "-z" else (plain != "")
        if op == "-v":
            name = known(operand)
            if name is None:
                return first_hole(operand) or Unknown(self.marker("test", node))
            var = st.vars.get(name)
            hole = var.hole if var is not None and var.choice is not None else None
            if hole is not None:
                return hole  # set on some paths only
            return var is not None and var.value is not None
        if op in (
            "-d",
            "-f",
            "-e",
            "-s",
            "-x",
            "-r",
            "-w",
            "-L",
            "-h",
            "-p",
            "-S",
            "-b",
            "-c",
            "-g",
            "-u",
            "-k",
            "-O",
            "-G",
            "-N",
        ):
            exists = self.file_exists(op, operand)
            if exists is not None:
                return exists
            return Unknown(self.marker("filesystem-test", node, node_text(node)[:80]))
        if op in ("-t", "-o"):
            return Unknown(self.marker("test", node, node_text(node)[:80]))
        return Unknown(self.marker("test", node, f"unknown test operator {op}"))

    def file_exists(self, op: str, operand: Text) -> bool | None:
        """``-f``/``-e`` on a relative path, when :attr:`RunContext.files` knows the tree."""
        path = known(operand)
        files = self.context.files
        if files is None or path is None or op not in ("-f", "-e") or path.startswith("/"):
            return None
        path = posixpath.normpath(path)
        if path.startswith("..") or path == ".":
            return None
        found = files(path)
        return None if found is None or (op == "-e" and not found) else found

    def binary_test(
        self, op: str, left: Text, right: Text, node: Node, st: State, double: bool
    ) -> StatusValue:
        if op in ("-eq", "-ne", "-lt", "-le", "-gt", "-ge"):
            if double:
                a: int | Unknown | None = self.eval_arith_text(left, st, node)
                b: int | Unknown | None = self.eval_arith_text(right, st, node)
            else:
                a = self.int_operand(left, node)
                b = self.int_operand(right, node)
            if a is None or b is None:
                return False
            if isinstance(a, Unknown):
                return a
            if isinstance(b, Unknown):
                return b
            return {
                "-eq": a == b,
                "-ne": a != b,
                "-lt": a < b,
                "-le": a <= b,
                "-gt": a > b,
                "-ge": a >= b,
            }[op]
        lp, rp = known(left), known(right)
        if lp is None:
            return first_hole(left) or Unknown(self.marker("test", node))
        if rp is None:
            return first_hole(right) or Unknown(self.marker("test", node))
        if op in ("=", "=="):
            return lp == rp
        if op == "!=":
            return lp != rp
        if op == "<":
            return lp < rp
        if op == ">":
            return lp > rp
        if op == "=~":
            return Unknown(self.marker("regex-match", node, node_text(node)[:80]))
        if op in ("-nt", "-ot", "-ef"):
            return Unknown(self.marker("filesystem-test", node, node_text(node)[:80]))
        return Unknown(self.marker("test", node, f"unknown test operator {op}"))

    def int_operand(self, text: Text, node: Node) -> int | Unknown | None:
        plain = known(text)
        if plain is None:
            return first_hole(text) or Unknown(self.marker("test", node))
        stripped = plain.strip()
        if re.fullmatch(r"[-+]?[0-9]+", stripped):
            return int(stripped)
        # ``[ x -gt 1 ]`` with a non-integer is an error in bash (status 2).
        return None

    def posix_test(self, words: list[Text], node: Node) -> StatusValue:
        """``test``/``[`` given as a plain command (POSIX argument-count rules)."""
        for word in words:
            if known(word) is None:
                return first_hole(word) or Unknown(self.marker("test", node))
        args = [known(w) or "" for w in words]
        negate = False
        if (len(args) in (2, 4) and args[0] == "!") or (
            len(args) == 3 and args[0] == "!" and args[1] not in ("=", "!=", "-eq", "-ne")
        ):
            negate = True
            args = args[1:]
        result: StatusValue
        if not args:
            result = False
        elif len(args) == 1:
            result = args[0] != ""
        elif len(args) == 2:
            result = self.unary_test(args[0], text_of(args[1]), node, _EMPTY_STATE)
        elif len(args) == 3:
            result = self.binary_test(
                args[1], text_of(args[0]), text_of(args[2]), node, _EMPTY_STATE, False
            )
        else:
            return Unknown(self.marker("test", node, "test with many arguments"))
        if negate and isinstance(result, bool):
            return not result
        return result

    # ------------------------------------------------------------- arithmetic

    def eval_arith_nodes(self, nodes: list[Node], st: State, where: Node) -> int | Unknown:
        """Evaluate arithmetic given as syntax nodes: expand ``$...`` parts, then the string."""
        parts: list[Text] = []
        for node in nodes:
            parts.append(self.arith_source(node, st))
        return self.eval_arith_text(concat(*_interleave(parts, text_of(" "))), st, where)

    def arith_source(self, node: Node, st: State) -> Text:
        if node.type in (
            "simple_expansion",
            "expansion",
            "command_substitution",
            "arithmetic_expansion",
            "string",
            "raw_string",
        ):
            return self.expand_text(node, st)
        if node.child_count == 0:
            return text_of(node_text(node))
        # Re-assemble the source text of the node, expanding $-parts inside.
        source = node.text or b""
        base = node.start_byte
        out: list[Text] = []
        cursor = 0
        for child in node.children:
            start, end = child.start_byte - base, child.end_byte - base
            if start > cursor:
                out.append(text_of(source[cursor:start].decode("utf-8", "replace")))
            out.append(self.arith_source(child, st))
            cursor = end
        if len(source) > cursor:
            out.append(text_of(source[cursor:].decode("utf-8", "replace")))
        return concat(*out)

    def eval_arith_text(self, text: Text, st: State, node: Node) -> int | Unknown:
        hole = first_hole(text)
        if hole is not None:
            return hole
        expr = known(text) or ""

        def read(name: str) -> str | ArithUnknown | None:
            var = st.vars.get(name)
            if var is None or var.value is None:
                return None
            value = self.scalar_value(var, name, node)
            plain = known(value)
            if plain is None:
                hole = first_hole(value)
                return ArithUnknown(hole.marker.detail if hole else name)
            return plain

        unknown_writes: dict[str, ArithUnknown] = {}

        def write(name: str, value: int | ArithUnknown) -> None:
            if isinstance(value, ArithUnknown):
                unknown_writes[name] = value
                self.set_var(
                    st, name, Var(Unknown(self.marker("arithmetic", node, value.reason))), node
                )
            else:
                self.set_scalar(st, name, text_of(str(value)), node)

        result = ArithmeticEvaluator(read, write).evaluate(expr)
        if isinstance(result, ArithUnknown):
            # Prefer the original hole of a variable when that was the cause.
            for name in re.findall(r"[A-Za-z_][A-Za-z0-9_]*", expr):
                var = st.vars.get(name)
                if var is not None and var.hole is not None:
                    return var.hole
                if var is not None and var.is_set:
                    hole = first_hole(var.scalar())
                    if hole is not None:
                        return hole
            return Unknown(self.marker("arithmetic", node, f"{result.reason}: {expr[:60]}"))
        return result


_EMPTY_STATE: Final = State(vars={}, functions={})


def _has_all_items(node: Node) -> bool:
    for child in node.named_children:
        text = node_text(child)
        if child.type in ("simple_expansion", "expansion") and (
            text in ("$@", "${@}") or re.fullmatch(r"\$\{[A-Za-z_][A-Za-z0-9_]*\[@\]\}", text)
        ):
            return True
    return False


def _if_conditions(node: Node) -> list[Node]:
    """Statements between ``if``/``elif`` and ``then``."""
    out: list[Node] = []
    for child in node.children[1:]:
        if child.type == "then":
            break
        out.append(child)
    return out


def _if_body(node: Node) -> list[Node]:
    """Statements between ``then`` and the first elif/else/fi."""
    body: list[Node] = []
    inside = False
    for child in node.children:
        if child.type == "then":
            inside = True
            continue
        if child.type in ("elif_clause", "else_clause", "fi"):
            break
        if inside:
            body.append(child)
    return body


def _serve_index(words: list[Text]) -> int | None:
    """Index of ``vllm`` in ``vllm serve`` when these words run it."""
    for i in range(len(words) - 1):
        head = known(words[i])
        if head is None or posixpath.basename(head) != "vllm" or known(words[i + 1]) != "serve":
            continue
        before = words[:i]
        if all(_is_wrapper_word(w) for w in before):
            return i
        return None
    return None


def _is_wrapper_word(word: Text) -> bool:
    text = known(word)
    if text is None:
        return True
    return (
        posixpath.basename(text) in _WRAPPERS
        or text.startswith("-")
        or bool(re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=.*", text, flags=re.DOTALL))
        or text.isdigit()
    )


def _runner(fn: Callable[[Node, State], None], node: Node) -> Callable[[State], None]:
    return lambda state: fn(node, state)


def _interleave(items: list[Text], sep: Text) -> Iterator[Text]:
    for i, item in enumerate(items):
        if i:
            yield sep
        yield item


def _copy_state(src: State, dst: State) -> None:
    dst.vars = src.vars
    dst.functions = src.functions
    dst.positional = src.positional
    dst.frames = src.frames
    dst.status = src.status
    dst.exited = src.exited
    dst.returning = src.returning
    dst.pending_return = src.pending_return
    dst.serves = src.serves


def join_states(
    a: State, b: State, marker: PartialMarker, decision: Decision | None = None
) -> State:
    """Join two paths after an unknown condition (see module docstring). With the
    ``decision`` (``a``: it held), a scalar set to known values on both paths (or unset on
    one) keeps them as a :class:`~.values.Choice`; anything else differing is a hole."""
    serves = merge_serves(a.serves, b.serves, marker)
    if a.exited and b.exited:
        out = a.copy()
        out.serves = serves
        return out
    if a.exited or b.exited:
        out = (b if a.exited else a).copy()
        out.serves = serves
        return out
    if a.returning != b.returning:
        live, gone = (b, a) if a.returning else (a, b)
        out = live.copy()
        out.serves = serves
        done = gone.copy()
        done.pending_return = None
        out.pending_return = _join_pending(
            _join_pending(live.pending_return, gone.pending_return, marker), done, marker
        )
        return out
    hole = Unknown(marker)
    out_vars: dict[str, Var] = {}
    for name in a.vars.keys() | b.vars.keys():
        va, vb = a.vars.get(name), b.vars.get(name)
        if va is vb or va == vb:
            assert va is not None
            out_vars[name] = va
            continue
        exported = bool((va and va.exported) or (vb and vb.exported))
        by_script = bool((va and va.exported_by_script) or (vb and vb.exported_by_script))
        chosen = _var_choice(va, vb, marker, decision) if decision is not None else None
        out_vars[name] = chosen or Var(hole, exported=exported, exported_by_script=by_script)
    out_functions: dict[str, FunctionDef | None] = {}
    for name in a.functions.keys() | b.functions.keys():
        fa, fb = a.functions.get(name), b.functions.get(name)
        out_functions[name] = fa if fa is fb or (fa and fb and fa.body.id == fb.body.id) else None
    frames: list[dict[str, Var | None]] = []
    for fa_frame, fb_frame in zip(a.frames, b.frames, strict=False):
        frame: dict[str, Var | None] = {}
        for name in fa_frame.keys() | fb_frame.keys():
            sa, sb = fa_frame.get(name), fb_frame.get(name)
            frame[name] = sa if sa == sb else Var(hole)
        frames.append(frame)
    return State(
        vars=out_vars,
        functions=out_functions,
        positional=a.positional if a.positional == b.positional else hole,
        frames=frames,
        status=a.status if a.status == b.status else Unknown(marker, derived=True),
        exited=False,
        returning=a.returning,
        pending_return=_join_pending(a.pending_return, b.pending_return, marker),
        serves=serves,
    )


def _var_choice(
    va: Var | None, vb: Var | None, marker: PartialMarker, decision: Decision
) -> Var | None:
    """The variable ``decision`` sets to ``va`` or ``vb``, when both are followed exactly:
    scalars (or unset) whose texts hold no hole but choices, exported alike where set.
    Where one path leaves it unset with other attributes, a later assignment keeps
    whichever the path had: :attr:`~.values.Var.attributes_vary` makes it a hole."""
    alternatives: list[Alternative] = []
    attributes: set[tuple[bool, bool]] = set()
    unset_attributes: set[tuple[bool, bool]] = set()
    vary = False
    for var in (va, vb):
        if var is None or var.value is None:
            alternatives.append(None)
            unset_attributes.add((var.exported, var.exported_by_script) if var else (False, False))
            continue
        if var.kind != "scalar":
            return None
        vary = vary or var.attributes_vary
        attributes.add((var.exported, var.exported_by_script))
        if isinstance(var.value, Unknown):
            if var.value.choice is None:
                return None
            alternatives.append(var.value.choice)
            continue
        text = var.scalar()
        if any(isinstance(seg, Unknown) and seg.choice is None for seg in text):
            return None
        alternatives.append(text)
    if len(attributes) != 1:
        return None
    (exported, by_script) = next(iter(attributes))
    return Var(
        Unknown(marker, Choice(decision, alternatives[0], alternatives[1])),
        exported=exported,
        exported_by_script=by_script,
        attributes_vary=vary or bool(unset_attributes - attributes),
    )


def _join_pending(a: State | None, b: State | None, marker: PartialMarker) -> State | None:
    """Join the already-returned paths of two branches (each kept once)."""
    if a is None:
        return b
    if b is None or a is b:
        return a
    return join_states(a, b, marker)


def merge_serves(
    a: tuple[ServeCapture, ...], b: tuple[ServeCapture, ...], marker: PartialMarker | None
) -> tuple[ServeCapture, ...]:
    if a == b:
        return a
    out: list[ServeCapture] = []
    extra = frozenset({marker}) if marker is not None else frozenset()
    for i in range(max(len(a), len(b))):
        sa = a[i] if i < len(a) else None
        sb = b[i] if i < len(b) else None
        if sa is not None and sb is not None:
            if sa == sb:
                out.append(sa)
            elif sa.kind != sb.kind:
                out += [replace(s, markers=s.markers | extra) for s in (sa, sb)]
            else:
                out.append(_join_capture(sa, sb, marker))
        else:
            only = sa or sb
            assert only is not None
            out.append(replace(only, markers=only.markers | extra))
    return tuple(out)


def _join_capture(a: ServeCapture, b: ServeCapture, marker: PartialMarker | None) -> ServeCapture:
    mark = marker or PartialMarker(
        construct_name="function", path="", line=a.line, detail="early return"
    )
    hole: Text = unknown_text(mark)
    if len(a.argv) == len(b.argv):
        argv = tuple(x if x == y else hole for x, y in zip(a.argv, b.argv, strict=True))
    else:
        common = 0
        while common < min(len(a.argv), len(b.argv)) and a.argv[common] == b.argv[common]:
            common += 1
        argv = (*a.argv[:common], hole)
    env_a, env_b = dict(a.env), dict(b.env)
    env = {
        k: (env_a.get(k) if env_a.get(k) == env_b.get(k) else hole)
        for k in env_a.keys() | env_b.keys()
    }
    return ServeCapture(
        argv=argv,
        env=tuple(sorted((k, v) for k, v in env.items() if v is not None)),
        line=min(a.line, b.line),
        markers=a.markers | b.markers,
        kind=a.kind,
        step=max(a.step, b.step),
    )


def _unescape_double(text: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch == "\\" and i + 1 < len(text) and text[i + 1] in '$`"\\\n':
            if text[i + 1] != "\n":
                out.append(text[i + 1])
            i += 2
            continue
        out.append(ch)
        i += 1
    return "".join(out)


def _unescape_heredoc(text: str) -> str | None:
    """Backslash removal in an unquoted here-document body (``$``, backquote, ``\\``, newline).

    None when the text holds an unescaped backquote (a command substitution).
    """
    out: list[str] = []
    for match in re.finditer(r"\\[$`\\\n]|`|[^\\`]+|\\", text):
        piece = match.group(0)
        if piece == "`":
            return None
        if len(piece) == 2 and piece[0] == "\\":
            out.append("" if piece[1] == "\n" else piece[1])
        else:
            out.append(piece)
    return "".join(out)


_ANSI_SIMPLE: Final = {
    "n": "\n",
    "t": "\t",
    "r": "\r",
    "a": "\a",
    "b": "\b",
    "f": "\f",
    "v": "\v",
    "e": "\x1b",
    "E": "\x1b",
    "\\": "\\",
    "'": "'",
    '"': '"',
    "?": "?",
}


def _unescape_ansi_c(text: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch != "\\" or i + 1 >= len(text):
            out.append(ch)
            i += 1
            continue
        nxt = text[i + 1]
        if nxt in _ANSI_SIMPLE:
            out.append(_ANSI_SIMPLE[nxt])
            i += 2
        elif nxt == "x":
            match = re.match(r"[0-9a-fA-F]{1,2}", text[i + 2 :])
            if match:
                out.append(chr(int(match.group(0), 16)))
                i += 2 + len(match.group(0))
            else:
                out.append("\\x")
                i += 2
        elif nxt in "01234567":
            match = re.match(r"[0-7]{1,3}", text[i + 1 :])
            assert match is not None
            out.append(chr(int(match.group(0), 8) & 0xFF))
            i += 1 + len(match.group(0))
        else:
            out.append("\\" + nxt)
            i += 2
    return "".join(out)


def _strip_newlines(text: Text) -> Text:
    if text and isinstance(text[-1], str):
        return (*text[:-1], text[-1].rstrip("\n")) if text[-1].rstrip("\n") else text[:-1]
    return text


def _dirname(path: str) -> str:
    stripped = path.rstrip("/")
    if not stripped:
        return "/" if path else "."
    head = posixpath.dirname(stripped).rstrip("/")
    if head:
        return head
    return "/" if stripped.startswith("/") else "."


def _basename(path: str) -> str:
    stripped = path.rstrip("/")
    if not stripped:
        return "/" if path else ""
    return posixpath.basename(stripped)


_PRINTF_SPEC: Final = re.compile(r"%(?:(%)|([-+ 0#]*)(\d*)(?:\.(\d+))?([sdifxXoc]))")


def _printf(args: list[str]) -> str | None:
    """printf subset: %s %d %i %f %x %X %o %c %%, width, precision, escapes; reuses the format."""
    if not args:
        return None
    fmt = _unescape_ansi_c(args[0].replace("%%", "\x00")).replace("\x00", "%%")
    values = args[1:]
    specs = [m for m in _PRINTF_SPEC.finditer(fmt) if not m.group(1)]
    out: list[str] = []
    index = 0
    while True:
        pos = 0
        for match in _PRINTF_SPEC.finditer(fmt):
            out.append(fmt[pos : match.start()])
            pos = match.end()
            if match.group(1):
                out.append("%")
                continue
            flags, width, precision, conv = (
                match.group(2),
                match.group(3),
                match.group(4),
                match.group(5),
            )
            value = values[index] if index < len(values) else ""
            index += 1
            try:
                out.append(_format_one(flags, width, precision, conv, value))
            except ValueError:
                return None
        out.append(fmt[pos:])
        if not specs or index >= len(values):
            break
        if len(out) > 10_000:
            return None
    return "".join(out)


def _format_one(flags: str, width: str, precision: str | None, conv: str, value: str) -> str:
    spec = "%" + flags + width + (f".{precision}" if precision is not None else "")
    if conv == "s":
        return (spec + "s") % value
    if conv == "c":
        return value[:1]
    if conv == "f":
        return (spec + "f") % float(value or "0")
    number = (
        int(value.strip() or "0", 0)
        if value.strip().startswith(("0x", "0X"))
        else int(value.strip() or "0")
    )
    return (spec + {"i": "d"}.get(conv, conv)) % number


def _assigned_names_with_calls(node: Node, functions: Mapping[str, FunctionDef | None]) -> set[str]:
    """Names a loop may assign, including through the functions it calls (transitively)."""
    names: set[str] = set()
    pending = [node]
    seen_functions: set[str] = set()
    while pending:
        current = pending.pop()
        names |= _assigned_names(current)
        for called in _called_names(current):
            fn = functions.get(called)
            if fn is not None and called not in seen_functions:
                seen_functions.add(called)
                pending.append(fn.body)
    return names


def _called_names(node: Node) -> set[str]:
    called: set[str] = set()
    for current in descendants(node):
        if current.type == "command":
            name_node = current.child_by_field_name("name")
            if name_node is not None:
                called.add(node_text(name_node))
    return called


_ARITH_ASSIGN: Final = frozenset({"++", "--", "=", "+=", "-=", "*=", "/=", "%="})
_READING_COMMANDS: Final = frozenset({"read", "mapfile", "readarray", "printf", "let", "getopts"})


def _assigned_names(node: Node) -> set[str]:
    """Variables a loop body may assign, unset or declare (havoc set), found syntactically."""
    names: set[str] = set()
    for current in descendants(node):
        kind = current.type
        if kind == "variable_assignment":
            name_node = current.child_by_field_name("name")
            if name_node is not None and name_node.type == "subscript":
                name_node = name_node.child_by_field_name("name") or name_node
            if name_node is not None:
                names.add(node_text(name_node))
        elif kind == "for_statement":
            var_node = current.child_by_field_name("variable")
            if var_node is not None:
                names.add(node_text(var_node))
        elif kind in ("unset_command", "declaration_command"):
            names.update(node_text(c) for c in current.named_children if c.type == "variable_name")
            if kind == "unset_command":
                names.update(node_text(c) for c in current.named_children if c.type == "word")
        elif kind == "expansion" and any(c.type in (":=", "=") for c in current.children):
            target = next((c for c in current.named_children if c.type == "variable_name"), None)
            if target is not None:
                names.add(node_text(target))
        elif kind in ("postfix_expression", "unary_expression", "binary_expression"):
            if any(op.type in _ARITH_ASSIGN for op in current.children):
                names.update(
                    node_text(c)
                    for c in current.named_children
                    if c.type in ("variable_name", "word")
                )
        elif kind == "command":
            name_node = current.child_by_field_name("name")
            if name_node is not None and node_text(name_node) in _READING_COMMANDS:
                for child in current.named_children[1:]:
                    match = re.match(r"[A-Za-z_][A-Za-z0-9_]*", node_text(child))
                    if match:
                        names.add(match.group(0))
    return names


def evaluate_script(
    script: str,
    path: str,
    env: Mapping[str, str],
    helpers: Mapping[str, str] | None = None,
    limits: Limits = DEFAULT_LIMITS,
    record: frozenset[str] = frozenset(),
    context: RunContext | None = None,
) -> Evaluation:
    """Parse and statically evaluate ``script`` (never executed).

    ``record``: names of commands (``cp``) whose every reached call is returned
    in :attr:`Evaluation.recorded` with the exported environment it runs with,
    joined across branches as serve commands are. ``context``: what is known of
    the machine the script runs on (:class:`RunContext`).
    """
    parsed = parse_script(script, path)
    return Evaluator(parsed, env, helpers, limits, record, context).run()
