"""Hostile values in every output: escaped for the terminal, markdown, SARIF and HTML.

End to end: an InferenceX repository whose PR title and launcher flag value
carry HTML, markdown, ``@mentions``, backticks, pipes, a newline, ANSI escape
sequences, a bell and a bidi override, and a recipe whose own flag value and
variant name do the same, are ingested and audited with the real CLI. Each
output surface is then checked: no control character reaches a terminal or a
markdown document, no HTML tag or mention survives outside a code span, no
injected line starts a heading, and the JSON keeps the exact value (escaping
happens when rendering, never in the data).
"""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from xml.etree import ElementTree

import pytest
from click.testing import CliRunner
from inferencex_fixtures import (
    MASTER_SINGLE,
    RepoBuilder,
)
from sec_fixtures import (
    MASTER,
    base_files,
    m3_repo,
    reduced_recipes_root,
    strings_of,
)

from provenance.audit.verdicts import AuditReport
from provenance.cli.main import cli
from provenance.errors import InputError
from provenance.report.diff import write_markdown as write_diff_markdown
from provenance.report.diff import write_text as write_diff_text
from provenance.review.diff import diff_reports

#: the hostile payload of the evidence (flag value; the PR title gets it minus the newline)
HOSTILE = (
    "<img src=x onerror=alert(1)>[link=https://e.x]k[/link]@everyone `id` | ## h"
    "\x1b[2J\x1b]8;;http://evil\x07"
    "\nnext\u202eevil"
)
#: the hostile payload of the recipe (a flag value and a variant name)
HOSTILE_RECIPE = (
    "<script>alert(2)</script>[link=https://e.x]k[/link]@octocat ``x`` |\x1b[31m\u2066rtl"
)
HOSTILE_VARIANT = "nv<b>@here"
# C0 controls except \n, DEL, C1 controls, line/paragraph separators, bidi controls
UNSAFE_CHARS = re.compile(r"[\x00-\x09\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


@dataclass
class Outputs:
    terminal: dict[str, str]
    markdown: dict[str, str]
    sarif: str
    html: str
    json_report: str
    exports: dict[str, str]


def _invoke(args: list[str]) -> str:
    result = CliRunner().invoke(cli, args)
    assert result.exit_code in (0, 1), (args, result.output)
    return result.output


@pytest.fixture(scope="module")
def outputs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Outputs]:
    tmp = tmp_path_factory.mktemp("hostile-output")
    recipes = reduced_recipes_root(
        tmp / "recipes",
        extra_args=["--hostile-note", HOSTILE_RECIPE],
        twin_variant=HOSTILE_VARIANT,
    )
    title = HOSTILE.replace("\n", " ")
    builder = m3_repo(tmp / "inferencex", f"Evil {title} (#66)", HOSTILE)
    dirs = ["--ledger", str(tmp / "ledger"), "--evidence", str(tmp / "evidence")]
    inputs = ["--recipes-root", str(recipes), *dirs]
    terminal = {"ingest": _invoke(["ingest", "inferencex", str(builder.root), *dirs])}
    audit = ["audit", "MiniMaxAI/MiniMax-M3", *inputs]
    terminal["audit-text"] = _invoke(audit)
    explain = ["explain", "MiniMaxAI/MiniMax-M3", *inputs, "--variant", HOSTILE_VARIANT]
    terminal["explain"] = _invoke([*explain, "--hardware", "b300", "--strategy", "single_node_tp"])
    terminal["evidence-list"] = _invoke(["evidence", "list", *dirs])
    terminal["verify"] = _invoke(["verify", *dirs])
    terminal["flags"] = _invoke(["flags", "--", "vllm", "serve", "m", "--kv-cache-dtype", HOSTILE])
    terminal["combos-table"] = _invoke(
        ["combos", "MiniMaxAI/MiniMax-M3", "--recipes-root", str(recipes), "--format", "table"]
    )
    json_text = _invoke([*audit, "--format", "json"])
    report = AuditReport.model_validate_json(json_text)
    diff = diff_reports(None, report, base_label="base", head_label="head")
    diff_md, diff_text = io.StringIO(), io.StringIO()
    write_diff_markdown(diff, diff_md)
    write_diff_text(diff, diff_text)
    terminal["diff-text"] = diff_text.getvalue()
    markdown = {
        "audit-markdown": _invoke([*audit, "--format", "markdown"]),
        "cite": _invoke(["cite", "MiniMaxAI/MiniMax-M3", *inputs]),
        "diff-markdown": diff_md.getvalue(),
    }
    yield Outputs(
        terminal=terminal,
        markdown=markdown,
        sarif=_invoke([*audit, "--format", "sarif"]),
        html=_invoke([*audit, "--format", "html"]),
        json_report=json_text,
        exports={
            fmt: _invoke(["graph", *dirs, "--format", fmt]) for fmt in ("json", "dot", "graphml")
        },
    )


def test_the_hostile_values_reach_the_outputs(outputs: Outputs) -> None:
    """Guard: the checks below are only meaningful if the payload is really shown."""
    assert "onerror" in outputs.markdown["audit-markdown"]
    assert "onerror" in outputs.markdown["cite"]
    assert "onerror" in outputs.terminal["evidence-list"]
    assert "octocat" in outputs.markdown["audit-markdown"]
    assert "octocat" in outputs.terminal["explain"]


def test_json_keeps_the_exact_values(outputs: Outputs) -> None:
    strings = set(strings_of(json.loads(outputs.json_report)))
    assert HOSTILE in strings
    assert HOSTILE_VARIANT in strings
    assert any(HOSTILE_RECIPE in s for s in strings)


@pytest.mark.parametrize(
    "name",
    [
        "ingest",
        "audit-text",
        "explain",
        "evidence-list",
        "verify",
        "flags",
        "combos-table",
        "diff-text",
    ],
)
def test_terminal_output_has_no_control_sequences(outputs: Outputs, name: str) -> None:
    text = outputs.terminal[name]
    assert not UNSAFE_CHARS.search(text), (name, UNSAFE_CHARS.findall(text))
    assert not re.search(r"^next", text, re.M), "a newline in a value started a new line"


@pytest.mark.parametrize(
    "name",
    [
        "ingest",
        "audit-text",
        "explain",
        "evidence-list",
        "verify",
        "flags",
        "combos-table",
        "diff-text",
    ],
)
def test_terminal_output_shows_rich_markup_literally(outputs: Outputs, name: str) -> None:
    """rich markup in a value (``[link=…]``) must be shown, not interpreted (OSC 8 links)."""
    text = outputs.terminal[name]
    if "onerror" in text or "octocat" in text:
        # rich wraps a long cell with padding, wherever the (path-dependent) width falls:
        # compare without whitespace (the markup itself has none)
        assert "[link=https://e.x]k[/link]" in re.sub(r"\s", "", text), name


def _prose(markdown: str) -> str:
    """The markdown outside code spans (inside them HTML and mentions are inert)."""
    return re.sub(r"(`+)(?!`).*?(?<!`)\1(?!`)", "", markdown)


#: the lines provenance's own markdown folds what does not block with
OWN_FOLD = re.compile(r"<details><summary>[^<>@`]*</summary>|</details>")


@pytest.mark.parametrize("name", ["audit-markdown", "cite", "diff-markdown"])
def test_markdown_is_inert(outputs: Outputs, name: str) -> None:
    text = outputs.markdown[name]
    assert not UNSAFE_CHARS.search(text), (name, UNSAFE_CHARS.findall(text))
    prose = _prose(text)
    for raw in ("<img", "<script", "<b>", "@everyone", "@octocat", "@here"):
        assert raw not in prose, (name, raw)
    for line in text.splitlines():
        if OWN_FOLD.fullmatch(line):
            continue  # the comment's own folding tags; their text is escaped numbers
        assert not line.startswith(("next", "## h", "<")), (name, line)


def test_sarif_is_inert(outputs: Outputs) -> None:
    document = json.loads(outputs.sarif)
    for run in document["runs"]:
        for result in run["results"]:
            message = result["message"]
            assert not UNSAFE_CHARS.search(message["text"]), message["text"]
            if "markdown" in message:
                assert "<img" not in _prose(message["markdown"])


def test_html_keeps_values_as_data(outputs: Outputs) -> None:
    page = outputs.html
    for raw in ("<img", "<script>alert", "<b>@here", "\x1b"):
        assert raw not in page, raw
    assert page.count("<script") == 2  # the data block and the page's own script


def _run_on_a_tty(args: list[str], cwd: Path) -> str:
    """Run ``provenance ARGS`` with stdout and stderr on a pseudo-terminal; return what it drew."""
    leader, follower = os.openpty()
    child = subprocess.Popen(
        [sys.executable, "-c", "from provenance.cli.main import main; main()", *args],
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        stdout=follower,
        stderr=follower,
        env={**os.environ, "TERM": "xterm-256color", "COLUMNS": "160"},
    )
    os.close(follower)
    chunks = []
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not chunk:
            break
        chunks.append(chunk)
    child.wait(timeout=120)
    os.close(leader)
    return b"".join(chunks).decode("utf-8", "replace")


def test_ingest_progress_bar_on_a_terminal_is_inert(tmp_path: Path) -> None:
    builder = RepoBuilder(tmp_path / "inferencex")
    files = base_files()
    hostile_key = '"toy-[link=https://e.x]CLICK[/link]-\\e[41mRED":'
    # one key only, so it is the last description the bar draws
    files[MASTER] = MASTER_SINGLE.replace("toy-fp4-b300-vllm-mtp:", hostile_key)
    builder.commit("hostile key (#1)", files)
    drawn = _run_on_a_tty(
        ["ingest", "inferencex", str(builder.root), "--ledger", "l", "--evidence", "e"], tmp_path
    )
    assert "records:" in drawn, drawn[-2000:]
    assert "\x1b]8;" not in drawn, "a config key became a terminal hyperlink"
    assert "\x1b[41mRED" not in drawn, "a config key's escape sequence reached the terminal"


def test_error_diagnostics_are_terminal_safe(tmp_path: Path) -> None:
    """A YAML key is untrusted: the file:line (key.path) of an error must not carry its escapes."""
    error = InputError(
        "duplicate key 'b\\x1b[41mX'", path="d\x1b]8;;x\x07.yaml", line=3, key_path="b\x1b[41mX"
    )
    assert not UNSAFE_CHARS.search(error.diagnostic())
    assert "b\\x1b[41mX" in error.diagnostic()
    hostile = tmp_path / "dup.yaml"
    hostile.write_text('a: 1\n"b\\e[41mX\\u202e": 2\n"b\\e[41mX\\u202e": 3\n')
    drawn = _run_on_a_tty(["flags", "--yaml", str(hostile)], tmp_path)
    assert "duplicate key" in drawn, drawn
    assert "\x1b[41m" not in drawn and "\u202e" not in drawn, repr(drawn)


def test_graph_dot_export_is_inert(outputs: Outputs) -> None:
    dot = outputs.exports["dot"]
    assert "onerror" in dot
    assert not UNSAFE_CHARS.search(dot)


def test_graph_graphml_export_is_well_formed(outputs: Outputs) -> None:
    graphml = outputs.exports["graphml"]
    assert "onerror" in graphml
    ElementTree.fromstring(graphml.encode())
    # GraphML is data (like JSON): only the characters XML cannot carry must go
    assert not re.search(r"[\x00-\x08\x0b\x0c\x0e-\x1f]", graphml)
