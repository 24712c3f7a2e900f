"""Secrets and offline operation, end to end.

* With a sentinel token in ``GITHUB_TOKEN`` (and ``GH_TOKEN``), every command
  that works offline — ingest, evidence list, verify, add-sweep, audit in all
  formats (stdout and ``--output`` files), explain, cite, flags, combos, graph,
  schema — prints and writes nothing that contains it.
* The network-dependent commands, ``provenance ingest sweeps`` and ``audit
  --github-pr``, degrade with one clear line: without a token they check
  nothing (exit 0); with a token and no reachable API they exit 5, without a
  traceback or the token.
* Inside the suite a socket to a non-loopback address is refused
  (pytest-socket, configured in ``pyproject.toml`` ``addopts``).
"""

from __future__ import annotations

import os
import socket
import tomllib
import urllib.request
from pathlib import Path

import pytest
from click.testing import CliRunner
from sec_fixtures import (
    REPO_ROOT,
    SENTINEL_TOKEN,
    reduced_recipes_root,
    run_provenance,
    toy_repo,
)

from provenance.cli.main import cli
from provenance.errors import EXIT_NETWORK, EXIT_OK

TOKEN_ENV = {
    "GITHUB_TOKEN": SENTINEL_TOKEN,
    "GH_TOKEN": SENTINEL_TOKEN,
    "PROVENANCE_TEST_TOKEN": SENTINEL_TOKEN,
}
#: pieces of the sentinel that would betray a partial leak (prefix stripped, halves)
LEAK_MARKERS = (SENTINEL_TOKEN, SENTINEL_TOKEN[4:], SENTINEL_TOKEN[4:24], SENTINEL_TOKEN[-20:])


def _assert_clean(where: str, text: str | bytes) -> None:
    data = text if isinstance(text, str) else text.decode("utf-8", "replace")
    for marker in LEAK_MARKERS:
        assert marker not in data, f"token leaked in {where}"


def _all_files(root: Path) -> dict[str, bytes]:
    return {
        str(p): p.read_bytes() for p in root.rglob("*") if p.is_file() and ".git" not in p.parts
    }


def test_no_offline_command_prints_or_writes_the_token(tmp_path: Path) -> None:
    repo = toy_repo(tmp_path / "inferencex")
    work = tmp_path / "work"
    work.mkdir()
    dirs = ["--ledger", str(work / "ledger"), "--evidence", str(work / "evidence")]
    recipes = ["--recipes-root", str(reduced_recipes_root(tmp_path / "recipes"))]
    narrow = ["--hardware", "b300", "--strategy", "single_node_tp", "--features", "none"]
    audit = ["audit", "MiniMaxAI/MiniMax-M3", *recipes, *dirs, *narrow, "--variant", "nvfp4"]
    commands: list[list[str]] = [
        ["ingest", "inferencex", str(repo.root), *dirs],
        ["ingest", "inferencex", str(repo.root), *dirs, "--format", "json"],
        ["evidence", "list", *dirs],
        ["evidence", "list", *dirs, "--format", "json"],
        ["verify", *dirs],
        ["verify", *dirs, "--inferencex", str(repo.root), "--format", "json"],
        [
            "ledger",
            "add-sweep",
            "--pr",
            "SemiAnalysisAI/InferenceX#7",
            "--run",
            "42",
            "--attempt",
            "1",
            "--head",
            "0b896e92f975d0ef8e374fdc284b06444fc95242",
            "--conclusion",
            "success",
            "--ledger",
            str(work / "ledger"),
        ],
        *([*audit, "--format", fmt] for fmt in ("text", "json", "markdown", "sarif", "html")),
        *(
            [*audit, "--format", fmt, "--output", str(work / f"audit.{fmt}")]
            for fmt in ("json", "markdown", "sarif", "html")
        ),
        [
            "explain",
            "MiniMaxAI/MiniMax-M3",
            *recipes,
            *dirs,
            "--variant",
            "nvfp4",
            "--hardware",
            "b300",
            "--strategy",
            "single_node_tp",
        ],
        ["cite", "MiniMaxAI/MiniMax-M3", *recipes, *dirs, "--lang", "en,zh"],
        ["flags", "--", "vllm", "serve", "m", "--tensor-parallel-size", "8"],
        ["flags", "--format", "json", "--policy"],
        ["combos", "MiniMaxAI/MiniMax-M3", *recipes, "--variant", "nvfp4", *narrow],
        ["graph", *dirs, "--format", "json"],
        ["graph", *dirs, "--format", "dot", "--output", str(work / "graph.dot")],
        ["schema", "audit"],
    ]
    runner = CliRunner()
    ran = 0
    for args in commands:
        result = runner.invoke(cli, args, env=TOKEN_ENV)
        assert result.exit_code in (0, 1), (args, result.output)
        assert result.exception is None or isinstance(result.exception, SystemExit), args
        _assert_clean(f"output of {args[:2]}", result.output)
        ran += 1
    files = _all_files(work)
    assert len(files) > 5
    for path, data in files.items():
        _assert_clean(path, data)
    print(f"\nsecrets: {ran} offline command runs, {len(files)} written files, token found: 0")


def test_the_network_command_degrades_clearly(tmp_path: Path) -> None:
    repo = toy_repo(tmp_path / "inferencex")
    dirs = ["--ledger", str(tmp_path / "ledger"), "--evidence", str(tmp_path / "evidence")]
    assert (
        run_provenance(["ingest", "inferencex", str(repo.root), *dirs], cwd=tmp_path).returncode
        == 0
    )
    sweeps = ["ingest", "sweeps", "--ledger", str(tmp_path / "ledger")]
    env_without = {k: v for k, v in os.environ.items() if k not in ("GITHUB_TOKEN", "GH_TOKEN")}
    # no token: nothing is checked, the ledger is left alone, exit 0 and say so
    before = {p: p.read_bytes() for p in (tmp_path / "ledger").rglob("*.yaml")}
    result = CliRunner().invoke(cli, sweeps, env={"GITHUB_TOKEN": ""})
    assert result.exit_code == EXIT_OK, result.output
    assert "not checked" in result.output.lower() or "no token" in result.output.lower()
    assert {p: p.read_bytes() for p in (tmp_path / "ledger").rglob("*.yaml")} == before
    # a token but no reachable API: a real process exits 5 with one line, no traceback
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{sock.getsockname()[1]}"
    result_proc = run_provenance(
        [*sweeps, "--api-url", closed],
        cwd=tmp_path,
        env={**env_without, **TOKEN_ENV},
    )
    assert result_proc.returncode == EXIT_NETWORK, result_proc.stderr
    assert result_proc.stderr.startswith("network error: ")
    assert "Traceback" not in result_proc.stderr
    _assert_clean("ingest sweeps stdout", result_proc.stdout)
    _assert_clean("ingest sweeps stderr", result_proc.stderr)
    assert {p: p.read_bytes() for p in (tmp_path / "ledger").rglob("*.yaml")} == before
    # audit --github-pr: without a token the PR is not checked (exit 0, said on stderr);
    # with a token and no API, exit 5 with one clear line and no token
    recipes = reduced_recipes_root(tmp_path / "recipes")
    audit = ["audit", "MiniMaxAI/MiniMax-M3", "--recipes-root", str(recipes), *dirs]
    audit += ["--format", "markdown", "--github-pr", "vllm-project/recipes#1"]
    offline = CliRunner().invoke(cli, audit, env={"GITHUB_TOKEN": ""})
    assert offline.exit_code == EXIT_OK, offline.output
    assert "not checked (no GITHUB_TOKEN)" in offline.output
    online = run_provenance(
        [*audit, "--comment"],
        cwd=tmp_path,
        env={**env_without, **TOKEN_ENV, "GITHUB_API_URL": closed},
    )
    assert online.returncode == EXIT_NETWORK, online.stderr
    assert online.stderr.startswith("network error: ") and "Traceback" not in online.stderr
    _assert_clean("audit --github-pr stdout", online.stdout)
    _assert_clean("audit --github-pr stderr", online.stderr)


@pytest.mark.filterwarnings("ignore:A test tried to use socket")
def test_non_loopback_sockets_are_refused_in_the_suite() -> None:
    from pytest_socket import SocketBlockedError, SocketConnectBlockedError

    with pytest.raises((SocketConnectBlockedError, SocketBlockedError)):
        socket.create_connection(("10.255.255.1", 80), timeout=1)
    with pytest.raises((SocketConnectBlockedError, SocketBlockedError)):
        urllib.request.urlopen("http://192.0.2.1/", timeout=1)
    # loopback stays usable for the recorded fakes
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as server:
        server.bind(("127.0.0.1", 0))
        server.listen(1)
        with socket.create_connection(server.getsockname(), timeout=5):
            pass


def test_socket_blocking_is_configured_for_the_whole_suite() -> None:
    config = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())
    addopts = config["tool"]["pytest"]["ini_options"]["addopts"].split()
    assert "--disable-socket" in addopts
    hosts = next(a for a in addopts if a.startswith("--allow-hosts=")).split("=", 1)[1]
    assert set(hosts.split(",")) <= {"127.0.0.1", "localhost", "::1"}
