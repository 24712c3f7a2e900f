"""Every markdown surface, rendered by real CommonMark + GFM renderers, stays inert.

A corpus of hostile values (raw HTML, images, links and autolinks, mentions, emails,
pipes that would split a table cell, code fences, headings, entities) is placed in
every untrusted field a markdown output shows: a variant name, a hardware id, a flag
value, an evidence config key, a PR title, the revisions of a PR audit. Each surface —
the audit report (``--format markdown``), the PR diff (the PR comment and the job
summary of the Action), the PR-body citations (``cite``, English and 中文), ``suggest``, the GitHub
section of a job summary — is rendered by markdown-it-py (``gfm-like``: tables,
strikethrough, linkify, raw HTML) and by cmark-gfm (GitHub's own renderer, with its
table, autolink and tagfilter extensions, raw HTML kept), and the HTML is inspected:

* the page has exactly the elements (and links) of the same surface rendered with an
  innocent value in every field: a value adds no element, splits no cell, opens no
  emphasis, heading or list;
* only the tags the renderers write for our own markup, no event handler or ``src``;
* every link is one ``provenance`` wrote (to github.com) and no link carries a value;
* no ``@mention`` outside code;
* and the hostile value really reached the page (a guard against testing nothing).
"""

from __future__ import annotations

import io
import re
from collections.abc import Callable
from html.parser import HTMLParser

import cmarkgfm
import pytest
from audit_builders import NVFP4, StandInNormaliser, graph_of, single_record
from cmarkgfm.cmark import Options
from markdown_it import MarkdownIt

from provenance.audit.pipeline import RecipeInput, audit
from provenance.audit.verdicts import AuditReport
from provenance.github.pr import GitHubPrReport
from provenance.model.combination import RenderResult, RoleCommand, Selection
from provenance.model.flags import FlagSet
from provenance.model.ledger import LedgerEntry, PrRef, SweepRun
from provenance.model.record import EvidenceRecord
from provenance.report import diff as diff_report
from provenance.report import markdown as audit_markdown
from provenance.review.citations import build_citations, render_citations
from provenance.review.diff import diff_reports

#: Every hostile value names this host: no link, image or source may carry it.
HOST = "attacker.example"
HOSTILE = [
    # the example: a pipe ends the table cell, the rest becomes live markdown
    f"x | <img src=https://{HOST}/p.png> @everyone **FORGED** | y",
    f"<script>alert('{HOST}')</script>",
    f"<img src=x onerror=alert(1)>{HOST}",
    f"[click](https://{HOST}/) and ![p](https://{HOST}/p.png)",
    f"<https://{HOST}/auto> <mailto:someone@{HOST}>",
    f"https://{HOST}/bare and www.{HOST} and http://{HOST}:8080/x",
    f"write to someone@{HOST} or @octocat/team",
    f"[ref]\n\n[ref]: https://{HOST}/ref",
    f"`code` ``x`` ```y``` {HOST} | `|` \\| \\\\| end",
    f"</td><td>{HOST}</td></tr><tr><td>",
    f"<!-- {HOST} --> <?php {HOST} ?> <![CDATA[{HOST}]]>",
    f"&lt;img src={HOST}&gt; &#x3C;b&#x3E;{HOST}&#60;/b&#62;",
    f"line\n## heading {HOST}\n- item\n> quote",
    f"javascript:alert('{HOST}') data:text/html,{HOST}",
    f"<details open><summary>{HOST}</summary>FORGED</details>",
    f"\\<b>{HOST}\\</b> *em* _em_ ~~del~~ **FORGED**",
    f"| --- | --- |\n| {HOST} | row |",
    f"{HOST}\u202e\u2066\x1b[31m\x07 \u200b@\u200beveryone",
]

#: Tags the renderers write for provenance's own markup.
ALLOWED_TAGS = {
    "h2", "h3", "h4", "p", "ul", "ol", "li", "table", "thead", "tbody", "tr", "th", "td",
    "code", "strong", "em", "br", "blockquote", "a",
    # the PR comment folds what does not block (its own fixed tags, never a value's)
    "details", "summary",
}  # fmt: skip
INNOCENT = "innocent"
ALIGN = re.compile(r"text-align:(left|right|center)")
MENTION = re.compile(r"(?<![\w.+\-/])@[A-Za-z0-9]")


class _Page(HTMLParser):
    """Tags with attributes, and text with the tags it sits in."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.open: list[str] = []
        self.texts: list[tuple[tuple[str, ...], str]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        if tag not in {"br", "img", "hr", "input"}:
            self.open.append(tag)

    def handle_endtag(self, tag: str) -> None:
        if tag in self.open:
            while self.open.pop() != tag:
                pass

    def handle_data(self, data: str) -> None:
        self.texts.append((tuple(self.open), data))

    def handle_comment(self, data: str) -> None:
        self.tags.append(("!--", {}))

    def handle_pi(self, data: str) -> None:
        self.tags.append(("?", {}))

    def unknown_decl(self, data: str) -> None:
        self.tags.append(("!", {}))


def _markdown_it(text: str) -> str:
    return str(MarkdownIt("gfm-like").render(text))


def _cmark_gfm(text: str) -> str:
    return str(cmarkgfm.github_flavored_markdown_to_html(text, options=Options.CMARK_OPT_UNSAFE))


RENDERERS: dict[str, Callable[[str], str]] = {"markdown-it": _markdown_it, "cmark-gfm": _cmark_gfm}


def _page(markdown: str, render: Callable[[str], str]) -> _Page:
    page = _Page()
    page.feed(render(markdown))
    page.close()
    return page


def _structure(page: _Page) -> list[tuple[str, str | None]]:
    return [(tag, attrs.get("href")) for tag, attrs in page.tags]


def assert_inert(markdown: str, innocent: str, render: Callable[[str], str]) -> str:
    """Render ``markdown`` (and ``innocent``, the same surface without hostile values) and
    check the page; the page's visible text."""
    page = _page(markdown, render)
    assert _structure(page) == _structure(_page(innocent, render)), "a value changed the page"
    for tag, attrs in page.tags:
        assert tag in ALLOWED_TAGS, f"live {tag!r} element {attrs}"
        for name, value in attrs.items():
            allowed = (
                name == "href"
                or (name == "style" and ALIGN.fullmatch(value or ""))
                or (name == "align" and value in {"left", "right", "center"})
            )
            assert allowed and not name.startswith("on"), (tag, name, value)
        if tag == "a":
            href = attrs.get("href") or ""
            assert href.startswith("https://github.com/") and HOST not in href, href
    for where, text in page.texts:
        if "a" in where:
            assert HOST not in text, f"a value in a link: {text!r}"
        if "code" not in where and "a" not in where:
            assert not MENTION.search(text), f"a live mention: {text!r}"
    return "".join(text for _, text in page.texts)


# --- the surfaces --------------------------------------------------------------------

REF = PrRef(repo="SemiAnalysisAI/InferenceX", number=2120)


def _command(value: str) -> tuple[str, ...]:
    return ("vllm", "serve", NVFP4, "--tensor-parallel-size", "8", "--kv-cache-dtype", value)


def _record(config_key: str, value: str, hardware: str = "b200") -> EvidenceRecord:
    plain = single_record(config_key, "tensor_parallel_size=8", hardware=hardware)
    roles = {"serve": FlagSet({"tensor_parallel_size": "8", "kv_cache_dtype": value})}
    return plain.model_copy(update={"roles": roles, "id": ""}).with_id()


def _combo(variant: str, hardware: str, value: str) -> tuple[Selection, RenderResult]:
    selection = Selection(
        variant=variant, hardware=hardware, strategy="single_node_tp", node_count=1
    )
    role = RoleCommand(role="serve", node_rank=None, argv=_command(value), env={})
    return selection, RenderResult(deploy_type="single_node", model_id=NVFP4, roles=(role,))


def hostile_audit(value: str) -> tuple[AuditReport, list[LedgerEntry]]:
    """A report where the value is a variant, a hardware id, a flag value, an evidence
    config key and the PR title: recommended, guide-only and reverse entries."""
    normaliser = StandInNormaliser()
    backed = _record(f"{value}-b200", value)
    unmatched = _record(value, "fp8", hardware="h100")
    entries = [
        LedgerEntry(
            pr=REF,
            title=value,
            records=(backed.id, unmatched.id),
            sweeps=(SweepRun(run_id=1, head_sha="0" * 40, conclusion="success", source=value),),
        )
    ]
    combos = [
        _combo(value, "b200", value),  # recommended: the record ran exactly this
        _combo(value, value, value),  # guide-only: no evidence on that hardware
        _combo("nvfp4", "b200", f"{value}-changed"),  # guide-only: a value mismatch
    ]
    recipe = RecipeInput(ref="MiniMaxAI/MiniMax-M3", combinations=combos)
    graph = graph_of([backed, unmatched], entries, normaliser)
    return audit([recipe], graph, normaliser), entries


def _audit_markdown(value: str) -> str:
    out = io.StringIO()
    audit_markdown.write(hostile_audit(value)[0], out)
    return out.getvalue()


def _pr_diff(value: str) -> str:
    """The PR comment and the Action's job summary (``audit --repo --format markdown``)."""
    report = hostile_audit(value)[0]
    empty = report.model_copy(update={"verdicts": ()})
    out = io.StringIO()
    diff_report.write_markdown(diff_reports(empty, report, base_label=value, head_label=value), out)
    return out.getvalue()


def _cite(value: str) -> str:
    report, entries = hostile_audit(value)
    return render_citations(build_citations(report, entries), ("en", "zh"))


def _github_section(value: str) -> str:
    from provenance.github.pr import render_markdown

    return render_markdown(GitHubPrReport(pr=REF, not_checked=value))


def _suggest(value: str) -> str:
    """``suggest --format markdown``: the value as recipe, variant, flag, hardware,
    checkpoint, deployment and reason of what no edit can express."""
    from provenance.report import suggest as suggest_report
    from provenance.review.suggest.model import EvidenceNeed, Inexpressible, SuggestReport

    report = SuggestReport(
        recipe=value,
        recipe_file=value,
        combinations=3,
        recommended=0,
        candidates_proven=2,
        inexpressible=(
            Inexpressible(
                variant=value, flag=value, value=value, backed=(value,), unbacked=(), why=value
            ),
        ),
        evidence_needed=(
            EvidenceNeed(
                variant=value,
                hardware=value,
                strategy=value,
                checkpoint=value,
                deployment=value,
                combinations=1,
                why=value,
                flags={value: (f"kv_cache_dtype={value}",)},
            ),
        ),
    )
    out = io.StringIO()
    suggest_report.write_markdown(report, out)
    return out.getvalue()


SURFACES: dict[str, Callable[[str], str]] = {
    "audit-markdown": _audit_markdown,
    "pr-diff": _pr_diff,
    "cite": _cite,
    "suggest": _suggest,
    "job-summary-github": _github_section,
}


@pytest.mark.parametrize("renderer", sorted(RENDERERS))
@pytest.mark.parametrize("surface", sorted(SURFACES))
def test_every_markdown_surface_is_inert_for_every_hostile_value(
    surface: str, renderer: str
) -> None:
    innocent = SURFACES[surface](INNOCENT)
    for value in HOSTILE:
        markdown = SURFACES[surface](value)
        visible = assert_inert(markdown, innocent, RENDERERS[renderer])
        # the guard: the value was shown (escaped), not dropped
        assert HOST in visible, (surface, value, markdown)


@pytest.mark.parametrize("renderer", sorted(RENDERERS))
def test_the_checks_catch_what_they_look_for(renderer: str) -> None:
    """Each check fails on the markdown it exists for (the raw value in a table cell)."""
    render = RENDERERS[renderer]
    table = "| a | b |\n|---|---|\n| `{}` | b |\n"  # a code span in a table cell, unescaped
    for raw, innocent in (
        (table.format(HOSTILE[0]), table.format(INNOCENT)),
        (f"see https://{HOST}/x", "see innocent"),
        ("hi @octocat", "hi innocent"),
        (f"**{HOST}**", "innocent"),
        (f"<img src=https://{HOST}/p.png>", "innocent"),
    ):
        assert_inert(innocent, innocent, render)
        with pytest.raises(AssertionError):
            assert_inert(raw, innocent, render)
