"""``provenance cite``: print the PR-body citations block."""

from __future__ import annotations

from pathlib import Path

import click

from provenance.cli.options import audit_filters, enumeration_options, input_options
from provenance.cli.runner import run


@click.command()
@click.argument("recipes", nargs=-1)
@input_options
@click.option(
    "--repo",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    default=None,
    help="A recipes git repository: cite only the combinations the PR (--base..--head) "
    "adds or changes.",
)
@click.option("--base", default=None, help="Base revision of the PR.")
@click.option("--head", default=None, help="Head revision of the PR.")
@click.option("--lang", default="en", show_default=True, help="en, zh or en,zh.")
@enumeration_options
def cite(
    recipes: tuple[str, ...],
    recipes_root: Path | None,
    ledger: Path | None,
    evidence: Path | None,
    repo: Path | None,
    base: str | None,
    head: str | None,
    lang: str,
    variants: tuple[str, ...],
    hardware: tuple[str, ...],
    strategies: tuple[str, ...],
    features: str,
    pd_nodes: str,
    pd_pairing: str,
    kv: str,
) -> None:
    """Print a markdown citations block for a recipe PR body.

    Each evidence PR with what it backs (flags, variants, hardware, roles) and its
    sweep runs, then the guide-only combinations with their reasons. With --repo, only
    the evidence behind the combinations the PR adds or changes is cited.
    """

    def action() -> int:
        from provenance.review.cite import CiteRequest, cite, parse_langs

        request = CiteRequest(
            recipes=recipes,
            recipes_root=recipes_root,
            ledger=ledger,
            evidence=evidence,
            repo=repo,
            base=base,
            head=head,
            langs=parse_langs(lang),
            filters=audit_filters(
                variants, hardware, strategies, features, pd_nodes, pd_pairing, kv
            ),
        )
        click.echo(cite(request), nl=False)
        return 0

    run(action)
