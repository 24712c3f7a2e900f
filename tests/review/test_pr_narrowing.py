"""A PR changing some variants of one recipe audits only those on the base: the diff must be
the one of two whole audits (``per_selection_diff`` on full base and head reports)."""

from __future__ import annotations

import itertools
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from per_selection_diff import assert_same_as_per_selection
from recipes_repo import (
    EMBEDDED,
    MODEL,
    commit_all,
    init_recipes_repo,
    keep,
    pr_repo,
    without_mxfp8_args,
)

from provenance.audit.pipeline import AuditFilters
from provenance.review import pr_audit
from provenance.review.pr_audit import PrAuditRequest, run_pr_audit, variant_change

Edit = Callable[[dict[str, Any]], None]


def _two_variants(data: dict[str, Any]) -> None:
    without_mxfp8_args(data)
    args = data["variants"]["nvfp4"]["extra_args"]
    index = args.index("--kv-cache-dtype")
    del args[index : index + 2]


@pytest.mark.slow
@pytest.mark.parametrize(
    ("edit_base", "edit_head", "filters", "changed"),
    [
        # the benchmark PR
        (without_mxfp8_args, keep, AuditFilters(), {"mxfp8"}),
        (keep, _two_variants, AuditFilters(), {"mxfp8", "nvfp4"}),
        # the user's filters still apply; the changed variant filtered out: nothing on the base
        (without_mxfp8_args, keep, AuditFilters(variants=("nvfp4", "mxfp4")), {"mxfp8"}),
        (
            without_mxfp8_args,
            keep,
            AuditFilters(hardware=("b200", "mi355x"), features="none"),
            {"mxfp8"},
        ),
    ],
)
def test_narrowed_base_gives_the_diff_of_two_whole_audits(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    edit_base: Edit,
    edit_head: Edit,
    filters: AuditFilters,
    changed: set[str],
) -> None:
    work, base, head = pr_repo(tmp_path, edit_base, edit_head)
    request = PrAuditRequest(repo=work, base=base, head=head, filters=filters)
    narrowed = run_pr_audit(request)
    assert narrowed.narrowed is not None and narrowed.narrowed.changed == changed
    assert narrowed.base_report is not None
    assert {s.variant for e in narrowed.base_report.verdicts for s in e.selections} <= changed
    monkeypatch.setattr(pr_audit, "variant_change", lambda *args: None)
    whole = run_pr_audit(request)
    assert whole.narrowed is None
    assert_same_as_per_selection(narrowed.diff, whole.base_report, whole.head_report)
    assert narrowed.diff.summary == whole.diff.summary


def _roots(tmp_path: Path, edit_base: Edit, edit_head: Edit) -> tuple[Path, Path]:
    roots = []
    for name, edit in (("base", edit_base), ("head", edit_head)):
        root = tmp_path / name
        shutil.copytree(EMBEDDED, root)
        data = yaml.safe_load((EMBEDDED / MODEL).read_text())
        edit(data)
        (root / MODEL).write_text(yaml.safe_dump(data, sort_keys=False))
        roots.append(root)
    return roots[0], roots[1]


def _others_on_b200_only(data: dict[str, Any]) -> None:
    for name, variant in data["variants"].items():
        if name != "mxfp8":
            variant["supported_hardware"] = ["b200"]


def _all_on_b200_only(data: dict[str, Any]) -> None:
    _others_on_b200_only(data)
    data["variants"]["mxfp8"]["supported_hardware"] = ["b200"]


def _reordered(data: dict[str, Any]) -> None:
    data["variants"] = dict(reversed(data["variants"].items()))


def _default_changed(data: dict[str, Any]) -> None:
    data["variants"]["default"]["extra_args"] = ["--max-model-len", "4096"]


def _outside_variants(data: dict[str, Any]) -> None:
    without_mxfp8_args(data)
    data["compatible_strategies"] = data["compatible_strategies"][:-1]


@pytest.mark.parametrize(
    ("edit_base", "edit_head"),
    [
        # h200 was offered through mxfp8 alone: the other variants lose it too
        (_others_on_b200_only, _all_on_b200_only),
        (keep, _reordered),
        (keep, _default_changed),
        (keep, _outside_variants),
        (keep, keep),
    ],
)
def test_no_narrowing_when_other_variants_may_change(
    tmp_path: Path, edit_base: Edit, edit_head: Edit
) -> None:
    base, head = _roots(tmp_path, edit_base, edit_head)
    assert variant_change(base, head, MODEL) is None


def test_narrowing_names_the_changed_variants(tmp_path: Path) -> None:
    base, head = _roots(tmp_path, keep, _two_variants)
    found = variant_change(base, head, MODEL)
    assert found is not None
    assert (found.recipe, found.changed) == ("MiniMaxAI/MiniMax-M3", frozenset({"mxfp8", "nvfp4"}))
    assert found.unchanged == {"default", "mxfp4"}


HISTORY = EMBEDDED.parent.parent / "shared" / "corpus" / "recipes-history" / "MiniMax-M3"


@pytest.mark.corpus
@pytest.mark.slow
def test_history_of_minimax_m3_narrowed_diffs_equal_whole_ones(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every consecutive pair of MiniMax-M3's recipe history: where the base is narrowed,
    the diff is the per-selection diff of two whole audits."""
    if not HISTORY.is_dir():
        pytest.skip("../shared/corpus is not available")
    repo = init_recipes_repo(tmp_path)
    work = Path(repo.working_tree_dir or "")
    commits = []
    for version in sorted(HISTORY.glob("*.yaml")):
        shutil.copy(version, work / MODEL)
        commits.append(commit_all(repo, version.stem))
    filters = AuditFilters(features="none", hardware=("b200", "h200", "mi355x"))
    narrowed_pairs = 0
    real_variant_change = pr_audit.variant_change
    for base, head in itertools.pairwise(commits):
        monkeypatch.setattr(pr_audit, "variant_change", real_variant_change)
        request = PrAuditRequest(repo=work, base=base, head=head, filters=filters)
        narrowed = run_pr_audit(request)
        if narrowed.narrowed is None:
            continue
        narrowed_pairs += 1
        monkeypatch.setattr(pr_audit, "variant_change", lambda *args: None)
        whole = run_pr_audit(request)
        assert_same_as_per_selection(narrowed.diff, whole.base_report, whole.head_report)
    assert narrowed_pairs >= 3
