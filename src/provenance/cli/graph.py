"""``provenance graph``: export the evidence graph (node-link JSON, GraphML, DOT)."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from provenance.cli.options import input_options
from provenance.cli.runner import run
from provenance.errors import EXIT_OK


@click.command()
@click.option("--format", "fmt", type=click.Choice(["json", "graphml", "dot"]), default="json")
@click.option(
    "--recipe",
    "recipes",
    multiple=True,
    help="Also add the recipe's combinations (one node per distinct outcome).",
)
@input_options
@click.option("--output", type=click.Path(dir_okay=False, path_type=Path), default=None)
def graph(
    fmt: str,
    recipes: tuple[str, ...],
    recipes_root: Path | None,
    ledger: Path | None,
    evidence: Path | None,
    output: Path | None,
) -> None:
    """Export the evidence graph: flags, evidence, configs, PRs, sweeps, commits, combinations."""

    def action() -> int:
        from provenance.audit.pipeline import AuditInputs
        from provenance.report.graph_export import (
            export_graph,
            to_dot,
            to_node_link_json,
            write_graphml,
        )

        exported = export_graph(
            AuditInputs(
                recipes=recipes, recipes_root=recipes_root, ledger=ledger, evidence=evidence
            ),
            with_recipes=bool(recipes),
        )
        if fmt == "graphml":
            if output is None:
                write_graphml(exported, sys.stdout.buffer)
            else:
                from provenance.store.atomic import output_binary_stream

                with output_binary_stream(output) as handle:
                    write_graphml(exported, handle)
            return EXIT_OK
        if fmt == "dot":
            text = to_dot(exported)
        else:
            import json

            text = json.dumps(to_node_link_json(exported), indent=1, sort_keys=True) + "\n"
        if output is None:
            click.echo(text, nl=False)
        else:
            from provenance.store.atomic import output_text_stream

            with output_text_stream(output) as out:
                out.write(text)
        return EXIT_OK

    run(action)
