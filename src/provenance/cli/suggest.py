"""``provenance suggest``: the smallest recipe edits the evidence backs, each proven."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from provenance.cli.options import audit_filters, enumeration_options, input_options, settings
from provenance.cli.runner import run
from provenance.errors import EXIT_OK


@click.command()
@click.argument("recipe")
@input_options
@enumeration_options
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "json", "markdown", "diff"]),
    default="text",
    show_default=True,
    help="diff: the proposed edit alone (only edits that cost no user anything), for `git apply`.",
)
@click.option(
    "--output", type=click.Path(dir_okay=False, path_type=Path), default=None, help="Write here."
)
def suggest(
    recipe: str,
    recipes_root: Path | None,
    ledger: Path | None,
    evidence: Path | None,
    variants: tuple[str, ...],
    hardware: tuple[str, ...],
    strategies: tuple[str, ...],
    features: str,
    pd_nodes: str,
    pd_pairing: str,
    kv: str,
    fmt: str,
    output: Path | None,
) -> None:
    """Propose the smallest edits of RECIPE that make combinations recommended.

    Each edit is applied to a copy of the recipe, re-rendered with the ported
    builder and re-audited before it is printed, with what it gains and what it
    costs. Flags written where no evidence backs them are scoped to where it does;
    where the schema cannot express that, or no edit can reach evidence, it says
    why and which benchmark would be needed.
    """

    def action() -> int:
        from provenance.cli.progress import progress_for
        from provenance.report.suggest import write
        from provenance.review.suggest.run import SuggestRequest, run_suggest

        request = SuggestRequest(
            recipe=recipe,
            recipes_root=recipes_root,
            ledger=ledger,
            evidence=evidence,
            filters=audit_filters(
                variants, hardware, strategies, features, pd_nodes, pd_pairing, kv
            ),
        )
        with progress_for(settings(), sys.stderr) as progress:
            report = run_suggest(request, progress)
        if output is None:
            write(report, fmt, sys.stdout)
        else:
            from provenance.store.atomic import output_text_stream

            with output_text_stream(output) as out:
                write(report, fmt, out)
        return EXIT_OK

    run(action)
