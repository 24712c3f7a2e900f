"""docs/cli.md documents every command and every option (it is generated from them).

The exact help layout depends on the installed click version, so the test checks the
inventory — every command path and every option spelling — not the formatting.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import click

from provenance.cli.main import cli

DOC = Path(__file__).resolve().parents[1] / "docs" / "cli.md"


def _commands(name: str, command: click.Command) -> Iterator[tuple[str, click.Command]]:
    yield name, command
    if isinstance(command, click.Group):
        ctx = click.Context(command, info_name=name)
        for sub in command.list_commands(ctx):
            child = command.get_command(ctx, sub)
            if child is not None:
                yield from _commands(f"{name} {sub}", child)


def test_every_command_and_option_is_documented() -> None:
    text = DOC.read_text(encoding="utf-8")
    missing = []
    for path, command in _commands("provenance", cli):
        if f"`{path}`" not in text:
            missing.append(path)
            continue
        start = text.index(f"`{path}`")
        end = text.find("\n#", start)
        section = text[start : end if end != -1 else len(text)]
        for param in command.params:
            if isinstance(param, click.Option):
                for spelling in param.opts:
                    if spelling not in section:
                        missing.append(f"{path} {spelling}")
    assert not missing, f"docs/cli.md lacks {missing}: run python scripts/gen_cli_docs.py"


def test_exit_codes_are_documented() -> None:
    text = DOC.read_text(encoding="utf-8")
    for code in range(7):
        assert f"| {code} |" in text
