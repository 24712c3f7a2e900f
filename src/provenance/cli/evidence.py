"""``provenance evidence``: inspect stored evidence records."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import click

from provenance.cli.runner import run
from provenance.evidence.listing import EvidenceQuery, list_evidence, render_text
from provenance.flags.policy import load_policy
from provenance.ledger.model import PrRef
from provenance.ledger.paths import default_dirs


@click.group(name="evidence")
def evidence() -> None:
    """Inspect stored evidence records."""


def _list(query: EvidenceQuery, output_format: str) -> Callable[[], int]:
    def action() -> int:
        views = list_evidence(query, load_policy(Path.cwd()))
        if output_format == "json":
            data = [v.model_dump(mode="json", by_alias=True) for v in views]
            click.echo(json.dumps(data, indent=2, ensure_ascii=False))
        else:
            click.echo(render_text(views), nl=False)
        return 0

    return action


@evidence.command(name="list")
@click.option("--key", default=None, metavar="GLOB", help="Only config keys matching GLOB.")
@click.option(
    "--pr",
    default=None,
    metavar="N",
    help="Only records the ledger entry of this PR references (N, #N or OWNER/REPO#N).",
)
@click.option("--hardware", default=None, help="Only this hardware id (b200, b300, mi355x …).")
@click.option(
    "--ledger",
    type=click.Path(file_okay=False, path_type=Path),
    default=lambda: default_dirs().ledger,
    show_default="ledger",
    help="Ledger directory.",
)
@click.option(
    "--evidence",
    "evidence_dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=lambda: default_dirs().evidence,
    show_default="evidence",
    help="Evidence store directory.",
)
@click.option(
    "--format",
    "output_format",
    type=click.Choice(["text", "json"]),
    default="text",
    show_default=True,
)
def list_command(
    key: str | None,
    pr: str | None,
    hardware: str | None,
    ledger: Path,
    evidence_dir: Path,
    output_format: str,
) -> None:
    """List stored evidence records: source, points, topology, per-role flags, PRs."""

    def parse_and_list() -> int:
        query = EvidenceQuery(
            key=key,
            pr=PrRef.parse(pr) if pr is not None else None,
            hardware=hardware,
            ledger=ledger,
            evidence=evidence_dir,
        )
        return _list(query, output_format)()

    run(parse_and_list)
