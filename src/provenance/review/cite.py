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


class CitedAudit(BaseModel):
    """The audit whose evidence is cited, and (for a PR) how many combinations it has."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    report: AuditReport
    #: None: whole recipes; else the combinations the PR adds or changes (``report``
    #: holds just them)
    changed: int | None = None
    no_evidence: tuple[str, ...] = ()


def cite_report(request: CiteRequest) -> CitedAudit | None:
    """The audit whose evidence is cited: of what the PR adds or changes in its head
    (:func:`~provenance.review.introduced.introduced_report`), or of the given recipes."""
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
        if result.head_report is None:
            return None
        from provenance.review.introduced import introduced_report, recipes_without_evidence

        introduced = introduced_report(result.head_report, result.diff)
        return CitedAudit(
            report=introduced,
            changed=sum(e.combinations for e in introduced.verdicts),
            no_evidence=recipes_without_evidence(result.head_report),
        )
    report = run_audit(
        AuditInputs(
            recipes=request.recipes,
            recipes_root=request.recipes_root,
            ledger=request.ledger,
            evidence=request.evidence,
        ),
        request.filters,
    )
    from provenance.review.introduced import recipes_without_evidence

    return CitedAudit(report=report, no_evidence=recipes_without_evidence(report))


def cite(request: CiteRequest) -> str:
    """Markdown citations block in the requested languages."""
    from provenance.store.ledger import Ledger

    cited = cite_report(request)
    if cited is None:
        return "<!-- provenance: this PR changes no recipe; nothing to cite -->\n"
    ledger, _evidence = ledger_dirs(AuditInputs(ledger=request.ledger, evidence=request.evidence))
    citations = build_citations(
        cited.report,
        Ledger(ledger).entries(),
        changed=cited.changed,
        no_evidence=cited.no_evidence,
    )
    return render_citations(citations, request.langs)
