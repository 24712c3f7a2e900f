"""``provenance cite``: the citations block for one recipe, or for what a PR changes."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from provenance.audit.pipeline import AuditFilters, AuditInputs, ledger_dirs, run_audit
from provenance.audit.verdicts import AuditReport
from provenance.errors import UsageError
from provenance.model.ledger import LedgerEntry
from provenance.review.citations import Lang, build_citations, render_citations
from provenance.review.served import PrStanding, standings


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
            if not result.changed.models:
                return None  # no recipe changed
            # recipes changed in prose only: none of their combinations changed
            return CitedAudit(report=_nothing_audited(), changed=0)
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


def _nothing_audited() -> AuditReport:
    """An audit of no combination (what a PR that changes recipes in prose only adds)."""
    from provenance import __version__
    from provenance.audit.verdicts import AuditSummary

    summary = AuditSummary(
        combinations=0, recommended=0, guide_only=0, declared=0, undeclared_guide_only=0
    )
    return AuditReport(tool_version=__version__, recipes=(), summary=summary, verdicts=())


def cite(request: CiteRequest) -> str:
    """Markdown citations block in the requested languages."""
    from provenance.store.ledger import Ledger

    cited = cite_report(request)
    if cited is None:
        return "<!-- provenance: this PR changes no recipe; nothing to cite -->\n"
    ledger, evidence = ledger_dirs(AuditInputs(ledger=request.ledger, evidence=request.evidence))
    entries = Ledger(ledger).entries()
    citations = build_citations(
        cited.report,
        entries,
        changed=cited.changed,
        no_evidence=cited.no_evidence,
        standing=report_standings(cited.report, entries, evidence),
    )
    return render_citations(citations, request.langs)


def cited_records(report: AuditReport) -> dict[str, set[str]]:
    """PR -> the records the report cites with it (flag evidence, evidence, nearest)."""
    cited: dict[str, set[str]] = {}
    for entry in report.verdicts:
        refs = [*entry.evidence, *(f for r in entry.roles for fl in r.flags for f in fl.evidence)]
        pairs = [(ref.record, ref.prs) for ref in refs]
        pairs += [(near.record, near.prs) for near in (*entry.nearest, *entry.nearest_overall)]
        for record, prs in pairs:
            for pr in prs:
                cited.setdefault(pr, set()).add(record)
    return cited


def report_standings(
    report: AuditReport, entries: Sequence[LedgerEntry], evidence: Path
) -> dict[str, PrStanding]:
    """Each cited PR's standing (:mod:`~provenance.review.served`), judged over every
    record of the checkpoints its cited records ran."""
    from provenance.audit.normaliser import PolicyNormaliser
    from provenance.store.evidence import EvidenceStore
    from provenance.store.record_index import load_scoped
    from provenance.store.verified import VerifiedRecords

    cited = cited_records(report)
    if not cited:
        return {}
    store = EvidenceStore(evidence)
    ids = {record for records in cited.values() for record in records}
    checkpoints = {r.checkpoint for r in store.load_ids(ids, VerifiedRecords.open()).values()}
    records = load_scoped(store, checkpoints, VerifiedRecords.open()).records
    return standings(entries, records, cited, PolicyNormaliser().role_major)
