"""``provenance ingest sweeps``: record green Run Sweep runs of ledger PRs from the GitHub API."""

from __future__ import annotations

from pathlib import Path

import click
from pydantic import BaseModel, ConfigDict

from provenance.cli.options import evidence_dir_option, ledger_dir_option
from provenance.cli.runner import run
from provenance.github.sweeps import SweepIngestReport, ingest_sweeps, render_text
from provenance.sources.github import (
    API_URL_ENV,
    DEFAULT_TOKEN_ENV,
    GitHubClient,
    GitHubSettings,
    connect,
)


class SweepsOptions(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    prs: tuple[str, ...]
    ledger: Path
    token_env: str
    api_url: str | None
    output_format: str
    inferencex: Path | None = None
    evidence: Path | None = None


def run_sweeps(options: SweepsOptions) -> int:
    settings = GitHubSettings.from_environment(options.token_env)
    if options.api_url:
        settings = settings.model_copy(update={"api_url": options.api_url})
    scope = None
    if options.inferencex is not None and options.evidence is not None:
        from provenance.evidence.inferencex.sweep_scope import sweep_scope

        scope = sweep_scope(options.inferencex, options.evidence)
    github = connect(settings)
    try:
        report: SweepIngestReport = ingest_sweeps(options.ledger, options.prs, github, scope=scope)
    finally:
        if isinstance(github, GitHubClient):
            github.close()
    if options.output_format == "json":
        click.echo(report.model_dump_json(indent=2))
    else:
        click.echo(render_text(report), nl=False)
    return 0


@click.command(name="sweeps")
@click.option(
    "--pr",
    "prs",
    multiple=True,
    metavar="REPO#N",
    help="Only these ledger PRs (OWNER/REPO#N, REPO#N, or #N for SemiAnalysisAI/InferenceX). "
    "Default: every PR in the ledger.",
)
@ledger_dir_option
@evidence_dir_option("evidence")
@click.option(
    "--inferencex",
    type=click.Path(file_okay=False, exists=True, path_type=Path),
    default=None,
    metavar="PATH",
    help="InferenceX git checkout (bare or not): record which records each run's head "
    "ran (their files' content, else their re-extracted content, at the head SHA); "
    "a run validates only those.",
)
@click.option(
    "--token-env",
    default=DEFAULT_TOKEN_ENV,
    show_default=True,
    metavar="NAME",
    help="Environment variable holding the GitHub token (never pass a token itself).",
)
@click.option(
    "--api-url",
    default=None,
    metavar="URL",
    help=f"GitHub REST API URL (default: ${API_URL_ENV} or https://api.github.com).",
)
@click.option(
    "--format",
    "output_format",
    type=click.Choice(["text", "json"]),
    default="text",
    show_default=True,
)
def sweeps(
    prs: tuple[str, ...],
    ledger: Path,
    evidence: Path,
    inferencex: Path | None,
    token_env: str,
    api_url: str | None,
    output_format: str,
) -> None:
    """Record green sweep runs (run id, attempt, head SHA, conclusion) of ledger PRs.

    Only runs on commits that are in the PR count; skipped runs and reuse no-op runs
    are not green. Without a token no run is looked up (exit 0); with --inferencex the
    runs the ledger already records are still scoped. Network and API failures exit 5
    and leave the ledger untouched.
    """
    options = SweepsOptions(
        prs=prs,
        ledger=ledger,
        token_env=token_env,
        api_url=api_url,
        output_format=output_format,
        inferencex=inferencex,
        evidence=evidence,
    )
    run(lambda: run_sweeps(options))
