"""``provenance evidence``: inspect stored evidence records."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import click

from provenance.cli.options import evidence_dir_option, ledger_dir_option
from provenance.cli.runner import run
from provenance.errors import UsageError
from provenance.model.ledger import PrRef
from provenance.normalise.policy import load_policy
from provenance.report.evidence_list import EvidenceQuery, list_evidence, render_text


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
@ledger_dir_option
@evidence_dir_option("evidence_dir")
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


@evidence.command(name="index")
@ledger_dir_option
@evidence_dir_option("evidence_dir")
def index_command(ledger: Path, evidence_dir: Path) -> None:
    """Rebuild the evidence store's checkpoint index (index.json) from every record.

    Ingest keeps the index up to date; this is for a store written before it existed or
    one that an audit or verify reports stale. Holds the ledger's writer lock.
    """

    def write() -> int:
        from provenance.store.record_index import reindex

        if not evidence_dir.is_dir():
            raise UsageError(f"--evidence {evidence_dir} is not a directory")
        index, written = reindex(ledger, evidence_dir)
        click.echo(
            f"evidence index {evidence_dir / 'index.json'}: {index.records} records, "
            f"{len(index.checkpoints)} checkpoints ({'written' if written else 'unchanged'})"
        )
        return 0

    run(write)
