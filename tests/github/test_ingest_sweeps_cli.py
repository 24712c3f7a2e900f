"""``provenance ingest sweeps`` end to end: exit codes, messages, and no token anywhere."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from github_fake import SENTINEL_TOKEN, FakeGitHub, Response, assert_no_sentinel, serve_pr_2120

from provenance.cli.main import cli
from provenance.model.ledger import LedgerEntry, PrRef
from provenance.store.ledger import Ledger

PR_2120 = PrRef(repo="SemiAnalysisAI/InferenceX", number=2120)


@pytest.fixture
def ledger_root(tmp_path: Path) -> Path:
    root = tmp_path / "ledger"
    Ledger(root).write_entry(LedgerEntry(pr=PR_2120, title="Update vLLM MiniMax-M3 image tags"))
    return root


def invoke(args: list[str], env: dict[str, str]) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, ["ingest", "sweeps", *args], env=env, catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def ledger_text(root: Path) -> str:
    return "".join(p.read_text() for p in sorted(root.rglob("*.yaml")))


def test_records_the_green_run(fake_github: FakeGitHub, ledger_root: Path) -> None:
    serve_pr_2120(fake_github)
    env = {"GITHUB_TOKEN": SENTINEL_TOKEN, "GITHUB_API_URL": fake_github.base_url}
    code, out, err = invoke(["--ledger", str(ledger_root), "--pr", "InferenceX#2120"], env)
    assert (code, err) == (0, "")
    assert "green   run 29984401390 attempt 1 head 0b896e92f" in out
    assert "recorded in the ledger: run 29984401390 attempt 1, run 39900000006 attempt 1" in out
    text = ledger_text(ledger_root)
    assert "run_id: 29984401390" in text
    assert "head_sha: 0b896e92f975d0ef8e374fdc284b06444fc95242" in text
    assert "source: github-api" in text
    assert_no_sentinel(out, err, text)


def test_json_output(fake_github: FakeGitHub, ledger_root: Path) -> None:
    serve_pr_2120(fake_github)
    env = {"MY_TOKEN": SENTINEL_TOKEN, "GITHUB_API_URL": fake_github.base_url}
    code, out, _ = invoke(
        ["--ledger", str(ledger_root), "--token-env", "MY_TOKEN", "--format", "json"], env
    )
    assert code == 0
    assert '"verdict": "green"' in out
    assert_no_sentinel(out)


def test_no_token_exits_0_and_says_not_checked(ledger_root: Path) -> None:
    before = ledger_text(ledger_root)
    code, out, _ = invoke(["--ledger", str(ledger_root)], {"GITHUB_TOKEN": ""})
    assert code == 0
    assert "sweep runs: not checked (no GITHUB_TOKEN)" in out
    assert ledger_text(ledger_root) == before


@pytest.mark.parametrize(
    ("response", "expected"),
    [
        (
            Response(
                403,
                {"message": "API rate limit exceeded"},
                {"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": "1785000000"},
            ),
            "rate limit exceeded (HTTP 403); it resets at 2026-07-25 17:20:00 UTC",
        ),
        (Response(401, {"message": "Bad credentials"}), "bad credentials (HTTP 401)"),
        (Response(500, {"message": "Server Error"}), "GitHub server error (HTTP 500)"),
        (
            Response(400, {"message": f"bad header Authorization: token {SENTINEL_TOKEN}"}),
            "HTTP 400",
        ),
    ],
)
def test_api_failures_exit_5_without_traceback_or_token(
    fake_github: FakeGitHub, ledger_root: Path, response: Response, expected: str
) -> None:
    fake_github.fail_everything(response)
    before = ledger_text(ledger_root)
    env = {"GITHUB_TOKEN": SENTINEL_TOKEN, "GITHUB_API_URL": fake_github.base_url}
    code, out, err = invoke(["--ledger", str(ledger_root)], env)
    assert code == 5
    assert err.startswith("network error: GitHub API at ")
    assert expected in err
    assert "Traceback" not in err + out
    assert_no_sentinel(out, err, ledger_text(ledger_root))
    assert ledger_text(ledger_root) == before


def test_connection_refused_exits_5(closed_port_url: str, ledger_root: Path) -> None:
    env = {"GITHUB_TOKEN": SENTINEL_TOKEN, "GITHUB_API_URL": closed_port_url}
    code, out, err = invoke(["--ledger", str(ledger_root)], env)
    assert code == 5
    assert "connection refused" in err
    assert_no_sentinel(out, err)


def test_a_bad_pr_reference_is_a_usage_error(ledger_root: Path) -> None:
    code, _, err = invoke(["--ledger", str(ledger_root), "--pr", "not a ref"], {})
    assert code == 2
    assert "not a PR reference" in err


def test_plain_http_off_loopback_is_refused(ledger_root: Path) -> None:
    env = {"GITHUB_TOKEN": SENTINEL_TOKEN}
    code, _, err = invoke(["--ledger", str(ledger_root), "--api-url", "http://example.com"], env)
    assert code == 2
    assert "plain http" in err
    assert_no_sentinel(err)


def test_a_real_process_offline_exits_5_with_one_line_and_no_token(
    closed_port_url: str, ledger_root: Path
) -> None:
    env = {
        "PATH": os.environ.get("PATH", ""),
        "GITHUB_TOKEN": SENTINEL_TOKEN,
        "GITHUB_API_URL": closed_port_url,
        "PYTHONWARNINGS": "default",
    }
    result = subprocess.run(
        [
            sys.executable,
            "-c",
            "from provenance.cli.main import main; main()",
            "ingest",
            "sweeps",
            "--ledger",
            str(ledger_root),
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 5
    assert result.stderr.startswith("network error: GitHub API at http://127.0.0.1:")
    assert "connection refused" in result.stderr
    assert "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 2  # the error and its hint
    assert_no_sentinel(result.stdout, result.stderr)
