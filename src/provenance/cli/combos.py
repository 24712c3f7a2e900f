"""``provenance combos``: every selectable combination of a recipe with its argv and env."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Literal

import click

from provenance.cli.options import RECIPES_ROOT_HELP
from provenance.cli.runner import run
from provenance.errors import UsageError
from provenance.model.combination import Combination
from provenance.recipes.combos import CombosRequest, list_combinations
from provenance.recipes.enumerate.selections import EnumerationOptions
from provenance.recipes.render.records import combination_record


def _split(value: str | None) -> tuple[str, ...] | None:
    if value is None:
        return None
    items = tuple(part.strip() for part in value.split(",") if part.strip())
    return items or None


def _instances(value: str) -> tuple[int, ...] | None:
    if value.strip() in ("", "default"):
        return None
    counts = []
    for part in value.split(","):
        try:
            count = int(part)
        except ValueError:
            count = 0
        if not 1 <= count <= 16:
            raise UsageError(f"--kv-instances: {part.strip()!r} is not an integer in 1..16")
        counts.append(count)
    return tuple(counts)


def write_jsonl(combinations: Iterable[Combination]) -> int:
    out = sys.stdout
    count = 0
    for combo in combinations:
        record = combination_record(combo.recipe, combo.selection, combo.result)
        out.write(json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n")
        count += 1
    return count


def _layout(combo: Combination) -> str:
    selection = combo.selection
    if selection.pd is not None:
        p, d = selection.pd.prefill, selection.pd.decode
        return f"P {p.nodes}×{p.parallelism} / D {d.nodes}×{d.parallelism}"
    if selection.node_count is None:
        return ""
    return f"{selection.node_count} node" + ("s" if selection.node_count > 1 else "")


def _features(combo: Combination) -> str:
    parts = []
    for name in combo.selection.features:
        mode = combo.selection.feature_modes.get(name)
        parts.append(f"{name}={mode}" if mode else name)
    return ", ".join(parts) or "-"


def _command(combo: Combination) -> str:
    lines = []
    for role in combo.result.roles:
        label = role.role if role.node_rank is None else f"{role.role}[{role.node_rank}]"
        text = " ".join(role.argv) if role.argv is not None else (role.command or "")
        env = " ".join(f"{k}={v}" for k, v in role.env.items())
        lines.append(f"{label}: {env + ' ' if env else ''}{text}")
    return "\n".join(lines)


def write_table(combinations: Iterable[Combination], *, title: str) -> int:
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    from provenance.escaping import terminal

    # recipe values (variant names, argv) are untrusted: no escapes, no rich markup
    table = Table(title=Text(terminal(title)), show_lines=True)
    for column in ("#", "variant", "hardware", "strategy", "layout", "kv", "features"):
        table.add_column(column, no_wrap=column != "features")
    table.add_column("command per role", overflow="fold")
    count = 0
    for count, combo in enumerate(combinations, start=1):
        s = combo.selection
        cells = (
            str(count),
            s.variant,
            s.hardware,
            s.strategy or "(omni)",
            _layout(combo),
            s.kv_offload or "off",
            _features(combo),
            _command(combo),
        )
        table.add_row(*(Text(terminal(cell)) for cell in cells))
    console = Console(soft_wrap=False)
    console.width = max(console.width, 180)
    console.print(table)
    return count


def run_combos(request: CombosRequest, output_format: Literal["jsonl", "table"]) -> int:
    listing = list_combinations(request)
    if output_format == "table":
        write_table(listing.combinations, title=f"{listing.recipe.hf_id} combinations")
    else:
        write_jsonl(listing.combinations)
    return 0


@click.command(name="combos")
@click.argument("recipe")
@click.option(
    "--recipes-root",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help=RECIPES_ROOT_HELP,
)
@click.option("--variant", "variants", default=None, help="Only these variants (comma list).")
@click.option("--hardware", default=None, help="Only these hardware ids (comma list).")
@click.option("--strategy", "strategies", default=None, help="Only these strategies (comma list).")
@click.option(
    "--features",
    type=click.Choice(["all", "default", "none"]),
    default="all",
    show_default=True,
    help="all: every reachable feature subset and mode; default: the landing set; none.",
)
@click.option(
    "--pd-nodes",
    default="1,2,default",
    show_default=True,
    help="PD pool node counts per role: numbers 1-16 and/or 'default', or 'all'.",
)
@click.option(
    "--pd-pairing",
    type=click.Choice(["joint", "star"]),
    default="joint",
    show_default=True,
    help="joint: every prefill × decode pool; star: vary one role, the other at its default.",
)
@click.option(
    "--kv",
    default="off",
    show_default=True,
    help="KV offload row: off, all, or a comma list of option / Mooncake topology ids.",
)
@click.option(
    "--kv-instances",
    default="default",
    show_default=True,
    help="Mooncake instance counts: 'default' (the topology's) or a comma list of 1-16.",
)
@click.option(
    "--features-exact",
    default=None,
    help="Render exactly this ordered feature list (argv order follows it).",
)
@click.option(
    "--format",
    "output_format",
    type=click.Choice(["jsonl", "table"]),
    default="jsonl",
    show_default=True,
)
def combos(
    recipe: str,
    recipes_root: Path | None,
    variants: str | None,
    hardware: str | None,
    strategies: str | None,
    features: Literal["all", "default", "none"],
    pd_nodes: str,
    pd_pairing: Literal["joint", "star"],
    kv: str,
    kv_instances: str,
    features_exact: str | None,
    output_format: Literal["jsonl", "table"],
) -> None:
    """List every selectable combination of RECIPE (Org/Name or a YAML path) with argv and env.

    The jsonl records carry the same selection and result as the recipes-oracle's output.
    """
    run(
        lambda: run_combos(
            CombosRequest(
                recipe=recipe,
                recipes_root=recipes_root,
                options=EnumerationOptions(
                    variants=_split(variants),
                    hardware=_split(hardware),
                    strategies=_split(strategies),
                    features=features,
                    features_exact=(
                        tuple(_split(features_exact) or ()) if features_exact is not None else None
                    ),
                    pd_nodes=pd_nodes,
                    pd_pairing=pd_pairing,
                    kv=kv.strip() or "off",
                    kv_instances=_instances(kv_instances),
                ),
            ),
            output_format,
        )
    )
