"""PR-body citations (pure) and the one marked comment, against the recorded API."""

from __future__ import annotations

import pytest
from github_fake import SENTINEL_TOKEN, FakeGitHub, assert_no_sentinel, serve_recipes_682
from hypothesis import assume, given
from hypothesis import strategies as st

from provenance.audit.verdicts import AuditReport
from provenance.github.pr import (
    COMMENT_LIMIT,
    COMMENT_MARKER,
    cited_refs,
    evidence_prs,
    find_citations,
    github_pr_report,
    missing_citations,
    render_markdown,
    render_text,
    review_pr,
    upsert_comment,
    with_marker,
)
from provenance.model.ledger import PrRef
from provenance.sources.github import GitHubClient, GitHubSettings, GitHubUnavailable

IX = "SemiAnalysisAI/InferenceX"
R2120 = PrRef(repo=IX, number=2120)
R2310 = PrRef(repo=IX, number=2310)
R2314 = PrRef(repo=IX, number=2314)
RECIPES_682 = PrRef(repo="vllm-project/recipes", number=682)


def client_for(fake: FakeGitHub) -> GitHubClient:
    return GitHubClient(SENTINEL_TOKEN, GitHubSettings(api_url=fake.base_url, retries=0))


# --- pure body parsing ------------------------------------------------------------


@pytest.mark.parametrize(
    "body",
    [
        "Validated in InferenceX#2120.",
        "Validated in SemiAnalysisAI/InferenceX#2120.",
        "see https://github.com/SemiAnalysisAI/InferenceX/pull/2120",
        "see https://github.com/semianalysisai/inferencex/pull/2120/files#diff-1",
        "see [the sweep](https://github.com/SemiAnalysisAI/InferenceX/issues/2120)",
        "evidence: #2120",
        "(#2120)",
    ],
)
def test_each_accepted_form_cites(body: str) -> None:
    assert cited_refs(body, [R2120, R2310]) == {R2120}
    assert missing_citations(body, [R2120, R2310]) == (R2310,)


@pytest.mark.parametrize(
    "body",
    [
        "InferenceX#21200",
        "SemiAnalysisAI/InferenceX#212",
        "other/InferenceX#2120",
        "recipes#2120",
        "https://github.com/other/InferenceX/pull/2120",
        "<!-- InferenceX#2120 -->",
        "commit abc#2120def",
        "&#2120;",
        "",
    ],
)
def test_near_misses_do_not_cite(body: str) -> None:
    assert cited_refs(body, [R2120]) == frozenset()


def test_short_forms_need_an_unambiguous_target() -> None:
    fork = PrRef(repo="someone/InferenceX", number=2120)
    other_repo = PrRef(repo="vllm-project/vllm", number=2120)
    assert cited_refs("#2120", [R2120, other_repo]) == frozenset()
    assert cited_refs("InferenceX#2120", [R2120, other_repo]) == {R2120}
    assert cited_refs("InferenceX#2120", [R2120, fork]) == frozenset()
    assert cited_refs("SemiAnalysisAI/InferenceX#2120", [R2120, fork]) == {R2120}


def test_find_citations_reports_each_form_once() -> None:
    body = "InferenceX#2120, https://github.com/SemiAnalysisAI/InferenceX/pull/2310 and #2314"
    forms = [(c.form, c.number) for c in find_citations(body)]
    assert forms == [("url", 2310), ("short", 2120), ("bare", 2314)]


_refs = st.builds(
    PrRef,
    repo=st.sampled_from([IX, "vllm-project/recipes", "someone/InferenceX"]),
    number=st.integers(min_value=1, max_value=99_999),
)


@given(body=st.text(max_size=200), required=st.lists(_refs, max_size=5), extra=_refs)
def test_citing_a_url_always_counts_and_results_partition(
    body: str, required: list[PrRef], extra: PrRef
) -> None:
    assume("<!--" not in body)
    refs = [*required, extra]
    text = f"{body}\n{extra.url}\n"
    cited = cited_refs(text, refs)
    missing = missing_citations(text, refs)
    assert extra in cited
    assert set(missing) | cited == set(refs)
    assert not set(missing) & cited


# --- against the recorded API ---------------------------------------------------------


def test_check_reports_the_missing_evidence_pr(fake_github: FakeGitHub) -> None:
    serve_recipes_682(fake_github)
    report = review_pr(client_for(fake_github), RECIPES_682, [R2120, R2310, R2314])
    assert report.check is not None
    assert report.check.head_sha == "406b2539e6e047d7798acdf8af2b6f36a639fbf0"
    assert len(report.check.commits) == 2
    assert report.check.cited == (R2120, R2310)
    assert report.check.missing == (R2314,)  # only inside an HTML comment
    assert report.comment is None
    text = render_text(report)
    assert "does not cite 1 of 3" in text
    assert "https://github.com/SemiAnalysisAI/InferenceX/pull/2314" in text
    assert_no_sentinel(text, report.model_dump_json())


def test_comment_is_created_once_then_updated(fake_github: FakeGitHub) -> None:
    serve_recipes_682(fake_github)
    client = client_for(fake_github)
    comments_path = "/repos/vllm-project/recipes/issues/682/comments"

    first = upsert_comment(client, RECIPES_682, "provenance: 3 guide-only combinations")
    assert first.action == "created"
    second = upsert_comment(client, RECIPES_682, "provenance: 1 guide-only combination")
    assert second.action == "updated"
    assert second.comment_id == first.comment_id
    third = upsert_comment(client, RECIPES_682, "provenance: 1 guide-only combination")
    assert third.action == "unchanged"

    assert fake_github.count("POST", comments_path) == 1
    comments = fake_github.comments[("vllm-project/recipes", 682)]
    marked = [c for c in comments if COMMENT_MARKER in c["body"]]
    assert len(comments) == 2  # the reviewer's and ours
    assert len(marked) == 1
    assert marked[0]["body"] == f"{COMMENT_MARKER}\nprovenance: 1 guide-only combination"
    assert sum(1 for r in fake_github.requests if r.method == "PATCH") == 1
    for comment in comments:
        assert_no_sentinel(comment["body"])


def test_an_existing_marked_comment_is_edited_not_duplicated(fake_github: FakeGitHub) -> None:
    serve_recipes_682(fake_github)
    client = client_for(fake_github)
    report = review_pr(client, RECIPES_682, [R2120], comment_body="first run")
    assert report.comment is not None and report.comment.action == "created"
    fresh = client_for(fake_github)  # a later CI run: new process, same PR
    again = review_pr(fresh, RECIPES_682, [R2120], comment_body="second run")
    assert again.comment is not None and again.comment.action == "updated"
    assert fake_github.count("POST", "/repos/vllm-project/recipes/issues/682/comments") == 1


def test_comment_bodies_are_cut_to_githubs_limit() -> None:
    text = with_marker("x" * (COMMENT_LIMIT * 2))
    assert len(text) <= COMMENT_LIMIT
    assert text.startswith(COMMENT_MARKER)
    assert "truncated" in text


def test_without_a_token_the_pr_is_not_checked() -> None:
    report = review_pr(GitHubUnavailable(reason="no GITHUB_TOKEN"), RECIPES_682, [R2120], "x")
    assert report.check is None and report.comment is None
    assert render_text(report) == (
        "GitHub PR vllm-project/recipes#682: not checked (no GITHUB_TOKEN)\n"
    )


def test_evidence_prs_come_from_recommended_combinations_only() -> None:
    def verdict(kind: str, prs: list[str]) -> dict[str, object]:
        return {
            "recipe": "MiniMaxAI/MiniMax-M3",
            "combinations": 1,
            "selections": [],
            "verdict": kind,
            "roles": [],
            "evidence": [{"record": "ab" * 32, "prs": prs}],
        }

    report = AuditReport.model_validate(
        {
            "tool_version": "0.1.0",
            "recipes": ["MiniMaxAI/MiniMax-M3"],
            "summary": {
                "combinations": 3,
                "recommended": 2,
                "guide_only": 1,
                "declared": 0,
                "undeclared_guide_only": 1,
            },
            "verdicts": [
                verdict("recommended", [str(R2310), str(R2120)]),
                verdict("recommended", [str(R2120)]),
                verdict("guide-only", [str(R2314)]),
            ],
        }
    )
    assert evidence_prs(report) == (R2120, R2310)


def test_one_call_for_audit_and_cite(fake_github: FakeGitHub) -> None:
    serve_recipes_682(fake_github)
    environ = {"GITHUB_TOKEN": SENTINEL_TOKEN, "GITHUB_API_URL": fake_github.base_url}
    report = github_pr_report(
        "vllm-project/recipes#682", [R2120, R2314], "audit body", environ=environ
    )
    assert report.check is not None and report.check.missing == (R2314,)
    assert report.comment is not None and report.comment.action == "created"
    markdown = render_markdown(report)
    assert "does not cite 1 of 2" in markdown
    assert (
        "- [SemiAnalysisAI/InferenceX#2314](https://github.com/SemiAnalysisAI/InferenceX/pull/2314)"
        in markdown
    )
    assert_no_sentinel(markdown, report.model_dump_json())

    offline = github_pr_report("vllm-project/recipes#682", [R2120], environ={})
    assert (
        offline.not_checked == "GitHub PR vllm-project/recipes#682: not checked (no GITHUB_TOKEN)"
    )
    assert "not checked" in render_markdown(offline)


def test_a_reply_quoting_the_marker_is_not_taken_for_ours(fake_github: FakeGitHub) -> None:
    serve_recipes_682(fake_github)
    quoting = {
        "id": 4100000002,
        "url": "https://api.github.com/repos/vllm-project/recipes/issues/comments/4100000002",
        "html_url": "https://github.com/vllm-project/recipes/pull/682#issuecomment-4100000002",
        "body": f"> why does the bot write {COMMENT_MARKER}?",
        "user": {"login": "reviewer", "id": 1000001, "type": "User"},
    }
    fake_github.comments[("vllm-project/recipes", 682)].append(quoting)
    result = upsert_comment(client_for(fake_github), RECIPES_682, "audit")
    assert result.action == "created"
    assert quoting["body"] == f"> why does the bot write {COMMENT_MARKER}?"
