"""``provenance flags``: print the canonical FlagSet of a command line or srt-slurm YAML."""

from __future__ import annotations

import json
import re
from pathlib import Path

import click
from pydantic import BaseModel, ConfigDict

from provenance.cli.runner import run
from provenance.errors import UsageError
from provenance.normalise.canonical import ConfigMerge
from provenance.normalise.show import FlagsView, PolicyView, show_argv, show_policy, show_srt_slurm

_ASSIGNMENT = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)=(.*)", re.DOTALL)


class FlagsOptions(BaseModel):
    """The parsed options of ``provenance flags``."""

    model_config = ConfigDict(frozen=True)

    argv: tuple[str, ...]
    env: tuple[str, ...]
    yaml_path: Path | None
    role: str | None
    repo: Path | None
    merge: ConfigMerge
    output_format: str
    why: bool
    list_policy: bool


def _split_env(
    assignments: tuple[str, ...], argv: tuple[str, ...]
) -> tuple[dict[str, str], list[str]]:
    """``--env`` pairs plus the argv's leading ``NAME=value`` words (as a shell reads them)."""
    env: dict[str, str] = {}
    for pair in assignments:
        match = _ASSIGNMENT.fullmatch(pair)
        if match is None:
            raise UsageError(f"--env expects NAME=VALUE, not {pair!r}")
        env[match.group(1)] = match.group(2)
    rest = list(argv)
    while rest and (match := _ASSIGNMENT.fullmatch(rest[0])) is not None:
        env[match.group(1)] = match.group(2)
        rest.pop(0)
    return env, rest


def build_view(options: FlagsOptions) -> FlagsView | PolicyView:
    """Parse, normalise and classify what the options name (the one core call)."""
    from provenance.normalise.policy import load_policy

    policy = load_policy(options.repo)
    if options.list_policy:
        if options.argv or options.env or options.yaml_path is not None:
            raise UsageError("--policy lists the policy; give no argv or --yaml with it")
        return show_policy(policy)
    if options.yaml_path is not None:
        if options.argv or options.env:
            raise UsageError("give either --yaml FILE or an argv after --, not both")
        return show_srt_slurm(
            options.yaml_path, role=options.role, policy=policy, merge=options.merge
        )
    env, argv = _split_env(options.env, options.argv)
    if not argv:
        raise UsageError("nothing to show: give an argv after -- or --yaml FILE")
    return show_argv(argv, env, role=options.role, policy=policy, merge=options.merge)


def render_text(view: FlagsView, *, why: bool) -> None:
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    from provenance.escaping import terminal

    console = Console(highlight=False, soft_wrap=True)
    if why:
        console.width = max(console.width, 180)
    if view.source:
        console.print(f"source: {terminal(view.source)}", markup=False)
    for role in view.roles:
        head = [f"role: {role.role or '-'}", f"model: {role.model or '-'}"]
        if role.served_model_name:
            head.append(f"served-model-name: {role.served_model_name}")
        if role.host:
            head.append(f"host: {role.host}")
        if role.port:
            head.append(f"port: {role.port}")
        # values come from scripts and YAML: no escape sequences, no rich markup
        console.print(terminal("  ".join(head)), markup=False)
        table = Table(show_header=True, header_style="bold", box=None, pad_edge=False)
        table.add_column("key", no_wrap=True)
        table.add_column("value", overflow="fold")
        table.add_column("class", no_wrap=True)
        if why:
            table.add_column("basis", overflow="fold")
        for row in role.flags:
            cells = [row.key, row.value, row.flag_class.value]
            if why:
                cells.append(row.basis)
            table.add_row(*(Text(terminal(cell)) for cell in cells))
        console.print(table)
        counts: dict[str, int] = {}
        for row in role.flags:
            counts[row.flag_class.value] = counts.get(row.flag_class.value, 0) + 1
        summary = ", ".join(f"{n} {cls}" for cls, n in sorted(counts.items()))
        console.print(f"{len(role.flags)} flags ({summary or 'none'})", markup=False)
        for note in role.notes:
            console.print(f"note: {terminal(note)}", markup=False)
        console.print("", markup=False)


def render_policy_text(view: PolicyView) -> None:
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    from provenance.escaping import terminal

    console = Console(highlight=False, soft_wrap=True)
    console.width = max(console.width, 180)
    console.print(
        f"policy: {terminal(view.policy)}  (keys no rule names: {view.unknown_keys.value})",
        markup=False,
    )
    table = Table(show_header=True, header_style="bold", box=None, pad_edge=False)
    for column in ("pattern", "class", "basis"):
        table.add_column(column, overflow="fold")
    for rule in view.rules:
        cells = (rule.pattern, rule.flag_class.value, rule.basis)
        table.add_row(*(Text(terminal(cell)) for cell in cells))
    console.print(table)


def _execute(options: FlagsOptions) -> int:
    view = build_view(options)
    if options.output_format == "json":
        payload = view.model_dump(mode="json", by_alias=True)
        click.echo(json.dumps(payload, indent=2, ensure_ascii=False))
    elif isinstance(view, PolicyView):
        render_policy_text(view)
    else:
        render_text(view, why=options.why)
    return 0


@click.command(
    name="flags",
    context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False},
)
@click.option(
    "--yaml",
    "yaml_path",
    type=click.Path(path_type=Path, dir_okay=False, exists=True),
    help="An srt-slurm recipe YAML (backend.vllm_config.<role>, backend.<role>_environment).",
)
@click.option("--role", help="Role label for an argv; with --yaml, the one role to show.")
@click.option(
    "--env",
    "env",
    multiple=True,
    metavar="NAME=VALUE",
    help="An environment variable of the command (repeatable).",
)
@click.option(
    "--repo",
    type=click.Path(path_type=Path, file_okay=False, exists=True),
    help="Read policy overrides from this repository (provenance.toml or pyproject.toml).",
)
@click.option(
    "--merge",
    type=click.Choice([m.value for m in ConfigMerge]),
    default=ConfigMerge.VLLM.value,
    show_default=True,
    help="How a JSON config and dotted overrides of it combine (see docs/flags.md).",
)
@click.option(
    "--format",
    "output_format",
    type=click.Choice(["text", "json"]),
    default="text",
    show_default=True,
)
@click.option("--why", is_flag=True, help="Show the basis of each flag's class.")
@click.option(
    "--policy",
    "list_policy",
    is_flag=True,
    help="List the effective policy rules (with --repo: overrides first) instead.",
)
@click.argument("argv", nargs=-1, type=click.UNPROCESSED)
def flags(
    yaml_path: Path | None,
    role: str | None,
    env: tuple[str, ...],
    repo: Path | None,
    merge: str,
    output_format: str,
    why: bool,
    list_policy: bool,
    argv: tuple[str, ...],
) -> None:
    """Show the canonical FlagSet of `-- ARGV...` or of `--yaml FILE`, each flag with its class.

    \b
    Examples:
      provenance flags -- vllm serve MiniMaxAI/MiniMax-M3 -tp 4 --attention_config.backend X
      provenance flags --yaml 1p1d-tp4-dep4-eagle3-8k1k.yaml --role decode --format json
    """
    options = FlagsOptions(
        argv=argv,
        env=env,
        yaml_path=yaml_path,
        role=role,
        repo=repo,
        merge=ConfigMerge(merge),
        output_format=output_format,
        why=why,
        list_policy=list_policy,
    )
    run(lambda: _execute(options))
