"""Options shared by several commands (inputs, ledger and evidence directories, and the
enumeration filters of combos/audit/cite)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

F = Callable[..., Any]


def split_list(values: tuple[str, ...]) -> tuple[str, ...] | None:
    """``("a,b", "c")`` → ``("a", "b", "c")``; nothing given → None (no restriction)."""
    items = tuple(v.strip() for value in values for v in value.split(",") if v.strip())
    return items or None


def _default_ledger() -> Path:
    from provenance.store.paths import default_dirs

    return default_dirs().ledger


def _default_evidence() -> Path:
    from provenance.store.paths import default_dirs

    return default_dirs().evidence


#: The one-line help of ``--recipes-root`` (every command that takes it).
RECIPES_ROOT_HELP = (
    "A vllm-project/recipes checkout (default: the checkout at or around the current "
    "directory, else the recipes root embedded in provenance)."
)

#: ``--ledger DIR`` of the commands that write or list the ledger (default: the embedded one).
ledger_dir_option = click.option(
    "--ledger",
    type=click.Path(file_okay=False, path_type=Path),
    default=_default_ledger,
    show_default="./ledger in a provenance checkout, else the embedded ledger",
    help="Ledger directory.",
)


def evidence_dir_option(dest: str) -> Callable[[F], F]:
    """``--evidence DIR`` of the commands that write or list the store, into ``dest``."""
    return click.option(
        "--evidence",
        dest,
        type=click.Path(file_okay=False, path_type=Path),
        default=_default_evidence,
        show_default="./evidence in a provenance checkout, else the embedded evidence",
        help="Evidence store directory.",
    )


def input_options(func: F) -> F:
    """``--recipes-root``, ``--ledger`` and ``--evidence`` (default: the recipes checkout
    at or around the current directory, and the embedded data)."""
    options = [
        click.option(
            "--recipes-root",
            type=click.Path(file_okay=False, path_type=Path),
            default=None,
            help=RECIPES_ROOT_HELP,
        ),
        click.option(
            "--ledger",
            type=click.Path(file_okay=False, path_type=Path),
            default=None,
            help="Ledger directory (default: the embedded ledger).",
        ),
        click.option(
            "--evidence",
            type=click.Path(file_okay=False, path_type=Path),
            default=None,
            help="Evidence store directory (default: the embedded evidence).",
        ),
    ]
    for option in reversed(options):
        func = option(func)
    return func


def enumeration_options(func: F) -> F:
    """``--variant/--hardware/--strategy LIST``, ``--features``, ``--pd-nodes``,
    ``--pd-pairing`` and ``--kv``, with the meaning they have in ``provenance combos``."""
    options = [
        click.option(
            "--variant", "variants", multiple=True, help="Only these variants (comma list)."
        ),
        click.option("--hardware", multiple=True, help="Only these hardware ids (comma list)."),
        click.option("--strategy", "strategies", multiple=True, help="Only these strategies."),
        click.option(
            "--features",
            type=click.Choice(["all", "default", "none"]),
            default="all",
            show_default=True,
            help="Feature subsets to enumerate.",
        ),
        click.option(
            "--pd-nodes", default="1,2,default", show_default=True, help="PD pool node counts."
        ),
        click.option(
            "--pd-pairing",
            type=click.Choice(["joint", "star"]),
            default="joint",
            show_default=True,
        ),
        click.option(
            "--kv", default="off", show_default=True, help="KV offload: off, all or a list."
        ),
    ]
    for option in reversed(options):
        func = option(func)
    return func


def audit_filters(
    variants: tuple[str, ...],
    hardware: tuple[str, ...],
    strategies: tuple[str, ...],
    features: str,
    pd_nodes: str,
    pd_pairing: str,
    kv: str,
) -> Any:
    """The parsed enumeration options as :class:`provenance.audit.pipeline.AuditFilters`."""
    from provenance.audit.pipeline import AuditFilters

    return AuditFilters(
        variants=split_list(variants),
        hardware=split_list(hardware),
        strategies=split_list(strategies),
        features=features,
        pd_nodes=pd_nodes,
        pd_pairing=pd_pairing,
        kv=kv,
    )


# ---------------------------------------------------------------------------------------
# The global options of the ``provenance`` group (declared in ``cli.main``, which
# imports nothing else at start-up; docs/cli.md, "Global options")


class Settings:
    """``-q/--quiet``, ``-v/--verbose`` and ``--color``, given before the command name;
    a command reads them with :func:`settings` (defaults when it runs without the group)."""

    def __init__(self, quiet: bool = False, verbose: int = 0, color: str = "auto") -> None:
        self.quiet = quiet
        self.verbose = 0 if quiet else verbose
        self.color = color

    def use_color(self, stream: Any) -> bool:
        """Colour on ``stream``: ``--color always|never`` decides; ``auto`` honours
        ``NO_COLOR`` (set and not empty: never), then ``FORCE_COLOR`` (set and not empty:
        always), else colours a terminal only."""
        import os

        if self.color != "auto":
            return self.color == "always"
        if os.environ.get("NO_COLOR"):
            return False
        if os.environ.get("FORCE_COLOR"):
            return True
        return bool(getattr(stream, "isatty", lambda: False)())


def settings() -> Settings:
    """The global options of the running command (defaults outside a click context)."""
    ctx = click.get_current_context(silent=True)
    found = ctx.find_object(Settings) if ctx is not None else None
    return found if found is not None else Settings()
