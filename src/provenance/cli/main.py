"""Entry point: a lazily loaded click group, so start-up imports only what a command needs.

Each subcommand lives in its own module under ``provenance.cli`` and exposes a
click command object; the table below maps command names to ``module:attr``.
"""

from __future__ import annotations

import atexit
import importlib
import os
import sys
from typing import NoReturn

import click

from provenance import __version__
from provenance.cli.lifetime import keep_until_exit

#: command name -> "module:attribute" of the click command implementing it.
COMMANDS: dict[str, tuple[str, str]] = {
    "audit": (
        "provenance.cli.audit",
        "audit",
    ),
    "explain": ("provenance.cli.audit", "explain"),
    "combos": ("provenance.cli.combos", "combos"),
    "flags": ("provenance.cli.flags", "flags"),
    "ingest": ("provenance.cli.ingest", "ingest"),
    "evidence": ("provenance.cli.evidence", "evidence"),
    "ledger": ("provenance.cli.ledger", "ledger"),
    "verify": ("provenance.cli.ledger", "verify"),
    "graph": ("provenance.cli.graph", "graph"),
    "cite": ("provenance.cli.cite", "cite"),
    "suggest": ("provenance.cli.suggest", "suggest"),
    "schema": ("provenance.cli.schema", "schema"),
}

HELP = {
    "audit": "Audit recipes against the evidence ledger: recommended or guide-only.",
    "explain": "Explain the verdict for one combination, step by step.",
    "combos": "List every selectable combination of a recipe with its argv and env.",
    "flags": "Show the canonical FlagSet of a command line or srt-slurm YAML.",
    "ingest": "Ingest evidence (InferenceX checkout, sweep runs) into the ledger.",
    "evidence": "Inspect stored evidence records.",
    "ledger": "Edit the ledger by hand (sweeps from review threads).",
    "verify": "Verify ledger and evidence integrity (hashes, references, blobs).",
    "graph": "Export the evidence graph (json, graphml, dot).",
    "cite": "Print the PR-body citations block (en / zh).",
    "suggest": "Propose the smallest recipe edits that evidence backs, each proven.",
    "schema": "Print the JSON Schema of an output or ledger file kind.",
}


class LazyGroup(click.Group):
    """A click group that imports a subcommand's module only when it is invoked."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        return self._load(COMMANDS, HELP, cmd_name)

    @staticmethod
    def _load(
        table: dict[str, tuple[str, str]], helps: dict[str, str], cmd_name: str
    ) -> click.Command | None:
        target = table.get(cmd_name)
        if target is None:
            return None
        module_name, attr = target
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if exc.name != module_name:
                raise
            return _unavailable(cmd_name, helps.get(cmd_name, ""))
        command = getattr(module, attr)
        if not isinstance(command, click.Command):
            raise TypeError(f"{module_name}:{attr} is not a click command")
        return command

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(name, HELP.get(name, "")) for name in self.list_commands(ctx)]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


def _unavailable(name: str, help_text: str) -> click.Command:
    @click.command(name=name, help=help_text)
    def _cmd() -> None:
        click.echo(f"provenance {name}: not available in this build", err=True)
        sys.exit(2)

    return _cmd


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="provenance")
def cli() -> None:
    """provenance: prove every flag of a vLLM serving recipe was benchmarked."""


def main(argv: list[str] | None = None) -> NoReturn:
    """The console script: run the command, flush its output, and leave at once.

    A finished command has nothing left to clean up (every file it wrote was
    closed by its ``with`` block, every temporary directory removed as the
    exception or return unwound it), so the process ends with ``os._exit``
    after running the ``atexit`` handlers and flushing stdout and stderr,
    instead of letting the interpreter free every object one by one: after a
    full audit that teardown alone costs about 0.1 s. Under a profiler, tracer
    or debugger it ends normally, so they can report. An exception other than
    ``SystemExit`` (a bug) still ends in the normal traceback. Tests drive
    ``cli`` through click's runner, never this.

    For the same reason, what a command builds and drops just before it ends is kept
    instead of freed (:mod:`provenance.cli.lifetime`).
    """
    keep_until_exit()
    try:
        cli.main(args=argv, prog_name="provenance")
        code = 0
    except SystemExit as exc:
        code = exit_status(exc.code)
    _leave(code)


def exit_status(code: object) -> int:
    """The process status ``sys.exit(code)`` would give (a message is printed, status 1)."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    print(code, file=sys.stderr)
    return 1


def _leave(code: int) -> NoReturn:
    if sys.getprofile() is not None or sys.gettrace() is not None:
        sys.exit(code)  # a profiler, tracer or debugger reports when the interpreter ends
    status = code
    atexit._run_exitfuncs()  # what the interpreter would run first
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe: the reader has gone away
            status = status or 1
    os._exit(status)
