"""A thin, typed wrapper over PyGithub: the only module that talks to the GitHub REST API.

* The token comes only from an environment variable (``GITHUB_TOKEN`` unless told
  otherwise); it is never printed, logged or written, and every error message is
  passed through :func:`provenance.sources.redaction.redact`.
* Without a token, :func:`connect` returns :class:`GitHubUnavailable`: callers report
  "not checked" and carry on; it is not an error.
* Every failure (rate limit, bad credentials, 404, 5xx, refused connection, DNS,
  timeout, a malformed answer) becomes a :class:`provenance.errors.NetworkError`
  (exit 5) with a one-line message; never a traceback.
* Small timeouts and few retries (connection errors and 5xx on idempotent requests
  only; a POST is never repeated, so a comment cannot be posted twice by a retry).
  ``timeout`` bounds each socket read; a server trickling one byte at a time could
  still hold a read forever, so each API call (its pages and retries included) has a
  total ``deadline`` and the client (one command) a ``command_deadline``, enforced
  with ``SIGALRM`` in the main thread, which interrupts any blocking read.
* Everything returned is a pydantic model; no PyGithub object leaves this module.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import os
import signal
import threading
import time
import urllib.parse
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from types import FrameType
from typing import Any, NoReturn

import requests
import urllib3
from github import (
    Auth,
    BadAttributeException,
    Github,
    GithubException,
    RateLimitExceededException,
)
from pydantic import BaseModel, ConfigDict, Field
from urllib3.util.retry import Retry

from provenance.errors import NetworkError, UsageError
from provenance.model.ledger import PrRef
from provenance.sources.redaction import redact

DEFAULT_API_URL = "https://api.github.com"
DEFAULT_TOKEN_ENV = "GITHUB_TOKEN"  # noqa: S105 (a variable name, not a secret)
#: GitHub Actions sets this to the API of the instance the job runs on.
API_URL_ENV = "GITHUB_API_URL"


class GitHubUnavailable(BaseModel):
    """The GitHub API was not consulted (no token): report "not checked", not an error."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    reason: str

    def describe(self, what: str) -> str:
        return f"{what}: not checked ({self.reason})"


class GitHubSettings(BaseModel):
    """Where and how to reach the API. Tests point ``api_url`` at 127.0.0.1."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    api_url: str = DEFAULT_API_URL
    token_env: str = DEFAULT_TOKEN_ENV
    timeout: int = Field(default=10, ge=1, le=120)
    retries: int = Field(default=2, ge=0, le=5)
    backoff: float = Field(default=0.2, ge=0.0, le=5.0)
    per_page: int = Field(default=100, ge=1, le=100)
    #: seconds for one API call, all its pages and retries included
    deadline: float = Field(default=60, gt=0, le=600)
    #: seconds for every API call of one client (one command) together
    command_deadline: float = Field(default=300, gt=0, le=3600)

    @classmethod
    def from_environment(
        cls, token_env: str = DEFAULT_TOKEN_ENV, environ: Mapping[str, str] | None = None
    ) -> GitHubSettings:
        env = os.environ if environ is None else environ
        return cls(api_url=env.get(API_URL_ENV) or DEFAULT_API_URL, token_env=token_env)


class PullInfo(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    ref: PrRef
    title: str
    body: str
    state: str
    merged: bool
    head_sha: str
    head_ref: str
    head_repo: str | None
    base_ref: str
    html_url: str


class WorkflowRunInfo(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    run_id: int
    attempt: int
    name: str
    path: str
    head_sha: str
    head_branch: str | None
    event: str
    status: str
    conclusion: str | None
    html_url: str
    display_title: str = ""


class JobInfo(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    job_id: int
    name: str
    status: str
    conclusion: str | None
    html_url: str | None = None


class CommentInfo(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    comment_id: int
    body: str
    user: str | None
    html_url: str


def resolve_token(token_env: str, environ: Mapping[str, str] | None = None) -> str | None:
    """The token in ``token_env``, or None when it is unset or blank."""
    env = os.environ if environ is None else environ
    value = env.get(token_env, "").strip()
    if any(ch.isspace() or not ch.isprintable() for ch in value):
        raise UsageError(
            f"the token in ${token_env} contains whitespace or control characters",
            hint="store the token alone, on one line",
        )
    return value or None


def check_api_url(api_url: str) -> str:
    """Refuse to send a token in clear text: ``http://`` only to a loopback address."""
    parsed = urllib.parse.urlsplit(api_url)
    if parsed.scheme not in {"https", "http"} or not parsed.hostname:
        raise UsageError(f"not an API URL: {api_url!r}")
    if parsed.scheme == "http" and not _is_loopback(parsed.hostname):
        raise UsageError(
            f"refusing to send a GitHub token over plain http to {parsed.hostname}",
            hint="use an https:// API URL",
        )
    return api_url.rstrip("/")


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def connect(
    settings: GitHubSettings, environ: Mapping[str, str] | None = None
) -> GitHubClient | GitHubUnavailable:
    """A client when a token is available, else why the API will not be consulted."""
    token = resolve_token(settings.token_env, environ)
    if token is None:
        return GitHubUnavailable(reason=f"no {settings.token_env}")
    return GitHubClient(token, settings)


class GitHubClient:
    """Typed reads and the two writes (create/edit an issue comment) ``provenance`` needs."""

    def __init__(self, token: str, settings: GitHubSettings) -> None:
        self._token = token
        self._settings = settings
        self._ends_at = time.monotonic() + settings.command_deadline
        self._api_url = check_api_url(settings.api_url)
        retry = Retry(
            total=settings.retries,
            connect=settings.retries,
            read=settings.retries,
            status=settings.retries,
            backoff_factor=settings.backoff,
            status_forcelist=(500, 502, 503, 504),
            raise_on_status=False,
            respect_retry_after_header=False,
        )
        self._github = Github(
            auth=Auth.Token(token),
            base_url=self._api_url,
            timeout=settings.timeout,
            per_page=settings.per_page,
            retry=retry,
            seconds_between_requests=None,
            seconds_between_writes=None,
            lazy=True,
        )

    @property
    def api_url(self) -> str:
        return self._api_url

    def close(self) -> None:
        with self._translated("closing the connection"):  # even past the deadline
            self._github.close()

    def __enter__(self) -> GitHubClient:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    # --- reads -----------------------------------------------------------------

    def pull(self, ref: PrRef) -> PullInfo:
        with self._guard(f"reading pull request {ref}"):
            pull = self._github.get_repo(ref.repo).get_pull(ref.number)
            head_repo = pull.head.repo
            return PullInfo(
                ref=ref,
                title=pull.title or "",
                body=pull.body or "",
                state=pull.state,
                merged=bool(pull.merged),
                head_sha=pull.head.sha,
                head_ref=pull.head.ref,
                head_repo=head_repo.full_name if head_repo is not None else None,
                base_ref=pull.base.ref,
                html_url=pull.html_url,
            )

    def pull_commits(self, ref: PrRef) -> tuple[str, ...]:
        """SHAs of the commits in the pull request (the API lists at most 250)."""
        with self._guard(f"listing the commits of {ref}"):
            pull = self._github.get_repo(ref.repo).get_pull(ref.number)
            return tuple(commit.sha for commit in pull.get_commits())

    def workflow_runs(
        self, repo: str, workflow_file: str, *, branch: str, event: str
    ) -> tuple[WorkflowRunInfo, ...]:
        with self._guard(f"listing {workflow_file} runs of {repo} on branch {branch!r}"):
            workflow = self._github.get_repo(repo).get_workflow(workflow_file)
            return tuple(_run_info(run) for run in workflow.get_runs(branch=branch, event=event))

    def run_attempt(self, repo: str, run_id: int, attempt: int) -> WorkflowRunInfo:
        """One (earlier) attempt of a workflow run."""
        with self._guard(f"reading attempt {attempt} of run {run_id} in {repo}"):
            run = self._github.get_repo(repo).get_workflow_run(run_id)
            # a lazy attempt object takes its id from the URL's last segment (the attempt
            # number): the run id is the one asked for
            return _run_info(run.get_attempt(attempt)).model_copy(update={"run_id": run_id})

    def run_jobs(self, repo: str, run_id: int, attempt: int | None = None) -> tuple[JobInfo, ...]:
        """The jobs (check-runs) of the latest attempt of a run, or of ``attempt``."""
        which = f"attempt {attempt} of run" if attempt is not None else "run"
        with self._guard(f"listing the jobs of {which} {run_id} in {repo}"):
            run = self._github.get_repo(repo).get_workflow_run(run_id)
            jobs = run.get_attempt(attempt).jobs() if attempt is not None else run.jobs("latest")
            return tuple(
                JobInfo(
                    job_id=job.id,
                    name=job.name,
                    status=job.status,
                    conclusion=job.conclusion,
                    html_url=job.html_url,
                )
                for job in jobs
            )

    def issue_comments(self, ref: PrRef) -> tuple[CommentInfo, ...]:
        with self._guard(f"listing the comments of {ref}"):
            issue = self._github.get_repo(ref.repo).get_issue(ref.number)
            return tuple(_comment_info(c) for c in issue.get_comments())

    # --- writes ----------------------------------------------------------------

    def create_comment(self, ref: PrRef, body: str) -> CommentInfo:
        with self._guard(f"commenting on {ref}"):
            issue = self._github.get_repo(ref.repo).get_issue(ref.number)
            return _comment_info(issue.create_comment(body))

    def edit_comment(self, ref: PrRef, comment_id: int, body: str) -> CommentInfo:
        with self._guard(f"editing comment {comment_id} on {ref}"):
            issue = self._github.get_repo(ref.repo).get_issue(ref.number)
            comment = issue.get_comment(comment_id)
            comment.edit(body)
            return _comment_info(comment)

    # --- errors ----------------------------------------------------------------

    @contextmanager
    def _guard(self, what: str) -> Iterator[None]:
        """Turn every failure inside the block into one redacted NetworkError; the block
        must finish within the call's deadline and what is left of the command's."""
        left = self._ends_at - time.monotonic()
        if left <= 0:
            self._raise(what, f"the {self._settings.command_deadline:g}s deadline ran out")
        budget = min(self._settings.deadline, left)
        if budget == self._settings.deadline:
            late = f"no complete answer within the {budget:g}s call deadline"
        else:
            spent = self._settings.command_deadline
            late = f"no complete answer before the {spent:g}s command deadline"
        try:
            with _deadline(budget), self._translated(what):
                yield
        except _DeadlineExceeded:
            self._raise(what, late)

    @contextmanager
    def _translated(self, what: str) -> Iterator[None]:
        try:
            yield
        except GithubException as exc:
            self._raise(what, _describe_http(exc))
        except requests.exceptions.Timeout:
            self._raise(what, f"timed out after {self._settings.timeout}s")
        except requests.exceptions.ConnectionError as exc:
            self._raise(what, _describe_connection(exc, self._api_url))
        except (requests.exceptions.RequestException, urllib3.exceptions.HTTPError) as exc:
            self._raise(what, f"request failed: {type(exc).__name__}: {exc}")
        except (
            BadAttributeException
        ) as exc:  # not a GithubException: a JSON value of the wrong type
            self._raise(what, f"unexpected answer from the API (a value of the wrong type: {exc})")
        except RuntimeError as exc:  # PyGithub refuses a redirect to another host with this
            if "redirected" in str(exc):
                self._raise(what, f"the API redirected to another host; not followed ({exc})")
            self._raise(what, f"unexpected answer from the API ({type(exc).__name__}: {exc})")
        except (AssertionError, KeyError, TypeError, ValueError, AttributeError) as exc:
            self._raise(what, f"unexpected answer from the API ({type(exc).__name__}: {exc})")

    def _raise(self, what: str, detail: str) -> NoReturn:
        message = redact(
            f"GitHub API at {self._api_url}: {what}: {detail}",
            [self._token, repr(self._token)[1:-1]],
        )
        raise NetworkError(
            message,
            hint="check the network and the token, or run without a token to skip online checks",
        ) from None


class _DeadlineExceeded(BaseException):  # a BaseException: no retry or handler swallows it
    """The deadline of an API call passed (raised by the SIGALRM handler)."""


@contextmanager
def _deadline(seconds: float) -> Iterator[None]:
    """Raise :class:`_DeadlineExceeded` in the block after ``seconds``, even inside a
    blocking socket read. Only the main thread can take signals; elsewhere the socket
    timeout alone applies. A timer armed outside (a test runner's) is re-armed after."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def expire(_signum: int, _frame: FrameType | None) -> None:
        raise _DeadlineExceeded

    previous = signal.signal(signal.SIGALRM, expire)
    outer, _ = signal.setitimer(signal.ITIMER_REAL, seconds)
    started = time.monotonic()
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        if outer:
            signal.setitimer(signal.ITIMER_REAL, max(outer - (time.monotonic() - started), 1e-3))


def _run_info(run: Any) -> WorkflowRunInfo:
    return WorkflowRunInfo(
        run_id=run.id,
        attempt=run.run_attempt or 1,
        name=run.name or "",
        path=run.path or "",
        head_sha=run.head_sha,
        head_branch=run.head_branch,
        event=run.event or "",
        status=run.status or "",
        conclusion=run.conclusion,
        html_url=run.html_url,
        display_title=run.display_title or "",
    )


def _comment_info(comment: Any) -> CommentInfo:
    user = comment.user
    return CommentInfo(
        comment_id=comment.id,
        body=comment.body or "",
        user=user.login if user is not None else None,
        html_url=comment.html_url,
    )


def _header(headers: Mapping[str, Any] | None, name: str) -> str | None:
    if not headers:
        return None
    for key, value in headers.items():
        if key.lower() == name.lower():
            return str(value)
    return None


def _describe_http(exc: GithubException) -> str:
    status = exc.status
    headers = exc.headers
    data = exc.data if isinstance(exc.data, dict) else {}
    api_message = str(data.get("message") or "").strip()
    remaining = _header(headers, "X-RateLimit-Remaining")
    retry_after = _header(headers, "Retry-After")
    if status in (403, 429) and (
        remaining == "0" or retry_after is not None or isinstance(exc, RateLimitExceededException)
    ):
        return f"rate limit exceeded (HTTP {status}){_reset_text(headers, retry_after)}"
    if status == 401:
        return "bad credentials (HTTP 401): the token is invalid, expired or revoked"
    if status == 403:
        return f"forbidden (HTTP 403): the token lacks permission ({api_message or 'no message'})"
    if status == 404:
        return "not found (HTTP 404): no such repository, pull request or run, or no access"
    if status >= 500:
        return f"GitHub server error (HTTP {status}); try again later"
    return f"HTTP {status}: {api_message or 'no message'}"


def _reset_text(headers: Mapping[str, Any] | None, retry_after: str | None) -> str:
    reset = _header(headers, "X-RateLimit-Reset")
    if reset is not None and reset.isdigit():
        when = dt.datetime.fromtimestamp(int(reset), tz=dt.UTC)
        return f"; it resets at {when:%Y-%m-%d %H:%M:%S} UTC"
    if retry_after is not None and retry_after.isdigit():
        return f"; retry after {int(retry_after)}s"
    return ""


def _describe_connection(exc: requests.exceptions.ConnectionError, api_url: str) -> str:
    text = str(exc)
    lowered = text.lower()
    if "refused" in lowered:
        return f"connection refused by {api_url} (offline?)"
    if any(
        marker in lowered
        for marker in ("name or service not known", "nodename nor servname", "name resolution")
    ):
        return f"cannot resolve the host of {api_url} (DNS failure; offline?)"
    if "timed out" in lowered:
        return "connection timed out"
    return f"cannot connect to {api_url}: {text}"
