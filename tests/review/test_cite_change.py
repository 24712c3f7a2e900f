"""`provenance cite --repo/--base/--head` cites what the PR adds or changes, nothing else."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from recipes_history import HISTORY, replay_pr682
from recipes_repo import EMBEDDED, REPO_ROOT, keep, pr_repo

from provenance.audit.pipeline import AuditFilters
from provenance.cli.main import cli
from provenance.escaping import markdown_inline
from provenance.model.combination import Selection
from provenance.review.cite import CiteRequest, cite
from provenance.review.introduced import (
    entries_by_group,
    introduced_entries,
    recipes_without_evidence,
)
from provenance.review.pr_audit import PrAuditRequest, run_pr_audit

LEDGER, EVIDENCE = REPO_ROOT / "ledger", REPO_ROOT / "evidence"
TAXONOMY = yaml.safe_load((EMBEDDED / "taxonomy.yaml").read_text())
AMD = {hw for hw, p in TAXONOMY["hardware_profiles"].items() if p.get("brand") == "AMD"}
#: ``- backs <flags> · variants <…> · on <hardware> · roles <…>``
BACKS_HARDWARE = re.compile(r"^\s*- (?:backs|ran) .* · on (?P<hw>.*?) · roles ")


def _amd_only(data: dict[str, Any]) -> None:
    """The PR: one more major flag for mxfp8 on MI355X only."""
    override = data["variants"]["mxfp8"]["hardware_overrides"]["mi355x"]
    override["extra_args"] = [*override["extra_args"], "--kv-cache-dtype", "fp8"]


def _backed_hardware(block: str) -> dict[str, set[str]]:
    """Evidence PR (``InferenceX\\#N``) -> the hardware its ``backs`` and ``ran`` lines name
    (the PRs set aside as not evidence are not evidence PRs)."""
    out: dict[str, set[str]] = {}
    pr, aside = "", False
    for line in block.splitlines():
        if line.startswith("#### "):
            pr, aside = "", line.startswith("#### Not evidence")
        if aside:
            continue
        head = re.match(r"^- \*\*\[(?P<pr>[^\]]+)\]", line)
        if head:
            pr = head["pr"]
            out[pr] = set()
        found = BACKS_HARDWARE.match(line)
        if found and pr:
            out[pr] |= {h.strip("` ") for h in found["hw"].split(",")}
    return out


def _changed_selections(request: PrAuditRequest) -> tuple[set[Selection], int, object]:
    result = run_pr_audit(request)
    changed = {s for g in result.diff.changes if g.kind != "removed" for s in g.iter_selections()}
    assert result.head_report is not None
    entries = introduced_entries(result.head_report, result.diff)
    cited = {s for e in entries for s in e.iter_selections()}
    assert sum(e.combinations for e in entries) == len(cited)
    # cut group by group in one pass: each group's own combinations, exactly
    groups = [g for g in result.diff.changes if g.kind != "removed"]
    for group, cut in zip(groups, entries_by_group(result.head_report, groups), strict=True):
        assert {s for e in cut for s in e.iter_selections()} == set(group.iter_selections())
        assert sum(e.combinations for e in cut) == group.combinations
    return changed, len(cited), cited


def test_amd_only_pr_cites_amd_evidence_only(tmp_path: Path) -> None:
    work, base, head = pr_repo(tmp_path, keep, _amd_only)
    inputs = {"ledger": LEDGER, "evidence": EVIDENCE}
    change = cite(CiteRequest(repo=work, base=base, head=head, **inputs))
    whole = cite(CiteRequest(recipes_root=work, **inputs))
    assert change != whole
    assert "### Evidence for this change" in change
    assert "Only the combinations this PR adds or changes are cited" in change
    cited, everything = _backed_hardware(change), _backed_hardware(whole)
    assert cited, change
    assert all(hw and hw <= AMD for hw in cited.values()), cited
    nvidia_only = {pr for pr, hw in everything.items() if hw and not hw & AMD}
    assert nvidia_only and not nvidia_only & set(cited)
    assert "InferenceX\\#2120" in whole and "InferenceX\\#2120" not in change
    # exactly the changed combinations: every one of them, nothing else
    request = PrAuditRequest(repo=work, base=base, head=head, **inputs)
    changed, count, selections = _changed_selections(request)
    assert selections == changed and count == len(changed)
    assert {(s.variant, s.hardware) for s in changed} == {("mxfp8", "mi355x")}
    assert f"are cited: {count} combinations." in change


def test_pr_that_changes_no_combination_cites_nothing(tmp_path: Path) -> None:
    def retitle(data: dict[str, Any]) -> None:
        data["meta"]["title"] = "MiniMax-M3, retitled"

    work, base, head = pr_repo(tmp_path, keep, retitle)
    filters = AuditFilters(variants=("nvfp4",), hardware=("b200",), features="none")
    request = CiteRequest(
        repo=work, base=base, head=head, ledger=LEDGER, evidence=EVIDENCE,
        langs=("en", "zh"), filters=filters,
    )  # fmt: skip
    text = cite(request)
    assert "This PR adds or changes no combination: nothing to cite." in text
    assert "本 PR 没有新增或修改任何组合：无需引用。" in text
    assert "InferenceX" not in text


def test_a_model_the_ledger_has_no_evidence_for_is_told_so(tmp_path: Path) -> None:
    ledger, evidence = tmp_path / "ledger", tmp_path / "evidence"
    ledger.mkdir()
    evidence.mkdir()
    work, base, head = pr_repo(tmp_path, keep, _amd_only)
    filters = AuditFilters(variants=("mxfp8",), hardware=("mi355x",), features="none")
    request = CiteRequest(
        repo=work, base=base, head=head, ledger=ledger, evidence=evidence,
        langs=("en", "zh"), filters=filters,
    )  # fmt: skip
    text = cite(request)
    assert (
        "**The ledger has no InferenceX evidence for the model of `MiniMaxAI/MiniMax-M3` "
        "on any hardware audited"
    ) in text
    assert "账本中没有以下配方所用模型的 InferenceX 基准证据 `MiniMaxAI/MiniMax-M3`" in text
    # the PR audit's outputs say it too, and the gate does not block the unbenchmarked
    plain = (
        "The ledger has no InferenceX evidence for the model of MiniMaxAI/MiniMax-M3 on any "
        "hardware audited"
    )
    args = [
        "audit", "--repo", str(work), "--base", base, "--head", head, "--ledger", str(ledger),
        "--evidence", str(evidence), "--variant", "mxfp8", "--hardware", "mi355x",
        "--features", "none",
    ]  # fmt: skip
    for fmt, shown in (
        ("text", plain),
        ("markdown", markdown_inline(plain)),
        ("html", plain),
        ("json", '"no_evidence":["MiniMaxAI/MiniMax-M3"]'),
    ):
        run = CliRunner().invoke(cli, [*args, "--format", fmt])
        assert run.exit_code == 0, (fmt, run.output)
        assert shown in run.stdout, fmt
    # the embedded ledger has evidence for it: nothing said
    result = run_pr_audit(
        PrAuditRequest(
            repo=work, base=base, head=head, ledger=LEDGER, evidence=EVIDENCE, filters=filters
        )
    )
    assert result.head_report is not None and recipes_without_evidence(result.head_report) == ()


@pytest.fixture(scope="module")
def pr682(tmp_path_factory: pytest.TempPathFactory) -> PrAuditRequest:
    """The embedded recipes root in a git repository: base = after recipes #672, head =
    after #682 (the FP8 indexer added to nvfp4 and mxfp8)."""
    if not HISTORY.is_dir():
        pytest.skip("../shared/corpus is absent")
    work, base, head = replay_pr682(tmp_path_factory.mktemp("pr682"))
    return PrAuditRequest(repo=work, base=base, head=head, ledger=LEDGER, evidence=EVIDENCE)


@pytest.mark.corpus
def test_pr682_cites_the_changed_variants_only(pr682: PrAuditRequest) -> None:
    changed, count, selections = _changed_selections(pr682)
    assert selections == changed
    assert {s.variant for s in changed} == {"nvfp4", "mxfp8"}
    text = cite(CiteRequest(repo=pr682.repo, base=pr682.base, head=pr682.head, langs=("en", "zh")))
    assert f"are cited: {count} combinations." in text
    assert f"只引用本 PR 新增或修改的组合：{count} 个组合。" in text
    # the unchanged variants (bf16 default, AMD's mxfp4) are not cited
    assert "`mxfp4`" not in text and "`default`" not in text
    assert "InferenceX\\#2120" in text  # it backs the FP8 indexer the PR adds to nvfp4
