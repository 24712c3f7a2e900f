"""Every ``--ledger``/``--evidence`` help says what a wheel really reads by default:
``./ledger`` only in a provenance checkout, else the embedded data (issue #31)."""

from __future__ import annotations

from collections.abc import Iterator

import click
import pytest
from click.testing import CliRunner

from provenance.cli.main import cli

CONTEXT = click.Context(cli)


def _commands(
    group: click.Group, prefix: tuple[str, ...] = ()
) -> Iterator[tuple[tuple[str, ...], click.Command]]:
    for name in group.list_commands(CONTEXT):
        command = group.get_command(CONTEXT, name)
        assert command is not None, name
        if isinstance(command, click.Group):
            yield from _commands(command, (*prefix, name))
        else:
            yield (*prefix, name), command


def _with_dir_options() -> list[tuple[str, ...]]:
    return [
        path
        for path, command in _commands(cli)
        if any({"--ledger", "--evidence"} & set(p.opts) for p in command.params)
    ]


COMMANDS = _with_dir_options()


def test_the_commands_with_a_ledger_option_are_found() -> None:
    assert ("verify",) in COMMANDS and ("audit",) in COMMANDS and len(COMMANDS) > 5


@pytest.mark.parametrize("path", COMMANDS, ids=" ".join)
def test_ledger_and_evidence_help_names_the_embedded_default(path: tuple[str, ...]) -> None:
    result = CliRunner().invoke(cli, [*path, "--help"], terminal_width=200)
    assert result.exit_code == 0, result.output
    for line in result.output.splitlines():
        if line.strip().startswith(("--ledger", "--evidence")):
            assert "embedded" in line, line
