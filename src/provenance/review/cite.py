"""``provenance cite``: the citations block for one recipe, or for what a PR changes."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict

from provenance.audit.pipeline import AuditFilters, AuditInputs, ledger_dirs, run_audit
from provenance.audit.verdicts import AuditReport
from provenance.errors import UsageError
from provenance.review.citations import Lang, build_citations, render_citations


class CiteRequest(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    recipes: tuple[str, ...] = ()
    recipes_root: Path | None = None
    ledger: Path | None = None
    evidence: Path | None = None
    repo: Path | None = None
    base: str | None = None
    head: str | None = None
    langs: tuple[Lang, ...] = ("en",)
    filters: AuditFilters = AuditFilters()


def parse_langs(text: str) -> tuple[Lang, ...]:
    langs: list[Lang] = []
    for part in (p.strip() for p in text.split(",")):
        if part == "en":
            langs.append("en")
        elif part == "zh":
            langs.append("zh")
        elif part:
            raise UsageError(f"unknown language {part!r}: use en, zh or en,zh")
    if not langs:
        raise UsageError("--lang needs en, zh or en,zh")
    return tuple(dict.fromkeys(langs))


def cite_report(request: CiteRequest) -> AuditReport | None:
    """The audit whose evidence is cited: of the PR's head, or of the given recipes."""
    if request.repo is not None or request.base or request.head:
        if request.repo is None or not request.base or not request.head:
            raise UsageError("--repo, --base and --head go together")
        from provenance.review.pr_audit import PrAuditRequest, run_pr_audit

        result = run_pr_audit(
            PrAuditRequest(
                repo=request.repo,
                base=request.base,
                head=request.head,
                ledger=request.ledger,
                evidence=request.evidence,
                filters=request.filters,
            )
        )
        return result.head_report
    return run_audit(
        AuditInputs(
            recipes=request.recipes,
            recipes_root=request.recipes_root,
            ledger=request.ledger,
            evidence=request.evidence,
        ),
        request.filters,
    )


def cite(request: CiteRequest) -> str:
    """Markdown citations block in the requested languages."""
    from provenance.store.ledger import Ledger

    report = cite_report(request)
    if report is None:
        return "<!-- provenance: this PR changes no recipe; nothing to cite -->\n"
    ledger, _evidence = ledger_dirs(AuditInputs(ledger=request.ledger, evidence=request.evidence))
    return render_citations(build_citations(report, Ledger(ledger).entries()), request.langs)
