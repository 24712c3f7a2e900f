"""Regenerate docs/cli.md from the click commands themselves (every command and option).

Usage: python scripts/gen_cli_docs.py [--check]
``--check`` exits 1 when docs/cli.md differs from what this click version renders.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from provenance.cli.main import cli

OUT = Path(__file__).resolve().parents[1] / "docs" / "cli.md"

HEADER = """# Command-line reference

Generated from the commands themselves by `scripts/gen_cli_docs.py`; do not edit by hand
(`tests/test_cli_docs.py` fails when a command or option is missing here).

## Exit codes

| code | meaning |
| --- | --- |
| 0 | success |
| 1 | the gate found guide-only combinations not covered by a declaration (`audit --strict`, or any `audit --repo/--base/--head` whose head exposes new or regressed guide-only combinations) |
| 2 | usage error: a bad option, an unknown selection, a revision that does not exist |
| 3 | invalid input: a recipe, ledger, evidence file, launcher or config is malformed or unsafe; the message names the file, the line and the key path. `audit` with no RECIPE (every recipe of the root) reports each invalid recipe as a located error (stderr and the report's `errors`), audits the rest, writes the report, then exits 3; so does `audit --repo/--base/--head` (and `--staged`) for a changed recipe invalid in the head, named `<commit>:<path>` (one invalid only in the base is a notice); a RECIPE named on the command line, or an invalid shared file (`taxonomy.yaml`, `strategies/`, `kv_store/`), stops at once with no report |
| 4 | ledger or evidence integrity failure: a hash mismatch, a dangling reference, *suspect* evidence, or another writer holds the ledger lock |
| 5 | network or GitHub API failure: offline, rate limited, bad credentials, HTTP error (the token is never printed) |
| 6 | cannot write: the disk is full, or the ledger, evidence store or `--output` directory (or standard output) is read-only or not writable; `cannot write: <file>: <reason>`. Nothing is half-written: the target is as it was, no temporary file is left |

Errors are printed as one diagnostic on stderr, never as a traceback.

"""


def _section(name: str, command: click.Command, depth: int) -> list[str]:
    ctx = click.Context(
        command,
        info_name=name,
        terminal_width=100,
        max_content_width=100,
        help_option_names=["-h", "--help"],
    )
    lines = [f"{'#' * depth} `{name}`", "", "```text", command.get_help(ctx).rstrip(), "```", ""]
    if isinstance(command, click.Group):
        for sub in command.list_commands(ctx):
            child = command.get_command(ctx, sub)
            if child is not None:
                lines += _section(f"{name} {sub}", child, depth + 1)
    return lines


def render() -> str:
    lines = [HEADER.rstrip(), ""]
    lines += _section("provenance", cli, 2)
    return "\n".join(lines).rstrip() + "\n"


def main() -> int:
    text = render()
    if "--check" in sys.argv:
        if not OUT.is_file() or OUT.read_text(encoding="utf-8") != text:
            print("docs/cli.md is out of date: run python scripts/gen_cli_docs.py", file=sys.stderr)
            return 1
        return 0
    OUT.write_text(text, encoding="utf-8")
    print(f"wrote {OUT}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
