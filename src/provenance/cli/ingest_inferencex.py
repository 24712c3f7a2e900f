"""``provenance ingest inferencex``: evidence from an InferenceX git repository (static)."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import click

from provenance.cli.options import evidence_dir_option, ledger_dir_option
from provenance.cli.runner import run
from provenance.escaping import terminal
from provenance.evidence.inferencex.extractor import Progress
from provenance.ingest.inferencex import IngestOptions, ingest_inferencex, render_report
from provenance.store.paths import CACHE_ENV, default_cache_dir

#: Seconds between two plain progress lines (stderr not a terminal).
PLAIN_PROGRESS_EVERY = 10.0


def _plain_progress() -> Progress:
    """A line on stderr every PLAIN_PROGRESS_EVERY seconds (a quick ingest prints none)."""
    last = [time.monotonic()]

    def update(done: int, total: int, what: str) -> None:
        now = time.monotonic()
        if now - last[0] < PLAIN_PROGRESS_EVERY:
            return
        last[0] = now
        click.echo(f"ingest: {done}/{total} {terminal(what)}", err=True)

    return update


@contextmanager
def _progress_bar(terminal_attached: bool) -> Iterator[Progress | None]:
    """A rich progress bar on stderr when it is a terminal; otherwise plain periodic lines."""
    if not terminal_attached:
        yield _plain_progress()
        return
    from rich.console import Console
    from rich.markup import escape
    from rich.progress import BarColumn, MofNCompleteColumn, TextColumn
    from rich.progress import Progress as Bar

    with Bar(
        TextColumn("extracting"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.description}"),
        console=Console(stderr=True),
        transient=True,
    ) as bar:
        task = bar.add_task("", total=None)

        def update(done: int, total: int, what: str) -> None:
            # a config key is untrusted text: no rich markup, no terminal escapes
            bar.update(task, completed=done, total=total, description=escape(terminal(what)))

        yield update


def _run(options: IngestOptions, output_format: str, show_progress: bool) -> Callable[[], int]:
    def action() -> int:
        with _progress_bar(show_progress) as progress:
            report = ingest_inferencex(options, progress)
        if output_format == "json":
            click.echo(report.model_dump_json(indent=2))
        else:
            click.echo(render_report(report), nl=False)
        return 0

    return action


@click.command(name="inferencex")
@click.argument("path", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--rev", default="HEAD", show_default=True, help="Revision to read.")
@click.option("--model-prefix", default=None, help="Only config keys with this model-prefix.")
@click.option("--keys", default=None, metavar="GLOB", help="Only config keys matching GLOB.")
@click.option(
    "--pr",
    "prs",
    type=click.IntRange(min=1),
    multiple=True,
    metavar="N",
    help="Ingest PR N at its merge commit (found on REV's first-parent history); repeatable.",
)
@click.option(
    "--vllm-history",
    is_flag=True,
    help="Ingest every merge on REV's first-parent history whose diff changed vLLM evidence "
    "(planned from git alone), each at its merge commit; records the revision in the manifest.",
)
@click.option(
    "--since-ledger",
    is_flag=True,
    help="Like --vllm-history, but only the merges newer than the InferenceX revision "
    "in the ledger's manifest.yaml.",
)
@click.option(
    "--jobs",
    type=click.IntRange(min=1),
    default=None,
    help="Extraction processes for several commits  [default: one per core]",
)
@ledger_dir_option
@evidence_dir_option("evidence")
@click.option(
    "--cache-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=default_cache_dir,
    show_default=f"${CACHE_ENV}, else $XDG_CACHE_HOME/provenance, else ~/.cache/provenance",
    help="Extraction cache directory (local, never part of the ledger; safe to delete).",
)
@click.option(
    "--no-cache",
    is_flag=True,
    help="Extract every commit again; neither read nor write the extraction cache.",
)
@click.option(
    "--format",
    "output_format",
    type=click.Choice(["text", "json"]),
    default="text",
    show_default=True,
    help="Summary format.",
)
def inferencex(
    path: Path,
    rev: str,
    model_prefix: str | None,
    keys: str | None,
    prs: tuple[int, ...],
    vllm_history: bool,
    since_ledger: bool,
    jobs: int | None,
    ledger: Path,
    evidence: Path,
    cache_dir: Path,
    no_cache: bool,
    output_format: str,
) -> None:
    """Extract evidence records from the InferenceX repository at PATH (never executed).

    Reads master configs, single-node launchers and srt-slurm recipes with git
    (PATH may be a work tree or a bare mirror; nothing is checked out), writes
    one record per evidence point into the evidence store, then the PRs that
    back them into the ledger. Running it again writes nothing new.

    Each commit's extraction is kept in a local cache keyed by the commit, the
    filters, the PR and the extractor's source, so a re-run reuses it instead
    of extracting again (``--no-cache`` to bypass it). A killed run resumes
    from there. Progress goes to stderr: a bar on a terminal, else a line every
    few seconds.
    """
    options = IngestOptions(
        repo=path,
        rev=rev,
        model_prefix=model_prefix,
        keys=keys,
        prs=prs,
        vllm_history=vllm_history,
        since_ledger=since_ledger,
        jobs=jobs,
        ledger=ledger,
        evidence=evidence,
        cache_dir=None if no_cache else cache_dir,
    )
    run(_run(options, output_format, sys.stderr.isatty()))
