"""Run a core function and map the error hierarchy to exit codes (the only place that does)."""

from __future__ import annotations

import sys
from collections.abc import Callable

import click

from provenance.errors import EXIT_OK, ProvenanceError


def run(action: Callable[[], int | None]) -> None:
    """Call ``action``; exit with its return code, or with the code of the error it raised.

    Errors are printed as their own diagnostic on stderr, never as a traceback.
    """
    try:
        code = action()
    except ProvenanceError as exc:
        click.echo(exc.diagnostic(), err=True)
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        click.echo("interrupted", err=True)
        sys.exit(130)
    sys.exit(EXIT_OK if code is None else code)
