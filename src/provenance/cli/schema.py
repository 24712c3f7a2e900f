"""``provenance schema KIND``: print the JSON Schema of an output or ledger file kind."""

from __future__ import annotations

import click

from provenance.cli.runner import run
from provenance.errors import EXIT_OK
from provenance.schemas import KINDS


@click.command()
@click.argument("kind", type=click.Choice(sorted(KINDS)))
def schema(kind: str) -> None:
    """Print the JSON Schema of KIND (generated from the models, by alias)."""

    def action() -> int:
        from provenance.schemas import render

        click.echo(render(kind), nl=False)
        return EXIT_OK

    run(action)
