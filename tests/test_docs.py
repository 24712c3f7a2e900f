"""Every relative link in README.md and docs/*.md points at a file that exists, and every
`#anchor` (in the same page or another markdown page) names a heading of that page."""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import unquote

import pytest

REPO = Path(__file__).resolve().parents[1]
PAGES = sorted([REPO / "README.md", *(REPO / "docs").glob("*.md")])

FENCE = re.compile(r"^\s*(```|~~~)")
HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$")
INLINE_CODE = re.compile(r"`[^`]*`")
# [text](target) and ![alt](target); the target ends at whitespace or the closing paren.
LINK = re.compile(r"!?\[(?:[^\]\\]|\\.)*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
EXTERNAL = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")  # http:, https:, mailto: ...


def _prose_lines(text: str) -> list[tuple[int, str]]:
    """(line number, line) outside fenced code blocks."""
    out: list[tuple[int, str]] = []
    fenced = False
    for number, line in enumerate(text.splitlines(), start=1):
        if FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced:
            out.append((number, line))
    return out


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link's text only
    text = text.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    seen: dict[str, int] = {}
    out: set[str] = set()
    for _, line in _prose_lines(page.read_text(encoding="utf-8")):
        match = HEADING.match(line)
        if not match:
            continue
        base = slug(match.group(2))
        count = seen.get(base, 0)
        seen[base] = count + 1
        out.add(base if count == 0 else f"{base}-{count}")
    return out


def links(page: Path) -> list[tuple[int, str]]:
    out: list[tuple[int, str]] = []
    for number, line in _prose_lines(page.read_text(encoding="utf-8")):
        for match in LINK.finditer(INLINE_CODE.sub("", line)):
            out.append((number, match.group(1)))
    return out


def test_slug_follows_github() -> None:
    assert slug("`provenance verify`") == "provenance-verify"
    assert slug("`provenance audit`: verdicts, reasons, reverse direction, claims") == (
        "provenance-audit-verdicts-reasons-reverse-direction-claims"
    )
    assert slug("5. The topology the schema cannot express") == (
        "5-the-topology-the-schema-cannot-express"
    )
    assert slug("never-jointly-observed") == "never-jointly-observed"


def test_the_checker_finds_links_and_skips_code(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "# Title\n\nSee [a](a.md#x) and ![img](img/p.png) but not `[b](b.md)`.\n"
        "```\n[c](c.md)\n# not a heading\n```\n## Title\n",
        encoding="utf-8",
    )
    assert links(page) == [(3, "a.md#x"), (3, "img/p.png")]
    assert anchors(page) == {"title", "title-1"}


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(REPO)))
def test_relative_links_resolve(page: Path) -> None:
    broken: list[str] = []
    for number, target in links(page):
        if EXTERNAL.match(target):
            continue
        path_part, _, anchor = target.partition("#")
        dest = (page.parent / unquote(path_part)).resolve() if path_part else page
        where = f"{page.relative_to(REPO)}:{number}: {target}"
        if not dest.exists():
            broken.append(f"{where} (no such file)")
            continue
        if anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            broken.append(f"{where} (no heading #{anchor} in {dest.name})")
    assert not broken, "broken links:\n" + "\n".join(broken)


def test_readme_links_every_doc() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    linked = {
        (REPO / target.partition("#")[0]).resolve()
        for _, target in links(REPO / "README.md")
        if not EXTERNAL.match(target)
    }
    missing = [
        str(doc.relative_to(REPO)) for doc in REPO.glob("docs/*.md") if doc.resolve() not in linked
    ]
    assert readme and not missing, f"README.md does not link: {missing}"
