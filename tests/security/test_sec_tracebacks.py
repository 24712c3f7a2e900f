"""The last tracebacks of the attack campaign become located errors (issue #20, class 5).

Each input here used to end in a Python traceback (exit 1). Now each is one
``label: location: message`` line with the documented exit code: a symlink
loop in a recipes root or in the evidence store, a git object missing from an
incomplete clone, an API answer with values of the wrong JSON type, an API
redirect to another host, a 5,000-character recipe argument.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from github_fake import SENTINEL_TOKEN, FakeGitHub, Response, recorded
from sec_fixtures import REPO_ROOT, SCRIPT, toy_repo

from provenance.cli.main import cli
from provenance.errors import EXIT_INPUT, EXIT_INTEGRITY, EXIT_NETWORK, NetworkError
from provenance.model.ledger import PrRef
from provenance.sources.github import GitHubClient, GitHubSettings

RECIPES_CHECKOUT = Path("/tmp/recipes-8959cf6")


def invoke(args: list[str]) -> Result:
    result = CliRunner().invoke(cli, args)
    assert "Traceback" not in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result


# --- a symlink loop in a recipes root ---------------------------------------------------


def _recipes_copy(kind: str, tmp_path: Path) -> Path:
    source = REPO_ROOT / "recipes" if kind == "embedded" else RECIPES_CHECKOUT
    if not (source / "models").is_dir():
        pytest.skip(f"{source} not present")
    root = tmp_path / "recipes"
    shutil.copytree(source, root, ignore=shutil.ignore_patterns(".git"), symlinks=True)
    return root


@pytest.mark.parametrize("kind", ["embedded", "checkout-8959cf6"])
@pytest.mark.parametrize("where", ["models", "strategies"])
def test_a_symlink_loop_in_a_recipes_root_is_a_located_error(
    kind: str, where: str, tmp_path: Path
) -> None:
    root = _recipes_copy(kind, tmp_path)
    folder = root / where if where == "strategies" else next((root / "models").iterdir())
    loop = folder / "loop.yaml"
    loop.symlink_to("loop.yaml")
    commands = [["audit", "--recipes-root", str(root)]]
    if where == "models":
        ref = str(loop.relative_to(root))
        commands += [
            ["combos", ref, "--recipes-root", str(root)],
            ["audit", ref, "--recipes-root", str(root)],
        ]
    for args in commands:
        result = invoke(args)
        assert result.exit_code == EXIT_INPUT, (args, result.output)
        assert f"{loop}: symlink loop" in result.output


# --- a symlink loop in the evidence store -----------------------------------------------


def _store_copy(tmp_path: Path) -> tuple[Path, Path]:
    ledger, evidence = tmp_path / "ledger", tmp_path / "evidence"
    shutil.copytree(REPO_ROOT / "ledger", ledger)
    shutil.copytree(REPO_ROOT / "evidence", evidence)
    return ledger, evidence


@pytest.mark.parametrize("shape", ["record-file", "record-folder"])
def test_a_symlink_loop_in_the_evidence_store_is_an_integrity_failure(
    shape: str, tmp_path: Path
) -> None:
    ledger, evidence = _store_copy(tmp_path)
    if shape == "record-file":
        victim = sorted((evidence / "00").iterdir())[0]
        victim.unlink()
        victim.symlink_to(victim.name)
    else:
        victim = evidence / "fe"
        shutil.rmtree(victim, ignore_errors=True)
        victim.symlink_to("fe")
    dirs = ["--ledger", str(ledger), "--evidence", str(evidence)]
    for args in (["verify", *dirs], ["graph", *dirs], ["evidence", "list", *dirs]):
        result = invoke(args)
        assert result.exit_code == EXIT_INTEGRITY, (args[0], result.output)
        assert victim.name in result.output or "fe" in result.output


# --- a git object missing from an incomplete clone --------------------------------------


def test_a_missing_git_object_stops_ingest_naming_it(tmp_path: Path) -> None:
    builder = toy_repo(tmp_path / "inferencex")
    blob = builder.repo.head.commit.tree[SCRIPT].hexsha
    loose = builder.root / ".git" / "objects" / blob[:2] / blob[2:]
    loose.chmod(0o644)
    loose.unlink()
    out = tmp_path / "out"
    args = ["ingest", "inferencex", str(builder.root)]
    result = invoke([*args, "--ledger", str(out / "ledger"), "--evidence", str(out / "evidence")])
    assert result.exit_code == EXIT_INPUT, result.output
    assert result.output.startswith(f"incomplete repository: {SCRIPT}: git object {blob} ")
    assert not out.exists(), "nothing half-written"


# --- API answers: wrong JSON types, a redirect to another host ----------------------------

PULL = "/repos/SemiAnalysisAI/InferenceX/pulls/2120"
PR_2120 = PrRef(repo="SemiAnalysisAI/InferenceX", number=2120)


@pytest.fixture
def fake() -> Iterator[FakeGitHub]:
    server = FakeGitHub()
    server.start()
    yield server
    server.stop()


def _client(url: str) -> GitHubClient:
    return GitHubClient(SENTINEL_TOKEN, GitHubSettings(api_url=url, retries=0, backoff=0))


def _retyped(path: tuple[str, ...], value: Any) -> dict[str, Any]:
    """The recorded real answer for PR #2120 with one value replaced."""
    body: dict[str, Any] = recorded("inferencex-pull-2120.json")
    node = body
    for key in path[:-1]:
        node[key] = dict(node[key])
        node = node[key]
    node[path[-1]] = value
    return body


@pytest.mark.parametrize(
    ("path", "value"),
    [
        (("head",), "a string"),
        (("title",), {"an": "object"}),
        (("merged",), "yes"),
        (("head", "repo"), 5),
        (("base", "ref"), ["a", "list"]),
    ],
)
def test_an_api_answer_with_wrong_json_types_is_a_network_error(
    fake: FakeGitHub, path: tuple[str, ...], value: object
) -> None:
    fake.add("GET", PULL, Response(200, _retyped(path, value)))
    with pytest.raises(NetworkError) as caught:
        _client(fake.base_url).pull(PR_2120)
    assert caught.value.exit_code == EXIT_NETWORK
    assert "unexpected answer from the API" in caught.value.message


def test_an_api_redirect_to_another_host_is_not_followed(fake: FakeGitHub) -> None:
    other = FakeGitHub()
    other.start()
    try:
        other.add("GET", "/x", Response(200, recorded("inferencex-pull-2120.json")))
        port = other.base_url.rsplit(":", 1)[1]
        fake.add("GET", PULL, Response(301, {}, {"Location": f"http://localhost:{port}/x"}))
        with pytest.raises(NetworkError) as caught:
            _client(fake.base_url).pull(PR_2120)
        assert "redirected to another host; not followed" in caught.value.message
        assert other.requests == [], "the token went to the other host"
    finally:
        other.stop()


# --- a 5,000-character recipe argument ---------------------------------------------------


@pytest.mark.parametrize("name", ["x" * 5000, "Org/" + "y" * 5000, "a/" * 2500])
@pytest.mark.parametrize("command", ["audit", "combos", "explain", "cite", "suggest"])
def test_a_5000_character_recipe_argument_is_a_located_error(command: str, name: str) -> None:
    result = invoke([command, name])
    assert result.exit_code in (EXIT_INPUT, 2), result.output
    assert result.output.startswith(("invalid input: ", "Usage: ", "usage error: "))
