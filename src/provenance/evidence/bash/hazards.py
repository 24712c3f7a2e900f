"""Shell state the evaluator does not model: traps, shell options, variable attributes.

The evaluator's model of bash is its variables, functions and positional
parameters, with every command run once in text order. Some builtins change how
bash runs the rest of the script outside that model: a ``DEBUG`` trap runs code
before every command, ``set -a`` exports every later assignment, ``shopt -s
nocasematch`` changes what ``case`` matches, ``declare -i``/``-u``/``-n`` change
what an assignment stores. This module holds the rules that decide, from a
builtin's literal words, whether it does that: each function returns a short
reason (the evaluator turns it into a partial marker at the builtin's line) or
``None`` when the builtin leaves the model exact. Rules are deliberately wide: a
false positive makes a record partial; a miss would let a complete record differ
from what bash runs.
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Iterable
from typing import Final

from provenance.errors import InputError
from provenance.evidence.bash.syntax import Node, descendants, node_text, parse_script

TRAP: Final = "trap"
SHELL_OPTION: Final = "shell-option"
NAMEREF: Final = "nameref"
DECLARE: Final = "declare"
BUILTIN: Final = "builtin"

# ``set`` options (letters and ``-o`` names) that leave the evaluator's model exact
# when turned on: they trace, fail or stop the run, or only matter interactively.
_SAFE_SET_LETTERS: Final = frozenset("euxvEThmbCBHPpf")
_SAFE_SET_NAMES: Final = frozenset(
    {"errexit", "nounset", "xtrace", "verbose", "errtrace", "functrace", "hashall"}
    | {"monitor", "notify", "noclobber", "braceexpand", "histexpand", "physical"}
    | {"privileged", "pipefail", "history", "ignoreeof", "nolog", "emacs", "vi", "noglob"}
)
# ``shopt -s`` options that leave the model exact (interactive, history, cd, job control).
_SAFE_SHOPT_ON: Final = frozenset(
    {"checkwinsize", "cmdhist", "histappend", "histreedit", "histverify", "lithist"}
    | {"progcomp", "progcomp_alias", "promptvars", "hostcomplete", "checkjobs", "huponexit"}
    | {"gnu_errfmt", "shift_verbose", "sourcepath", "extquote", "force_fignore"}
    | {"complete_fullquote", "direxpand", "dirspell", "cdspell", "cdable_vars", "autocd"}
    | {"no_empty_cmd_completion", "mailwarn", "inherit_errexit", "checkhash", "execfail"}
)
# ``shopt -u`` of these (on by default) changes expansion or parsing.
_UNSAFE_SHOPT_OFF: Final = frozenset(
    {"patsub_replacement", "globasciiranges", "interactive_comments", "extquote"}
)
# Signals that a plain run delivers to the script itself, or pseudo-signals bash
# raises between ordinary commands: their trap runs code inside the evaluated flow.
_IN_FLOW_TRAPS: Final = frozenset({"DEBUG", "RETURN", "ERR", "CHLD", "CLD"})
# Commands that run another program or shell code given as their words.
_RUNS_CODE: Final = frozenset(
    {"vllm", "eval", "source", ".", "bash", "sh", "dash", "zsh", "ksh", "exec", "command"}
    | {"builtin", "env", "nohup", "numactl", "time", "timeout", "stdbuf", "taskset", "nice"}
    | {"ionice", "setsid", "srun", "sudo", "chrt", "xargs", "python", "python3"}
)
# Builtins that change shell state, found where the evaluator does not follow them
# (a name produced by an expansion, after ``builtin``/``command``).
STATEFUL_BUILTINS: Final = frozenset(
    {"declare", "typeset", "local", "export", "readonly", "unset", "alias", "unalias"}
    | {"enable", "builtin", "eval", "source", ".", "set", "shopt", "trap", "read", "mapfile"}
    | {"readarray", "printf", "let", "getopts", "hash", "shift", "return", "exit", "exec"}
)


def signal_name(word: str) -> str:
    """``sigint``, ``SIGINT``, ``2`` → ``INT``; ``0`` → ``EXIT``."""
    name = word.upper()
    name = name.removeprefix("SIG")
    return {"0": "EXIT", "1": "HUP", "2": "INT", "3": "QUIT", "15": "TERM", "17": "CHLD"}.get(
        name, name
    )


def trap_settings(args: list[str]) -> list[tuple[str, str | None]] | None:
    """``(signal, action)`` pairs a ``trap`` sets; action ``None`` resets or ignores.

    ``None`` when the command only lists (``trap``, ``trap -p``, ``trap -l``).
    """
    words = list(args)
    if words[:1] == ["--"]:
        words = words[1:]
    if not words or words[0] in ("-p", "-l", "-P"):
        return None
    if len(words) == 1:
        return [(signal_name(words[0]), None)]
    action, signals = words[0], words[1:]
    reset = action in ("-", "")
    return [(signal_name(s), None if reset else action) for s in signals]


def trap_reason(signal: str, action: str, may_run: Callable[[str], str | None]) -> str | None:
    """Why a ``trap ACTION SIGNAL`` makes the evaluation inexact (None: it does not)."""
    if signal in _IN_FLOW_TRAPS:
        return f"trap on {signal} runs {action[:60]!r} inside the script's own flow"
    runs = may_run(action)
    if runs is not None:
        return f"trap on {signal} may run vllm or other code when it fires: {runs}"
    return None


def set_reason(args: list[str]) -> str | None:
    """Why ``set ARGS`` changes what the evaluator models (None: it does not)."""
    i = 0
    while i < len(args):
        word = args[i]
        i += 1
        if word in ("--", "-") or not word.startswith(("-", "+")):
            return None  # the rest are positional parameters
        on = word.startswith("-")
        letters = word[1:]
        if "o" in letters:  # ``set -euo pipefail``: the ``o`` takes the next word
            name = args[i] if i < len(args) else ""
            i += 1
            letters = letters.replace("o", "")
            if name and on and name not in _SAFE_SET_NAMES:
                return f"set -o {name} changes how bash runs the rest of the script"
            if name == "interactive-comments" and not on:
                return f"set +o {name} changes how bash reads the rest of the script"
        if on:
            unsafe = [c for c in letters if c not in _SAFE_SET_LETTERS]
            if unsafe:
                return f"set -{''.join(unsafe)} changes how bash runs the rest of the script"
    return None


def shopt_reason(args: list[str]) -> str | None:
    """Why ``shopt ARGS`` changes what the evaluator models (None: it does not)."""
    flags = {a for a in args if a.startswith("-")}
    names = [a for a in args if not a.startswith("-")]
    if "-o" in flags:
        letter = "-" if "-s" in flags else "+"
        return set_reason([w for n in names for w in (f"{letter}o", n)]) if names else None
    if "-s" in flags:
        unsafe = [n for n in names if n not in _SAFE_SHOPT_ON]
        if unsafe or not names:
            return f"shopt -s {' '.join(unsafe or names)} changes how bash expands or matches"
    elif "-u" in flags:
        unsafe = [n for n in names if n in _UNSAFE_SHOPT_OFF]
        if unsafe:
            return f"shopt -u {' '.join(unsafe)} changes how bash expands or reads"
    return None


def declare_reason(keyword: str, flags: set[str], name: str) -> tuple[str, str] | None:
    """``(construct, reason)`` when a declaration gives a variable an attribute the
    evaluator does not model: a nameref, integer, case-changing or read-only variable."""
    if keyword == "export":
        return None  # ``export -n`` un-exports; ``export -f`` is a resolution matter
    if "n" in flags:
        return NAMEREF, f"{keyword} -n {name}: assignments and expansions go through a nameref"
    if keyword == "readonly" or "r" in flags:
        return DECLARE, f"{keyword} {name}: a read-only variable refuses later assignments"
    for flag, what in (("i", "integer"), ("l", "lowercase"), ("u", "uppercase")):
        if flag in flags:
            return DECLARE, f"{keyword} -{flag} {name}: an {what} variable changes what it stores"
    return None


def may_run_vllm(action: str, bodies: Callable[[str], Iterable[Node]]) -> str | None:
    """Whether shell code (a trap action) may run ``vllm`` or code the evaluator cannot see.

    The code is parsed, never run; the functions it calls are followed through
    ``bodies`` (every definition of that name). Returns the reason, or None.
    """
    try:
        parsed = parse_script(action, "<trap>")
    except InputError:
        return "the action is not bash the evaluator can read"
    pending: list[Node] = [parsed.root]
    seen: set[str] = set()
    while pending:
        for node in descendants(pending.pop()):
            if node.type != "command":
                continue
            name = node.child_by_field_name("name")
            if name is None:
                continue
            if any(c.type != "word" for c in descendants(name) if c is not name and c.is_named):
                return f"a command named by an expansion ({node_text(name)[:40]})"
            text = node_text(name).strip("\"'")
            if posixpath.basename(text) in _RUNS_CODE:
                return f"{text} runs other code"
            if text not in seen:
                seen.add(text)
                pending.extend(bodies(text))
    return None
