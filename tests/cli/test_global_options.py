"""The options every command shares, given before its name (pip-audit, ruff and zizmor
spell them the same): ``-V/--version``, ``-q/--quiet``, ``-v/--verbose`` and
``--color auto|always|never`` with ``NO_COLOR`` and ``FORCE_COLOR``."""

from __future__ import annotations

import io
from collections.abc import Mapping

import pytest
from click.testing import CliRunner, Result

from provenance import __version__
from provenance.cli.main import cli
from provenance.cli.options import Settings

#: A fast text audit (129 combinations).
AUDIT = ("audit", "MiniMaxAI/MiniMax-M3", "--hardware", "b300", "--features", "default")
ESC = "\x1b["


def _run(args: tuple[str, ...], env: Mapping[str, str | None] | None = None) -> Result:
    base: dict[str, str | None] = {"NO_COLOR": None, "FORCE_COLOR": None, "CI": None}
    return CliRunner().invoke(cli, list(args), env={**base, **(env or {})})


@pytest.mark.parametrize("flag", ["-V", "--version"])
def test_version(flag: str) -> None:
    done = _run((flag,))
    assert done.exit_code == 0
    assert done.stdout == f"provenance, version {__version__}\n"


def test_help_lists_the_global_options() -> None:
    text = _run(("--help",)).stdout
    for option in ("-q, --quiet", "-v, --verbose", "--color [auto|always|never]", "-V, --version"):
        assert option in text


@pytest.mark.parametrize(
    ("args", "env", "coloured"),
    [
        ((), {}, False),  # not a terminal
        (("--color", "always"), {}, True),
        (("--color", "always"), {"NO_COLOR": "1"}, True),  # the option wins
        (("--color", "never"), {"FORCE_COLOR": "1"}, False),
        ((), {"FORCE_COLOR": "1"}, True),
        ((), {"FORCE_COLOR": "1", "NO_COLOR": "1"}, False),  # NO_COLOR first
        ((), {"NO_COLOR": ""}, False),  # empty: not set
    ],
)
def test_color(args: tuple[str, ...], env: dict[str, str], coloured: bool) -> None:
    done = _run((*args, *AUDIT), env)
    assert done.exit_code == 0, done.output
    assert (ESC in done.stdout) is coloured
    assert done.stdout.startswith("provenance audit: ") or ESC in done.stdout


def test_color_auto_colours_a_terminal_only(monkeypatch: pytest.MonkeyPatch) -> None:
    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    assert Settings().use_color(Tty())
    assert not Settings().use_color(io.StringIO())
    monkeypatch.setenv("NO_COLOR", "1")
    assert not Settings().use_color(Tty())


def test_unknown_color_is_a_usage_error() -> None:
    assert _run(("--color", "sometimes", *AUDIT)).exit_code == 2


def test_quiet_and_verbose_before_the_command() -> None:
    quiet = _run(("-q", *AUDIT), {"CI": "true"})
    assert quiet.exit_code == 0
    assert quiet.stderr == ""
    verbose = _run(("-v", *AUDIT))
    assert verbose.exit_code == 0
    assert verbose.stderr.startswith("provenance: auditing MiniMaxAI/MiniMax-M3 (")
    assert verbose.stdout == quiet.stdout
    assert Settings(quiet=True, verbose=2).verbose == 0
