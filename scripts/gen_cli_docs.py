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
| 2 | usage error: a bad option, an unknown selection, a revision that does not exist, a RECIPE found neither as a file nor in the recipes root, a ledger whose evidence directory is missing (the message names it) |
| 3 | invalid input: a recipe, ledger, evidence file, launcher or config is malformed or unsafe; the message names the file, the line and the key path. `audit` with no RECIPE (every recipe of the root) reports each invalid recipe as a located error (stderr and the report's `errors`), audits the rest, writes the report, then exits 3; so does `audit --repo/--base/--head` (and `--staged`) for a changed recipe invalid in the head, named `<commit>:<path>` (one invalid only in the base is a notice); a RECIPE named on the command line, or an invalid shared file (`taxonomy.yaml`, `strategies/`, `kv_store/`), stops at once with no report |
| 4 | ledger or evidence integrity failure: a hash mismatch, a dangling reference, *suspect* evidence, or another writer holds the ledger lock |
| 5 | network or GitHub API failure: offline, rate limited, bad credentials, HTTP error (the token is never printed) |
| 6 | cannot write: the disk is full, or the ledger, evidence store or `--output` directory (or standard output) is read-only or not writable; `cannot write: <file>: <reason>`. Nothing is half-written: the target is as it was, no temporary file is left |

Errors are printed as one diagnostic on stderr, never as a traceback.

## Global options

Given before the command (`provenance -q audit …`), as pip-audit, ruff and zizmor spell
them:

* `-V`, `--version`: the version.
* `-q`, `--quiet`: no progress on stderr; the report, errors, warnings and the gate's
  lines still print.
* `-v`, `--verbose`: progress as one line per phase with the time so far, wherever
  stderr goes.
* `--color auto|always|never`: colour of the text output. `auto` (the default) colours
  a terminal only; a non-empty `NO_COLOR` turns it off, else a non-empty `FORCE_COLOR`
  turns it on (<https://no-color.org>, <https://force-color.org>); `always` and `never`
  override both.

## Progress

`suggest` (about a minute on MiniMax-M3) and `audit`, for a PR too, say what they do on
stderr, never on stdout:

* on a terminal: one live line naming the phase, erased when the work ends;
* in CI (`CI` set and not empty): the first phase at once, then at most one heartbeat
  line every 10 seconds while the work lasts (`provenance: still auditing the base and the
  head recipe by recipe (3 and 3 recipe(s)) (20 s)`). A PR audit's first line says what it reads, and why every recipe
  when the PR changes a shared file (`provenance: taxonomy.yaml changed: auditing all
  173 recipes on both sides`);
* elsewhere (stderr is a pipe or a file outside CI: scripts, hooks): nothing, unless
  `-v`.

## Output width

The text audit is laid out for `COLUMNS` when it is set, else the terminal's width on a
terminal, else 80 columns (a pipe or a file). A table is printed only when its last
column (reasons, why) gets at least 40 columns; narrower, each group is a block — the
group and its counts on one line (`nvfp4 · b200 · single_node_tp  combos 72,
recommended 0, guide-only 72`), its reasons indented below. No line is cut, and no count
is parted from its label.

## GitHub annotations

`audit --format github` (and `--report github=PATH`) prints workflow commands that
GitHub turns into inline annotations on the PR's diff, without code scanning (which a
fork's PR cannot upload to): `::error file=models/Org/Name.yaml,line=57,title=…::…`.
The lines are the SARIF report's. The audit annotates each invalid recipe (`error`) and
each undeclared guide-only finding (`warning`); the PR audit (`--repo/--base/--head`)
what the gate blocks and each recipe invalid in the head (`error`), and new claims it
reports without blocking (`notice`), after one `notice` naming the ledger. Findings on
one line are one annotation. Values are escaped as the runner expects (`%`, CR, LF; in
properties also `:` and `,`).

"""


#: Prose after a command's help (kept here so that regenerating keeps it).
NOTES = {
    "provenance suggest": """\
Each edit is printed with its `cost`: what it takes from combinations that did not ask
for it, measured combination by combination when it is proven — a flag of an opt-in
feature forced on combinations that did not select the feature (`removes …`, e.g. the
vision encoder when `--language-model-only` reaches everyone), or a flag the recipe writes
explicitly taken or changed (`overrides a choice written in the recipe`, a *kernel*
choice when the key names a backend). Dropping a flag is *scoping*, not a cost, when the
combination only inherits it (from `model.base_args`/`base_env` or a variant's
`extra_args`/`extra_env`: no layer naming its hardware, strategy or feature), no in-scope
evidence point sets that value for it, and its key names no backend or kernel; the drop
is still counted and shown (`scoping, no cost: drops …`). A kernel choice, a flag written
for the cell by name, an evidenced flag and a changed value stay costs
([tutorial](tutorial.md#9-fix-the-recipe)). An edit that forces a feature is not shown when a
scoped edit (one relying on the feature) reaches the same evidence point; the scoped one
says what it avoids (`scoped:`). Only free edits (clean, no cost) are combined into the
proposed edit that `--format diff` writes; an edit with a cost is shown, never proposed.
Where the runs behind an edit simulated speculative acceptance
(`speculative_config.rejection_sample_method=synthetic`), it says `acceptance simulated:
the drafter's acceptance rate was never measured`. JSON: `proof.cost`, `proof.scoped`, `proof.backed_by`,
`scoped_instead_of`, `simulated_acceptance` (`provenance schema suggest`).
""",
}


def _section(name: str, command: click.Command, depth: int) -> list[str]:
    ctx = click.Context(
        command,
        info_name=name,
        terminal_width=100,
        max_content_width=100,
        help_option_names=["-h", "--help"],
    )
    lines = [f"{'#' * depth} `{name}`", "", "```text", command.get_help(ctx).rstrip(), "```", ""]
    if name in NOTES:
        lines += [NOTES[name].rstrip(), ""]
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
