"""The diff-aware audit of a recipes pull request: base and head, read from git.

:func:`run_pr_audit` resolves both revisions, finds the recipes the PR touches
(all of them when ``taxonomy.yaml``, ``strategies/`` or ``kv_store/`` change),
writes the files each side needs into private temporary directories (from git
blobs — the user's work tree is never touched), audits both sides with the same
ledger and evidence (loaded once, with one normaliser and one judge per recipe
for both sides), and diffs the two audits.
"""

from __future__ import annotations

import tempfile
from dataclasses import replace
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from provenance.audit.model import AuditReport
from provenance.audit.run import AuditFilters, AuditInputs, EvidenceCache, run_audit
from provenance.audit.validator import gc_paused
from provenance.errors import InputError
from provenance.gitread import open_repo, resolve_commit
from provenance.review.diff import DiffReport, diff_reports
from provenance.review.revisions import ChangedRecipes, changed_recipes, materialise, model_paths


class PrAuditRequest(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    repo: Path
    base: str
    head: str
    ledger: Path | None = None
    evidence: Path | None = None
    filters: AuditFilters = AuditFilters()


class PrAuditResult(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    changed: ChangedRecipes
    base_report: AuditReport | None
    head_report: AuditReport | None
    diff: DiffReport


def _audit_side(
    commit_models: list[str],
    commit: object,
    request: PrAuditRequest,
    workdir: Path,
    shared: EvidenceCache,
) -> AuditReport | None:
    import git

    assert isinstance(commit, git.Commit)
    if not commit_models:
        return None
    present = materialise(commit, commit_models, workdir)
    if not present:
        return None
    try:
        return run_audit(
            AuditInputs(
                recipes=tuple(present),
                recipes_root=workdir,
                ledger=request.ledger,
                evidence=request.evidence,
            ),
            request.filters,
            shared,
        )
    except InputError as exc:
        # Name the file as ``<commit>:<path>``, not the private temporary copy.
        if exc.location is not None and exc.location.path.startswith(str(workdir)):
            rel = exc.location.path[len(str(workdir)) :].lstrip("/")
            exc.location = replace(exc.location, path=f"{commit.hexsha[:12]}:{rel}")
        raise


def run_pr_audit(request: PrAuditRequest) -> PrAuditResult:
    repo = open_repo(request.repo)
    base = resolve_commit(repo, request.base)
    head = resolve_commit(repo, request.head)
    changed = changed_recipes(repo, base.hexsha, head.hexsha)
    if changed.shared_changed:
        base_models, head_models = model_paths(base), model_paths(head)
    else:
        base_models = head_models = list(changed.models)
    # One evidence graph, normaliser and set of judges for both sides: the head's
    # combinations are mostly the base's, so its judgements are memo hits.
    shared = EvidenceCache()
    with tempfile.TemporaryDirectory(prefix="provenance-base-") as base_dir:
        base_report = _audit_side(base_models, base, request, Path(base_dir), shared)
    with tempfile.TemporaryDirectory(prefix="provenance-head-") as head_dir:
        head_report = _audit_side(head_models, head, request, Path(head_dir), shared)
    # The diff allocates no cycles, but collections would rescan both reports' objects.
    with gc_paused():
        diff = diff_reports(
            base_report,
            head_report,
            base_label=base.hexsha[:12],
            head_label=head.hexsha[:12],
        )
    return PrAuditResult(
        changed=changed, base_report=base_report, head_report=head_report, diff=diff
    )
