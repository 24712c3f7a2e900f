"""Run a core function and map the error hierarchy to exit codes (the only place that does)."""

from __future__ import annotations

import sys
import warnings
from collections.abc import Callable
from typing import TextIO

import click

from provenance.errors import EXIT_OK, WRITE_ERRNOS, ProvenanceError, ProvenanceWarning, WriteError


def run(action: Callable[[], int | None]) -> None:
    """Call ``action``; exit with its return code, or with the code of the error it raised.

    Errors are printed as their own diagnostic on stderr, never as a traceback; so is
    every :class:`~provenance.errors.ProvenanceWarning` the core emits, one line each,
    when it is emitted. A write the system refused (disk full, read-only file system)
    that reached here unnamed is a :class:`~provenance.errors.WriteError` too.
    """
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("always", ProvenanceWarning)
            shown = warnings.showwarning

            def show(
                message: Warning | str,
                category: type[Warning],
                filename: str,
                lineno: int,
                file: TextIO | None = None,
                line: str | None = None,
            ) -> None:
                if isinstance(message, ProvenanceWarning):
                    click.echo(message.diagnostic(), err=True)
                else:
                    shown(message, category, filename, lineno, file, line)

            warnings.showwarning = show
            code = action()
    except ProvenanceError as exc:
        _fail(exc)
    except OSError as exc:
        if exc.errno not in WRITE_ERRNOS:
            raise
        # every file the core writes is named (store.atomic); an unnamed one is stdout
        _fail(WriteError.from_os_error(exc, exc.filename or "standard output"))
    except KeyboardInterrupt:
        click.echo("interrupted", err=True)
        sys.exit(130)
    sys.exit(EXIT_OK if code is None else code)


def _fail(exc: ProvenanceError) -> None:
    click.echo(exc.diagnostic(), err=True)
    sys.exit(exc.exit_code)
