"""The PR audit runs both sides recipe by recipe and shares its work between them (one
load of each recipe, one judge and one renderer per recipe for the audit and the tuning
comparison, freed as soon as both sides are done with them; ``docs/performance.md``).
None of that may change a report: on real recipes PRs that change a shared strategy
file and re-audit every recipe, the PR audit must equal the plain one — each side
audited alone by :func:`run_audit` with its own evidence, the two diffed, and the
tuning comparison run afresh on freshly loaded recipes.

Needs a clone of vllm-project/recipes with its history: ``$PROVENANCE_RECIPES_GIT``
(bare or not), else ``../.mirror/vllm-project+recipes/repo`` beside the checkout."""

from __future__ import annotations

from pathlib import Path

import pytest
from recipes_support import recipes_git

from provenance.audit.normaliser import PolicyNormaliser
from provenance.audit.pipeline import AuditFilters, AuditInputs, enumeration_options, run_audit
from provenance.audit.verdicts import AuditReport
from provenance.normalise.policy import load_policy
from provenance.review.diff import DiffReport, diff_reports
from provenance.review.pr_audit import (
    PrAuditRequest,
    declared_kv_offload,
    documentation_only,
    run_pr_audit,
    shared_change,
)
from provenance.review.revisions import changed_recipes, materialise, model_paths
from provenance.review.tuning import TuningChange, recipe_pairs, tuning_changes
from provenance.sources.git import open_repo, resolve_commit

#: real merged recipes PRs changing a strategy file (every recipe re-audited on both
#: sides, narrowed to the strategy) and some recipes
REAL = [
    ("6f19519bb", "Remove enforce eager in prefill of PD (#828): pd_cluster, 5 recipes"),
    ("c1be792b0", "Fix version & PD setup (#690): pd_cluster, 1 recipe"),
]


def _plain(tmp_path: Path, commit: str) -> tuple[AuditReport, AuditReport, DiffReport]:
    """Both sides audited alone (each with its own evidence, judges and renderers) and
    diffed, with the tuning comparison on freshly loaded recipes."""
    repo = open_repo(recipes_git())
    base, head = resolve_commit(repo, f"{commit}^"), resolve_commit(repo, commit)
    changed = changed_recipes(repo, base.hexsha, head.hexsha)
    assert changed.shared_changed
    base_dir, head_dir = tmp_path / "base", tmp_path / "head"
    base_dir.mkdir()
    head_dir.mkdir()
    base_present = materialise(base, model_paths(base), base_dir)
    head_present = materialise(head, model_paths(head), head_dir, judging=base)
    both = [m for m in changed.models if m in base_present and m in head_present]
    touched = frozenset(changed.models) - documentation_only(base_dir, head_dir, both)
    declared = declared_kv_offload(base_dir, base_present) | declared_kv_offload(
        head_dir, head_present
    )
    filters = AuditFilters(kv=",".join(sorted(declared))) if declared else AuditFilters()
    scope = shared_change(base_dir, head_dir)
    assert scope is not None and scope.strategies  # what these PRs are chosen for
    untouched = {m: scope.narrow(filters) for m in {*base_present, *head_present} - touched}

    def side(root: Path, present: list[str]) -> AuditReport:
        inputs = AuditInputs(
            recipes=tuple(present),
            recipes_root=root,
            report_invalid=True,
            check_filters=False,
            recipe_filters=untouched,
        )
        return run_audit(inputs, filters)

    base_report, head_report = side(base_dir, base_present), side(head_dir, head_present)
    assert not base_report.errors and not head_report.errors
    touched_recipes = {
        recipe
        for report, root in ((base_report, base_dir), (head_report, head_dir))
        for recipe, path in report.recipe_files.items()
        if Path(path).relative_to(root).as_posix() in touched
    }
    diff = diff_reports(
        base_report,
        head_report,
        base_label=base.hexsha[:12],
        head_label=head.hexsha[:12],
        touched=touched_recipes,
    )
    on_both = sorted(set(base_present) & set(head_present))
    tuning: tuple[TuningChange, ...] = tuning_changes(
        recipe_pairs(base_dir, head_dir, on_both),
        enumeration_options(filters),
        PolicyNormaliser(load_policy(base_dir)),
        own_options={m: enumeration_options(f) for m, f in untouched.items()},
    )
    return base_report, head_report, diff.model_copy(update={"tuning": tuning})


@pytest.mark.slow
@pytest.mark.parametrize(("commit", "what"), REAL, ids=[c for c, _ in REAL])
def test_side_by_side_equals_two_plain_audits(tmp_path: Path, commit: str, what: str) -> None:
    result = run_pr_audit(PrAuditRequest(repo=recipes_git(), base=f"{commit}^", head=commit))
    base_report, head_report, plain = _plain(tmp_path, commit)
    diff = result.diff
    assert diff.summary.head_combinations > 0
    assert diff.tuning  # the PRs change tuning flags: the comparison ran
    compared = ("summary", "recipes", "changes", "lens", "claims", "claims_reported", "gate")
    for name in (*compared, "tuning"):
        assert getattr(diff, name) == getattr(plain, name), name
    # the reports themselves (the HTML page, SARIF and `cite` read the head's)
    for mine, theirs in ((result.base_report, base_report), (result.head_report, head_report)):
        assert mine is not None
        for name in ("recipes", "verdicts", "claims", "reverse", "records", "summary"):
            assert getattr(mine, name) == getattr(theirs, name), name
