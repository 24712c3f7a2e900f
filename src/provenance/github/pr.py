"""Pull-request checks for ``--github-pr OWNER/REPO#N``: citations in the body and one comment.

* :func:`find_citations` / :func:`missing_citations` are pure: which evidence PRs a PR
  body cites. Accepted forms: full URLs (``https://github.com/OWNER/REPO/pull/N``),
  ``OWNER/REPO#N``, ``REPO#N`` (when exactly one required PR has that repository name
  and number) and a bare ``#N`` (when exactly one required PR has that number).
  Text inside HTML comments is invisible on GitHub and does not count.
* :func:`upsert_comment` keeps exactly one ``provenance`` comment per PR, found by the
  hidden marker ``<!-- provenance:audit -->`` at its start: it is edited in place,
  never duplicated.
* :func:`evidence_prs` lists the PRs behind an audit's recommended combinations.
* :func:`review_pr` is the one call ``provenance audit``/``cite`` make; without a token
  it returns "not checked" instead of failing.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict

from provenance.audit.verdicts import AuditReport
from provenance.escaping import markdown_inline, terminal
from provenance.model.ledger import PrRef
from provenance.model.reasons import VerdictKind
from provenance.sources.github import (
    DEFAULT_TOKEN_ENV,
    CommentInfo,
    GitHubClient,
    GitHubSettings,
    GitHubUnavailable,
    connect,
)

COMMENT_MARKER = "<!-- provenance:audit -->"
#: GitHub refuses comment bodies longer than this (characters).
COMMENT_LIMIT = 65_536
_TRUNCATED = "\n\n…(truncated: the full report is in the job summary and the SARIF upload)\n"

_HTML_COMMENT = re.compile(r"<!--.*?(?:-->|\Z)", re.DOTALL)
_OWNER = r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})"
_REPO = r"[A-Za-z0-9._-]{1,100}"
_URL = re.compile(
    rf"https?://(?:www\.)?github\.com/(?P<owner>{_OWNER})/(?P<repo>{_REPO})/"
    r"(?:pull|issues)/(?P<number>[0-9]{1,9})(?![0-9])",
    re.IGNORECASE,
)
_QUALIFIED = re.compile(
    rf"(?<![\w./-])(?P<owner>{_OWNER})/(?P<repo>{_REPO})#(?P<number>[0-9]{{1,9}})(?![0-9])"
)
_SHORT = re.compile(rf"(?<![\w./#-])(?P<repo>{_REPO})#(?P<number>[0-9]{{1,9}})(?![0-9])")
_BARE = re.compile(r"(?<![\w/#&;.-])#(?P<number>[0-9]{1,9})(?![0-9\w])")

CitationForm = Literal["url", "qualified", "short", "bare"]


class Citation(BaseModel):
    """One reference to a PR found in a body."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    form: CitationForm
    number: int
    owner: str | None = None
    repo: str | None = None


def visible_text(body: str) -> str:
    """``body`` without HTML comments (GitHub does not show them)."""
    return _HTML_COMMENT.sub(" ", body)


def find_citations(body: str) -> tuple[Citation, ...]:
    """Every PR reference in ``body``, in the order found, each form scanned once."""
    text = visible_text(body)
    found: list[Citation] = []
    for match in _URL.finditer(text):
        found.append(
            Citation(
                form="url", owner=match["owner"], repo=match["repo"], number=int(match["number"])
            )
        )
    text = _URL.sub(" ", text)
    for match in _QUALIFIED.finditer(text):
        found.append(
            Citation(
                form="qualified",
                owner=match["owner"],
                repo=match["repo"],
                number=int(match["number"]),
            )
        )
    text = _QUALIFIED.sub(" ", text)
    for match in _SHORT.finditer(text):
        found.append(Citation(form="short", repo=match["repo"], number=int(match["number"])))
    text = _SHORT.sub(" ", text)
    for match in _BARE.finditer(text):
        found.append(Citation(form="bare", number=int(match["number"])))
    return tuple(found)


def _split(ref: PrRef) -> tuple[str, str]:
    owner, _, name = ref.repo.partition("/")
    return owner.lower(), name.lower()


def cited_refs(body: str, required: Iterable[PrRef]) -> frozenset[PrRef]:
    """The PRs of ``required`` that ``body`` cites (ambiguous short forms do not count)."""
    refs = tuple(dict.fromkeys(required))
    by_number = Counter(ref.number for ref in refs)
    by_name = Counter((_split(ref)[1], ref.number) for ref in refs)
    cited: set[PrRef] = set()
    for citation in find_citations(body):
        for ref in refs:
            owner, name = _split(ref)
            if citation.number != ref.number:
                continue
            if citation.form in ("url", "qualified"):
                hit = (citation.owner or "").lower() == owner and (
                    citation.repo or ""
                ).lower() == name
            elif citation.form == "short":
                hit = (citation.repo or "").lower() == name and by_name[(name, ref.number)] == 1
            else:
                hit = by_number[ref.number] == 1
            if hit:
                cited.add(ref)
    return frozenset(cited)


def evidence_prs(report: AuditReport) -> tuple[PrRef, ...]:
    """The evidence PRs behind the report's *recommended* combinations (what a body must cite)."""
    refs: dict[PrRef, None] = {}
    for verdict in report.verdicts:
        if verdict.verdict is not VerdictKind.RECOMMENDED:
            continue
        for evidence in verdict.evidence:
            for text in evidence.prs:
                refs[PrRef.parse(text)] = None
    return tuple(sorted(refs, key=lambda r: (r.repo, r.number)))


def missing_citations(body: str, required: Iterable[PrRef]) -> tuple[PrRef, ...]:
    """The PRs of ``required`` that ``body`` does not cite, sorted by repository and number."""
    refs = tuple(dict.fromkeys(required))
    cited = cited_refs(body, refs)
    return tuple(sorted((r for r in refs if r not in cited), key=lambda r: (r.repo, r.number)))


class PrCheck(BaseModel):
    """What the PR's body cites of the evidence behind its recommended combinations."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    pr: PrRef
    title: str
    head_sha: str
    commits: tuple[str, ...]
    required: tuple[PrRef, ...]
    cited: tuple[PrRef, ...]
    missing: tuple[PrRef, ...]


class CommentResult(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    action: Literal["created", "updated", "unchanged"]
    comment_id: int
    url: str


class GitHubPrReport(BaseModel):
    """The result of ``--github-pr`` (and ``--comment``) for audit/cite."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    pr: PrRef
    not_checked: str | None = None
    check: PrCheck | None = None
    comment: CommentResult | None = None


def check_pr(client: GitHubClient, pr: PrRef, required: Sequence[PrRef]) -> PrCheck:
    pull = client.pull(pr)
    commits = client.pull_commits(pr)
    refs = tuple(dict.fromkeys(required))
    cited = cited_refs(pull.body, refs)
    return PrCheck(
        pr=pr,
        title=pull.title,
        head_sha=pull.head_sha,
        commits=commits,
        required=refs,
        cited=tuple(sorted(cited, key=lambda r: (r.repo, r.number))),
        missing=missing_citations(pull.body, refs),
    )


def with_marker(body: str) -> str:
    """``body`` starting with the hidden marker, cut to GitHub's comment size limit."""
    text = body if body.startswith(COMMENT_MARKER) else f"{COMMENT_MARKER}\n{body}"
    if len(text) > COMMENT_LIMIT:
        text = text[: COMMENT_LIMIT - len(_TRUNCATED)] + _TRUNCATED
    return text


def find_marked(comments: Iterable[CommentInfo]) -> CommentInfo | None:
    """The oldest comment that starts with the marker (the one to keep editing).

    Ours always start with it; a reply that merely quotes the marker is left alone.
    """
    marked = [c for c in comments if c.body.lstrip().startswith(COMMENT_MARKER)]
    return min(marked, key=lambda c: c.comment_id) if marked else None


def upsert_comment(client: GitHubClient, pr: PrRef, body: str) -> CommentResult:
    """Create the one marked comment, or edit it in place; never post a second one."""
    text = with_marker(body)
    existing = find_marked(client.issue_comments(pr))
    if existing is None:
        created = client.create_comment(pr, text)
        return CommentResult(action="created", comment_id=created.comment_id, url=created.html_url)
    if existing.body == text:
        return CommentResult(
            action="unchanged", comment_id=existing.comment_id, url=existing.html_url
        )
    edited = client.edit_comment(pr, existing.comment_id, text)
    return CommentResult(action="updated", comment_id=edited.comment_id, url=edited.html_url)


def review_pr(
    github: GitHubClient | GitHubUnavailable,
    pr: PrRef,
    required: Sequence[PrRef],
    comment_body: str | None = None,
) -> GitHubPrReport:
    """Check the PR body's citations and, given a body, upsert the marked comment.

    Reads happen before the comment is written; without a token nothing is checked.
    """
    if isinstance(github, GitHubUnavailable):
        return GitHubPrReport(pr=pr, not_checked=github.describe(f"GitHub PR {pr}"))
    check = check_pr(github, pr, required)
    comment = upsert_comment(github, pr, comment_body) if comment_body is not None else None
    return GitHubPrReport(pr=pr, check=check, comment=comment)


def github_pr_report(
    pr: PrRef | str,
    required: Sequence[PrRef],
    comment_body: str | None = None,
    *,
    token_env: str = DEFAULT_TOKEN_ENV,
    api_url: str | None = None,
    environ: Mapping[str, str] | None = None,
) -> GitHubPrReport:
    """``--github-pr``/``--comment`` in one call: connect (unless no token), review, close."""
    ref = pr if isinstance(pr, PrRef) else PrRef.parse(pr)
    settings = GitHubSettings.from_environment(token_env, environ)
    if api_url:
        settings = settings.model_copy(update={"api_url": api_url})
    github = connect(settings, environ)
    try:
        return review_pr(github, ref, required, comment_body)
    finally:
        if isinstance(github, GitHubClient):
            github.close()


def render_markdown(report: GitHubPrReport) -> str:
    """A markdown section for a job summary or the PR comment (API values escaped)."""
    if report.not_checked is not None:
        return f"_{markdown_inline(report.not_checked)}_\n"
    check = report.check
    if check is None:
        return ""
    lines = [f"#### Evidence cited in {check.pr}", ""]
    if not check.required:
        lines.append("No evidence PR backs a recommended combination; nothing to cite.")
    elif check.missing:
        lines.append(
            f"The PR body does not cite {len(check.missing)} of {len(check.required)} "
            "evidence PRs behind recommended combinations:"
        )
        lines.append("")
        lines.extend(f"- [{ref}]({ref.url})" for ref in check.missing)
    else:
        lines.append(f"The PR body cites all {len(check.required)} evidence PRs.")
    return "\n".join(lines) + "\n"


def render_text(report: GitHubPrReport) -> str:
    """Terminal lines for the report (values from the API made inert)."""
    if report.not_checked is not None:
        return f"{report.not_checked}\n"
    lines = []
    check = report.check
    if check is not None:
        lines.append(
            f"{check.pr}: {terminal(check.title)} (head {check.head_sha[:9]}, "
            f"{len(check.commits)} commits)"
        )
        if not check.required:
            lines.append("  no evidence PR backs a recommended combination; nothing to cite")
        elif check.missing:
            lines.append(
                f"  the PR body does not cite {len(check.missing)} of {len(check.required)} "
                "evidence PR(s):"
            )
            lines.extend(f"    {ref}  {ref.url}" for ref in check.missing)
        else:
            lines.append(f"  the PR body cites all {len(check.required)} evidence PR(s)")
    if report.comment is not None:
        lines.append(f"  comment {report.comment.action}: {report.comment.url}")
    return "\n".join(lines) + "\n"
