"""The PyGithub wrapper against a recorded API on 127.0.0.1: reads, errors, token safety."""

from __future__ import annotations

import time

import pytest
import requests
from github_fake import (
    SENTINEL_TOKEN,
    FakeGitHub,
    Request,
    Response,
    assert_no_sentinel,
    serve_pr_2120,
)

from provenance.errors import EXIT_NETWORK, NetworkError, UsageError
from provenance.model.ledger import PrRef
from provenance.sources.github import (
    GitHubClient,
    GitHubSettings,
    GitHubUnavailable,
    check_api_url,
    connect,
)

PR_2120 = PrRef(repo="SemiAnalysisAI/InferenceX", number=2120)


def client_for(url: str, *, retries: int = 1, timeout: int = 5) -> GitHubClient:
    return GitHubClient(
        SENTINEL_TOKEN, GitHubSettings(api_url=url, retries=retries, backoff=0, timeout=timeout)
    )


def network_error(fake_url: str, **kwargs: int) -> NetworkError:
    with pytest.raises(NetworkError) as caught:
        client_for(fake_url, **kwargs).pull(PR_2120)
    error = caught.value
    assert error.exit_code == EXIT_NETWORK
    assert_no_sentinel(str(error), error.diagnostic(), repr(error))
    return error


# --- token resolution -----------------------------------------------------------


def test_no_token_means_not_checked_not_an_error() -> None:
    result = connect(GitHubSettings(), environ={})
    assert isinstance(result, GitHubUnavailable)
    assert result.reason == "no GITHUB_TOKEN"
    assert result.describe("sweep runs") == "sweep runs: not checked (no GITHUB_TOKEN)"


def test_blank_token_and_other_variable_names() -> None:
    assert isinstance(connect(GitHubSettings(), environ={"GITHUB_TOKEN": "  "}), GitHubUnavailable)
    settings = GitHubSettings(token_env="RECIPES_BOT_TOKEN")
    missing = connect(settings, environ={"GITHUB_TOKEN": SENTINEL_TOKEN})
    assert isinstance(missing, GitHubUnavailable)
    assert missing.reason == "no RECIPES_BOT_TOKEN"
    assert isinstance(
        connect(settings, environ={"RECIPES_BOT_TOKEN": SENTINEL_TOKEN}), GitHubClient
    )


def test_api_url_comes_from_github_api_url() -> None:
    settings = GitHubSettings.from_environment(
        environ={"GITHUB_API_URL": "https://ghe.example/api/v3"}
    )
    assert settings.api_url == "https://ghe.example/api/v3"
    assert GitHubSettings.from_environment(environ={}).api_url == "https://api.github.com"


def test_token_is_never_sent_in_clear_text_off_loopback() -> None:
    assert check_api_url("https://api.github.com/") == "https://api.github.com"
    assert check_api_url("http://127.0.0.1:8080") == "http://127.0.0.1:8080"
    assert check_api_url("http://localhost:1") == "http://localhost:1"
    with pytest.raises(UsageError, match="plain http"):
        check_api_url("http://api.github.com")
    with pytest.raises(UsageError):
        check_api_url("file:///etc/passwd")


# --- reads ----------------------------------------------------------------------


def test_reads_pull_commits_runs_and_paginated_jobs(fake_github: FakeGitHub) -> None:
    serve_pr_2120(fake_github)
    client = client_for(fake_github.base_url)
    pull = client.pull(PR_2120)
    assert pull.head_sha == "093dc522f55ea29549d31384657edab7396048d0"
    assert pull.head_ref == "wzhao/m3-b300-update-2"
    assert pull.merged
    commits = client.pull_commits(PR_2120)
    assert len(commits) == 16
    assert "0b896e92f975d0ef8e374fdc284b06444fc95242" in commits
    runs = client.workflow_runs(
        PR_2120.repo, "run-sweep.yml", branch=pull.head_ref, event="pull_request"
    )
    run = next(r for r in runs if r.run_id == 29984401390)
    assert (run.attempt, run.head_sha, run.conclusion) == (
        1,
        "0b896e92f975d0ef8e374fdc284b06444fc95242",
        "success",
    )
    jobs = client.run_jobs(PR_2120.repo, 29984401390)
    assert len(jobs) == 109  # more than one page of 100
    assert fake_github.count("GET", f"/repos/{PR_2120.repo}/actions/runs/29984401390/jobs") == 2
    listing = next(r for r in fake_github.requests if r.path.endswith("/run-sweep.yml/runs"))
    assert listing.query["branch"] == "wzhao/m3-b300-update-2"
    assert listing.query["event"] == "pull_request"


def test_the_token_is_sent_as_authorization(fake_github: FakeGitHub) -> None:
    serve_pr_2120(fake_github)
    client_for(fake_github.base_url).pull(PR_2120)
    assert fake_github.requests[0].headers["Authorization"] == f"token {SENTINEL_TOKEN}"


# --- failures -------------------------------------------------------------------


def test_primary_rate_limit_names_the_reset_time(fake_github: FakeGitHub) -> None:
    fake_github.fail_everything(
        Response(
            403,
            {
                "message": "API rate limit exceeded for user ID 1.",
                "documentation_url": "https://docs.github.com/rest/rate-limit",
            },
            {
                "X-RateLimit-Limit": "5000",
                "X-RateLimit-Remaining": "0",
                "X-RateLimit-Reset": "1785000000",
            },
        )
    )
    error = network_error(fake_github.base_url)
    assert "rate limit exceeded (HTTP 403)" in error.message
    assert "resets at 2026-07-25 17:20:00 UTC" in error.message
    assert "SemiAnalysisAI/InferenceX#2120" in error.message
    assert len(fake_github.requests) == 1  # no sleeping retry loop on a rate limit


def test_secondary_rate_limit_429_with_retry_after(fake_github: FakeGitHub) -> None:
    fake_github.fail_everything(
        Response(
            429, {"message": "You have exceeded a secondary rate limit."}, {"Retry-After": "60"}
        )
    )
    error = network_error(fake_github.base_url)
    assert "rate limit exceeded (HTTP 429); retry after 60s" in error.message


def test_bad_credentials(fake_github: FakeGitHub) -> None:
    fake_github.fail_everything(
        Response(401, {"message": "Bad credentials", "documentation_url": "x", "status": "401"})
    )
    assert "bad credentials (HTTP 401)" in network_error(fake_github.base_url).message


def test_not_found(fake_github: FakeGitHub) -> None:
    error = network_error(fake_github.base_url)  # nothing is served
    assert "not found (HTTP 404)" in error.message


def test_server_error_is_retried_a_little_then_reported(fake_github: FakeGitHub) -> None:
    fake_github.fail_everything(Response(500, {"message": "Server Error"}))
    error = network_error(fake_github.base_url, retries=2)
    assert "GitHub server error (HTTP 500)" in error.message
    assert len(fake_github.requests) == 3


def test_connection_refused(closed_port_url: str) -> None:
    error = network_error(closed_port_url)
    assert "connection refused" in error.message
    assert "Traceback" not in error.diagnostic()


def test_timeout(fake_github: FakeGitHub) -> None:
    def slow(_req: Request) -> Response:
        time.sleep(2.5)
        return Response(200, {})

    fake_github.add("GET", "/repos/SemiAnalysisAI/InferenceX/pulls/2120", slow)
    error = network_error(fake_github.base_url, retries=0, timeout=1)
    assert "timed out" in error.message


def test_an_echoed_token_in_an_error_body_is_redacted(fake_github: FakeGitHub) -> None:
    fake_github.fail_everything(
        Response(
            422,
            {"message": f"Validation failed; request had Authorization: token {SENTINEL_TOKEN}"},
        )
    )
    error = network_error(fake_github.base_url)
    assert "HTTP 422" in error.message
    assert "[REDACTED]" in error.message


def test_a_malformed_answer_is_a_network_error(fake_github: FakeGitHub) -> None:
    fake_github.add(
        "GET", "/repos/SemiAnalysisAI/InferenceX/pulls/2120", Response(200, {"number": "x"})
    )
    with pytest.raises(NetworkError):
        client_for(fake_github.base_url).pull(PR_2120)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "Failed to resolve 'api.github.com' ([Errno -2] Name or service not known)",
            "DNS failure",
        ),
        ("NameResolutionError: temporary failure in name resolution", "DNS failure"),
        ("[Errno 111] Connection refused", "connection refused"),
        ("Read timed out.", "timed out"),
        ("Connection reset by peer", "cannot connect to"),
    ],
)
def test_connection_failures_are_named(text: str, expected: str) -> None:
    from provenance.sources.github import _describe_connection

    assert expected in _describe_connection(
        requests.exceptions.ConnectionError(text), "https://api.github.com"
    )


def test_a_token_with_control_characters_is_refused_without_echoing_it() -> None:
    with pytest.raises(UsageError) as caught:
        connect(GitHubSettings(), environ={"GITHUB_TOKEN": f"{SENTINEL_TOKEN}\nX-Evil: 1"})
    assert "control characters" in caught.value.message
    assert_no_sentinel(caught.value.diagnostic())
