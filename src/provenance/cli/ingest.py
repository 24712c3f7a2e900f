"""``provenance ingest``: a group whose subcommands live in their own modules."""

from __future__ import annotations

from typing import ClassVar

import click

from provenance.cli.main import LazyGroup


class _IngestGroup(LazyGroup):
    SUBCOMMANDS: ClassVar[dict[str, tuple[str, str]]] = {
        "inferencex": ("provenance.cli.ingest_inferencex", "inferencex"),
        "sweeps": ("provenance.cli.ingest_sweeps", "sweeps"),
    }
    SUBHELP: ClassVar[dict[str, str]] = {
        "inferencex": "Extract evidence from an InferenceX git checkout (static, no execution).",
        "sweeps": "Record green sweep runs for ledger PRs from the GitHub API (needs a token).",
    }

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(self.SUBCOMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        return self._load(self.SUBCOMMANDS, self.SUBHELP, cmd_name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        with formatter.section("Commands"):
            formatter.write_dl([(n, self.SUBHELP[n]) for n in self.list_commands(ctx)])


@click.group(cls=_IngestGroup)
def ingest() -> None:
    """Ingest evidence into the ledger."""
