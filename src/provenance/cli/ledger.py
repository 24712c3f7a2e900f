"""``provenance ledger add-sweep``, ``provenance ledger reverts`` and ``provenance verify``."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, get_args

import click
from pydantic import ValidationError

from provenance.cli.runner import run
from provenance.errors import EXIT_OK, UsageError
from provenance.model.ledger import Conclusion, PrRef, SweepRun
from provenance.store.paths import default_dirs

_ledger_option = click.option(
    "--ledger",
    "ledger_dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Ledger directory (default: ./ledger in a provenance checkout, else the embedded ledger).",
)

_wait_option = click.option(
    "--wait",
    "lock_timeout",
    type=click.FloatRange(min=0),
    default=10.0,
    show_default=True,
    help="Seconds to wait for another writer to release the ledger lock.",
)


@click.group()
def ledger() -> None:
    """Edit the ledger by hand (facts from review threads)."""


@ledger.command("add-sweep")
@click.option("--pr", "pr_text", required=True, help="The evidence PR, OWNER/REPO#N.")
@click.option("--run", "run_id", required=True, type=click.IntRange(min=1), help="Run id.")
@click.option("--attempt", required=True, type=click.IntRange(min=1), help="Run attempt.")
@click.option("--head", "head_sha", required=True, help="Head commit SHA the sweep ran on.")
@click.option(
    "--conclusion",
    required=True,
    type=click.Choice(list(get_args(Conclusion))),
    help="The run's conclusion.",
)
@click.option(
    "--source",
    default="manual",
    show_default=True,
    help="Where the fact comes from (e.g. review-thread:<url>).",
)
@click.option("--url", default=None, help="URL of the run.")
@click.option("--workflow", default="Run Sweep", show_default=True, help="Workflow name.")
@click.option(
    "--eval",
    "evals",
    multiple=True,
    metavar="NAME=LOW..HIGH",
    help="An eval score range (repeatable).",
)
@_ledger_option
@_wait_option
def add_sweep_command(
    pr_text: str,
    run_id: int,
    attempt: int,
    head_sha: str,
    conclusion: str,
    source: str,
    url: str | None,
    workflow: str,
    evals: tuple[str, ...],
    ledger_dir: Path | None,
    lock_timeout: float,
) -> None:
    """Record a sweep run for a PR by hand, creating its ledger entry if needed."""

    def action() -> int:
        from provenance.store.sweeps import add_sweep, parse_eval

        pr = PrRef.parse(pr_text)
        try:
            sweep = SweepRun(
                run_id=run_id,
                attempt=attempt,
                head_sha=head_sha.strip().lower(),
                conclusion=conclusion,
                workflow=workflow,
                url=url,
                evals=tuple(parse_eval(text, source) for text in evals),
                source=source,
                recorded=dt.datetime.now(dt.UTC).date(),
            )
        except ValidationError as exc:
            error = exc.errors()[0]
            raise UsageError(f"{'.'.join(map(str, error['loc']))}: {error['msg']}") from None
        result = add_sweep(
            ledger_dir or default_dirs().ledger, pr, sweep, lock_timeout=lock_timeout
        )
        if not result.changed:
            click.echo(f"{result.pr}: run {run_id} attempt {attempt} already recorded")
        else:
            created = " (new entry)" if result.created_entry else ""
            click.echo(
                f"{result.pr}: recorded run {run_id} attempt {attempt} in {result.path}{created}"
            )
        return EXIT_OK

    run(action)


@ledger.command("reverts")
@click.option(
    "--inferencex",
    "inferencex",
    required=True,
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="An InferenceX git clone (bare or not).",
)
@click.option("--rev", default=None, help="Revision (default: the ledger manifest's).")
@_ledger_option
@_wait_option
def reverts_command(
    inferencex: Path, rev: str | None, ledger_dir: Path | None, lock_timeout: float
) -> None:
    """Record which PRs were reverted or re-landed on the ledger's entries (no re-ingest)."""

    def action() -> int:
        from provenance.ingest.reverts import record_reverts, render_reverts

        report = record_reverts(inferencex, ledger_dir or default_dirs().ledger, rev, lock_timeout)
        click.echo(render_reverts(report), nl=False)
        return EXIT_OK

    run(action)


@click.command()
@_ledger_option
@click.option(
    "--evidence",
    "evidence_dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help=(
        "Evidence store directory (default: ./evidence in a provenance checkout, else the "
        "embedded evidence)."
    ),
)
@click.option(
    "--inferencex",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    default=None,
    help="InferenceX git checkout (bare or not): check cited blobs and re-extract records.",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "json"]),
    default="text",
    show_default=True,
)
def verify(
    ledger_dir: Path | None, evidence_dir: Path | None, inferencex: Path | None, fmt: str
) -> None:
    """Verify ledger and evidence integrity; exit 4 on any corrupt, dangling or suspect record."""

    def action() -> int:
        from provenance.store.verify import render_text
        from provenance.store.verify import verify as run_verify

        extractor: Callable[..., Any] | None = None
        if inferencex is not None:  # the extractor is imported only when it is used
            from provenance.evidence.inferencex.ingest import extract

            extractor = extract

        defaults = default_dirs()
        report = run_verify(
            ledger_dir or defaults.ledger,
            evidence_dir or defaults.evidence,
            inferencex,
            extract=extractor,
        )
        if fmt == "json":
            click.echo(json.dumps(report.model_dump(mode="json", by_alias=True), indent=2))
        else:
            click.echo(render_text(report), nl=False)
        return report.exit_code

    run(action)
