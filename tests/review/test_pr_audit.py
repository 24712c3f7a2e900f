"""Diff-aware audit against git repositories built in the test (no checkout, no network)."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import git
import pytest
import yaml
from recipes_repo import EMBEDDED, MODEL, REPO_ROOT, work_tree
from recipes_repo import commit_all as _commit
from recipes_repo import init_recipes_repo as _init

from provenance.audit.pipeline import AuditFilters
from provenance.audit.verdicts import AuditReport
from provenance.errors import InputError
from provenance.model.combination import Selection
from provenance.model.reasons import ReasonCode
from provenance.report.diff import verdict_line
from provenance.report.pr_json import read_pr
from provenance.review.pr_audit import PrAuditRequest, run_pr_audit

HISTORY = REPO_ROOT.parent / "shared" / "corpus" / "recipes-history" / "MiniMax-M3"
INDEXER = ("attention_config.indexer_kv_dtype", "fp8")


def _without_mxfp8_indexer(path: Path) -> None:
    data = yaml.safe_load(path.read_text())
    data["variants"]["mxfp8"].pop("extra_args")
    path.write_text(yaml.safe_dump(data, sort_keys=False))


def _mxfp8_indexer_pr(tmp_path: Path) -> tuple[Path, str, str]:
    """A recipes repository whose head adds the FP8 indexer back to the mxfp8 variant:
    its work tree, base and head."""
    repo = _init(tmp_path)
    work = work_tree(repo)
    _without_mxfp8_indexer(work / MODEL)
    base = _commit(repo, "base")
    shutil.copy(EMBEDDED / MODEL, work / MODEL)
    return work, base, _commit(repo, "head")


def _ledger(tmp_path: Path, declarations: list[dict[str, object]] | None = None) -> Path:
    ledger = tmp_path / "ledger"
    (tmp_path / "evidence").mkdir(exist_ok=True)
    ledger.mkdir(exist_ok=True)
    if declarations is not None:
        (ledger / "declarations.yaml").write_text(
            yaml.safe_dump(
                {"schema": "provenance.ledger.declarations/v1", "declarations": declarations}
            )
        )
    return ledger


FILTERS = AuditFilters(variants=("mxfp8",), hardware=("b200", "h200"), features="none")
#: the project's own ledger and evidence store (the embedded ones)
LEDGER, EVIDENCE = REPO_ROOT / "ledger", REPO_ROOT / "evidence"


def _embedded_ledger_with(tmp_path: Path, declarations: list[dict[str, object]]) -> Path:
    """A copy of the project's ledger with these declarations."""
    ledger = tmp_path / "ledger"
    shutil.copytree(LEDGER, ledger)
    (ledger / "declarations.yaml").write_text(
        yaml.safe_dump(
            {"schema": "provenance.ledger.declarations/v1", "declarations": declarations}
        )
    )
    return ledger


def test_added_flag_is_listed_everywhere_it_newly_appears(tmp_path: Path) -> None:
    repo = _init(tmp_path)
    _without_mxfp8_indexer(work_tree(repo) / MODEL)
    base = _commit(repo, "base")
    shutil.copy(EMBEDDED / MODEL, work_tree(repo) / MODEL)
    head = _commit(repo, "add the FP8 indexer cache to mxfp8")
    result = run_pr_audit(
        PrAuditRequest(
            repo=work_tree(repo),
            base=base,
            head=head,
            ledger=LEDGER,
            evidence=EVIDENCE,
            filters=FILTERS,
        )
    )
    diff = result.diff
    assert result.changed.models == (MODEL,) and not result.changed.shared_changed
    assert diff.summary.new == 0 and diff.summary.removed == 0
    # Expected from the two audits themselves: combinations whose roles gained the flag.
    assert result.base_report is not None and result.head_report is not None
    before = _roles_with(result.base_report)
    after = _roles_with(result.head_report)
    gained = {sel for sel, roles in after.items() if roles - before.get(sel, set())}
    assert gained, "the PR adds the flag somewhere"
    changes = list(diff.iter_changes())
    changed = {c.selection for c in changes if c.kind == "flags-changed"}
    assert changed == gained
    for change in changes:
        added = {role for role, flags in change.flags.added.items() if INDEXER in flags.items()}
        assert added == after[change.selection] - before.get(change.selection, set())
    # pd_cluster on Blackwell had the flag already (strategy override): not a change ...
    assert any(s.strategy == "pd_cluster" and s.hardware == "b200" for s in after.keys() - gained)
    # ... but the lens lists every combination and role in which the flag now appears.
    entry = {(e.key, e.value): e for e in diff.lens}[INDEXER]
    occurrences = [
        (sel, role.role)
        for o in entry.occurrences
        for sel in o.iter_selections()
        for role in o.roles
    ]
    assert set(occurrences) == {(sel, role) for sel, roles in after.items() for role in roles}
    assert {sel.hardware for sel, _ in occurrences} == {"b200", "h200"}
    assert entry.evidenced + entry.unevidenced == len(occurrences)
    # The gate blocks where the cell has in-scope evidence and none sets the new flag;
    # a cell nobody benchmarked (no-evidence before and after) is reported, not blocked.
    assert not diff.gate.passed
    by_cell = {c.selection: c for c in changes}
    unevidenced = {
        sel
        for sel in gained
        if any(
            (f.key, f.value) == INDEXER and not f.evidence
            for e in result.head_report.verdicts
            if sel in set(e.iter_selections())
            for r in e.roles
            for f in r.flags
        )
    }
    blocked = {sel for sel, c in by_cell.items() if c.blocking}
    unbenchmarked = {sel for sel, c in by_cell.items() if c.unbenchmarked}
    assert blocked and unbenchmarked and blocked <= unevidenced
    assert blocked | unbenchmarked <= gained and not blocked & unbenchmarked
    assert {by_cell[sel].block_reason for sel in blocked} == {"new-unevidenced-flag"}
    for sel in unbenchmarked:
        assert {r.code for r in by_cell[sel].reasons} == {ReasonCode.NO_EVIDENCE}
    assert diff.gate.blocking == len(blocked) and diff.gate.unbenchmarked == len(unbenchmarked)


def _roles_with(report: AuditReport) -> dict[Selection, set[str]]:
    """Selection -> roles whose major flags include the FP8 indexer."""
    out: dict[Selection, set[str]] = {}
    for entry in report.verdicts:
        roles = {r.role for r in entry.roles if any((f.key, f.value) == INDEXER for f in r.flags)}
        for sel in entry.iter_selections():
            out[sel] = roles
    return out


def test_declaration_lets_the_gate_pass_knowingly(tmp_path: Path) -> None:
    repo = _init(tmp_path)
    _without_mxfp8_indexer(work_tree(repo) / MODEL)
    base = _commit(repo, "base")
    shutil.copy(EMBEDDED / MODEL, work_tree(repo) / MODEL)
    head = _commit(repo, "head")
    declaration: dict[str, object] = {
        "id": "mxfp8-indexer",
        "match": {"recipe": "MiniMaxAI/MiniMax-M3", "variant": "mxfp8"},
        "reason": "FP8 indexer cache on MXFP8 is benchmarked on Blackwell only",
        "date": "2026-07-27",
    }
    ledger = _embedded_ledger_with(tmp_path, [declaration])
    request = PrAuditRequest(
        repo=work_tree(repo),
        base=base,
        head=head,
        ledger=ledger,
        evidence=EVIDENCE,
        filters=FILTERS,
    )
    diff = run_pr_audit(request).diff
    assert diff.gate.passed and diff.gate.declared > 0


def _declarations_file(declaration_id: str) -> str:
    return yaml.safe_dump(
        {
            "schema": "provenance.ledger.declarations/v1",
            "declarations": [
                {
                    "id": declaration_id,
                    "match": {"variant": "mxfp8"},
                    "reason": "benchmarked on Blackwell only",
                    "date": "2026-07-27",
                }
            ],
        }
    )


def test_a_pr_cannot_declare_its_own_guide_only_combinations(tmp_path: Path) -> None:
    """``provenance-declarations.yaml`` added by the PR itself does not relax its gate: it
    is listed for a maintainer's review and applies once merged (the next PR's base)."""
    work, base, head = _mxfp8_indexer_pr(tmp_path)
    request = PrAuditRequest(
        repo=work, base=base, head=head, ledger=LEDGER, evidence=EVIDENCE, filters=FILTERS
    )
    assert not run_pr_audit(request).diff.gate.passed
    (work / "provenance-declarations.yaml").write_text(_declarations_file("mxfp8-in-pr"))
    waived = _commit(git.Repo(work), "head, with its own acknowledgement")
    diff = run_pr_audit(request.model_copy(update={"head": waived})).diff
    assert not diff.gate.passed and diff.gate.declared == 0
    assert [(c.path, c.change) for c in diff.judging_changes] == [
        ("provenance-declarations.yaml", "added")
    ]


def test_declarations_of_the_base_judge_both_sides(tmp_path: Path) -> None:
    """Once merged, the repository's declarations count like the ledger's."""
    repo = _init(tmp_path)
    _without_mxfp8_indexer(work_tree(repo) / MODEL)
    (work_tree(repo) / "provenance-declarations.yaml").write_text(
        _declarations_file("mxfp8-indexer")
    )
    base = _commit(repo, "base, with the acknowledgement")
    shutil.copy(EMBEDDED / MODEL, work_tree(repo) / MODEL)
    head = _commit(repo, "head")
    request = PrAuditRequest(
        repo=work_tree(repo), base=base, head=head,
        ledger=LEDGER, evidence=EVIDENCE, filters=FILTERS,
    )  # fmt: skip
    diff = run_pr_audit(request).diff
    assert diff.gate.passed and diff.gate.declared > 0 and diff.judging_changes == ()
    assert {c.declared_by for c in diff.changes if c.head_verdict == "guide-only"} == {
        "mxfp8-indexer"
    }


def test_shared_file_change_audits_every_recipe_and_bad_yaml_names_the_revision(
    tmp_path: Path,
) -> None:
    repo = _init(tmp_path)
    base = _commit(repo, "base")
    taxonomy = work_tree(repo) / "taxonomy.yaml"
    taxonomy.write_text(taxonomy.read_text() + "\nhardware_profiles: {}\n")
    head = _commit(repo, "broken taxonomy")
    request = PrAuditRequest(
        repo=work_tree(repo),
        base=base,
        head=head,
        ledger=_ledger(tmp_path),
        evidence=tmp_path / "evidence",
        filters=FILTERS,
    )
    with pytest.raises(InputError) as info:
        run_pr_audit(request)
    text = str(info.value)
    assert text.startswith(f"{head[:12]}:taxonomy.yaml:") and "duplicate key" in text


def _history_repo(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """A recipes repository with one commit per MiniMax-M3 history snapshot: its work
    tree, and the commit of each recipes PR (by number)."""
    if not HISTORY.is_dir():
        pytest.skip("../shared/corpus is not available")
    repo = _init(tmp_path)
    target = work_tree(repo) / MODEL
    commits: dict[str, str] = {}
    for version in sorted(HISTORY.glob("*.yaml")):
        shutil.copy(version, target)
        pr = version.stem.rsplit("_pr", 1)[1]
        commits[pr] = _commit(repo, f"{version.stem} (#{pr})")
    return work_tree(repo), commits


@pytest.mark.corpus
def test_history_replay_pr581_changes_only_unbenchmarked_or_backed_cells_and_passes(
    tmp_path: Path,
) -> None:
    """recipes #581 changes 1032 combinations' major flags: 960 in cells no in-scope
    evidence covers before or after (reported as unbenchmarked), the rest backed."""
    from click.testing import CliRunner

    from provenance.cli.main import cli

    work, commits = _history_repo(tmp_path)
    args = [
        "audit", "--repo", str(work), "--base", commits["580"], "--head", commits["581"],
        "--ledger", str(LEDGER), "--evidence", str(EVIDENCE),
    ]  # fmt: skip
    result = CliRunner().invoke(cli, [*args, "--format", "json"])
    assert result.exit_code == 0, result.output
    diff = read_pr(result.stdout)
    assert diff.gate.passed and diff.gate.blocking == 0
    assert 0 < diff.gate.unbenchmarked < diff.summary.flags_changed
    for group in diff.changes:
        assert not group.blocking
        if group.unbenchmarked:
            assert {r.code for r in group.reasons} == {ReasonCode.NO_EVIDENCE}
    text = CliRunner().invoke(cli, [*args, "--format", "text"])
    assert text.exit_code == 0
    assert f"{diff.gate.unbenchmarked} changed combination(s) unbenchmarked" in text.stdout


@pytest.mark.corpus
def test_history_replay_pr682_adds_indexer_to_nvfp4_and_mxfp8(tmp_path: Path) -> None:
    work, commits = _history_repo(tmp_path)
    filters = AuditFilters(features="none", hardware=("b200", "mi355x"))
    diff = run_pr_audit(
        PrAuditRequest(
            repo=work,
            base=commits["672"],
            head=commits["682"],
            ledger=LEDGER,
            evidence=EVIDENCE,
            filters=filters,
        )
    ).diff
    entry = next(e for e in diff.lens if (e.key, e.value) == INDEXER)
    selections = [sel for o in entry.occurrences for sel in o.iter_selections()]
    assert {sel.variant for sel in selections} == {"nvfp4", "mxfp8"}
    # mxfp8 now carries the flag on AMD hardware too: where the unverified cross-product hides.
    assert ("mxfp8", "mi355x") in {(sel.variant, sel.hardware) for sel in selections}
    assert not diff.gate.passed


def test_cli_pr_audit_gate_exit_codes_and_formats(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from provenance.cli.main import cli

    work, base, head = _mxfp8_indexer_pr(tmp_path)
    common = [
        "audit", "--repo", str(work), "--base", base, "--head", head,
        "--ledger", str(LEDGER), "--evidence", str(EVIDENCE),
        "--variant", "mxfp8", "--features", "none",
    ]  # fmt: skip
    runner = CliRunner()
    result = runner.invoke(cli, [*common, "--hardware", "b200,h200", "--format", "markdown"])
    assert result.exit_code == 1, result.output
    assert "**gate: FAIL" in result.output
    assert "`attention_config.indexer_kv_dtype=fp8`" in result.output
    result = runner.invoke(cli, [*common, "--hardware", "b200,h200", "--format", "json"])
    assert result.exit_code == 1
    assert '"schema":"provenance.diff/v4"' in result.output.replace(" ", "")
    # On B200 the flag is benchmarked where anything is: the rest nobody benchmarked.
    result = runner.invoke(cli, [*common, "--hardware", "b200", "--format", "text"])
    assert result.exit_code == 0, result.output
    assert "gate: PASS" in result.output and "unbenchmarked" in result.output
    ledger = _embedded_ledger_with(
        tmp_path,
        [
            {
                "id": "mxfp8-indexer",
                "match": {"variant": "mxfp8"},
                "reason": "acknowledged",
                "date": "2026-07-27",
            }
        ],
    )
    args = [*common, "--hardware", "b200,h200", "--format", "text"]
    args[args.index(str(LEDGER))] = str(ledger)
    result = runner.invoke(cli, args)
    assert result.exit_code == 0, result.output
    assert "gate: PASS" in result.output
    result = runner.invoke(cli, ["audit", "--repo", str(work), "--base", base])
    assert result.exit_code == 2 and "--repo, --base and --head go together" in result.output


def test_cli_pr_audit_sarif_points_at_the_recipe_in_the_repository(tmp_path: Path) -> None:
    """The head recipe is read from git into a private copy that is gone when the
    output is written: SARIF names the file by its path in the repository and finds
    lines in the text kept with the report."""
    import json

    from click.testing import CliRunner

    from provenance.cli.main import cli

    work, base, head = _mxfp8_indexer_pr(tmp_path)
    # the work tree no longer has the head's file: lines must come from git's copy
    (work / MODEL).write_text("# not the head revision\n")
    args = [
        "audit", "--repo", str(work), "--base", base, "--head", head,
        "--ledger", str(LEDGER), "--evidence", str(EVIDENCE), "--variant", "mxfp8",
        "--hardware", "b200,h200", "--features", "none", "--format", "sarif",
    ]  # fmt: skip
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 1, result.output  # the gate fails: an unevidenced new flag
    sarif = json.loads(result.stdout)
    locations = [
        loc["physicalLocation"] for r in sarif["runs"][0]["results"] for loc in r["locations"]
    ]
    assert locations
    assert {loc["artifactLocation"]["uri"] for loc in locations} == {MODEL}
    head_lines = (EMBEDDED / MODEL).read_text().count("\n")
    assert all(1 <= loc["region"]["startLine"] <= head_lines for loc in locations)
    assert any(loc["region"]["startLine"] > 1 for loc in locations)


NVFP4_B200 = AuditFilters(variants=("nvfp4",), hardware=("b200",), features="none")


def _edit(path: Path, edit: Callable[[dict[str, Any]], None]) -> None:
    data = yaml.safe_load(path.read_text())
    edit(data)
    path.write_text(yaml.safe_dump(data, sort_keys=False))


def _recipe_pr(
    tmp_path: Path,
    edit_head: Callable[[dict[str, Any]], None],
    edit_base: Callable[[dict[str, Any]], None] | None = None,
    filters: AuditFilters = NVFP4_B200,
) -> PrAuditRequest:
    """A recipes repository whose base applies ``edit_base`` to the MiniMax-M3 recipe and
    whose head then applies ``edit_head``."""
    repo = _init(tmp_path)
    path = work_tree(repo) / MODEL
    if edit_base is not None:
        _edit(path, edit_base)
    base = _commit(repo, "base")
    _edit(path, edit_head)
    return PrAuditRequest(
        repo=work_tree(repo), base=base, head=_commit(repo, "head"),
        ledger=LEDGER, evidence=EVIDENCE, filters=filters,
    )  # fmt: skip


def test_new_verified_hardware_claim_without_a_recommended_combination_blocks(
    tmp_path: Path,
) -> None:
    def unclaimed(data: dict[str, Any]) -> None:
        data["meta"]["hardware"].pop("mi300x")

    def claim(data: dict[str, Any]) -> None:
        data["meta"]["hardware"]["mi300x"] = "verified"

    mi300x = AuditFilters(hardware=("mi300x",), features="none")
    diff = run_pr_audit(_recipe_pr(tmp_path, claim, unclaimed, mi300x)).diff
    assert diff.changes == ()  # no combination changed ...
    assert [(c.hardware, c.kv_offload) for c in diff.claims] == [("mi300x", None)]
    assert not diff.gate.passed and diff.gate.claims == 1  # ... and yet it blocks
    # the reverse PR withdraws the claim: that blocks nothing
    assert run_pr_audit(_recipe_pr(tmp_path / "back", unclaimed, claim, mi300x)).diff.gate.passed


def test_new_kv_offload_support_claim_is_enumerated_and_reported(tmp_path: Path) -> None:
    def support(data: dict[str, Any]) -> None:
        data["kv_offload_support"] = {"offloading_cpu": "verified"}

    request = _recipe_pr(tmp_path, support)
    assert request.filters.kv == "off"  # the default: KV offload not asked for
    diff = run_pr_audit(request).diff
    # the head declares KV offload: both sides enumerate it, so the PR exposes combinations
    new = [c for c in diff.iter_changes() if c.kind == "new"]
    assert new and {c.selection.kv_offload for c in new} == {"offloading_cpu"}
    assert diff.summary.new == len(new) and diff.summary.removed == 0
    # InferenceX never ran the OffloadingConnector with MiniMax-M3: outside its coverage
    assert diff.claims == ()
    assert [(c.kv_offload, c.coverage) for c in diff.claims_reported] == [
        ("offloading_cpu", "outside-coverage")
    ]
    claim = diff.claims_reported[0]
    assert claim.hardware == "" and "kv_offload_support" in claim.detail
    assert "OffloadingConnector" in claim.detail


def test_a_pr_editing_the_policy_is_judged_by_the_base_policy(tmp_path: Path) -> None:
    """A head that classes the indexer precision as tuning does not relax its own gate;
    the change is listed for review, and even a broken head policy is not read. The
    base's policy judges both sides."""
    work, base, head = _mxfp8_indexer_pr(tmp_path)
    request = PrAuditRequest(
        repo=work, base=base, head=head, ledger=LEDGER, evidence=EVIDENCE, filters=FILTERS
    )
    assert not run_pr_audit(request).diff.gate.passed
    (work / "provenance.toml").write_text(f'[policy]\n"{INDEXER[0]}" = "tuning"\n')
    relaxed = _commit(git.Repo(work), "head, under a policy of its own")
    result = run_pr_audit(request.model_copy(update={"head": relaxed}))
    assert not result.changed.shared_changed  # the head's policy judges nothing here
    assert not result.diff.gate.passed, result.diff.gate
    assert [(c.path, c.change) for c in result.diff.judging_changes] == [
        ("provenance.toml", "added")
    ]
    (work / "provenance.toml").write_text('[policy]\n"x" = "bogus"\n')
    broken = _commit(git.Repo(work), "a bad policy")
    diff = run_pr_audit(request.model_copy(update={"head": broken})).diff
    assert not diff.gate.passed and diff.judging_changes
    # merged, the policy judges the next PR on both sides: the indexer is tuning there
    repo = git.Repo(work)
    (work / "provenance.toml").write_text(f'[policy]\n"{INDEXER[0]}" = "tuning"\n')
    _without_mxfp8_indexer(work / MODEL)
    merged = _commit(repo, "the policy, merged")
    shutil.copy(EMBEDDED / MODEL, work / MODEL)
    later = _commit(repo, "a later PR")
    diff = run_pr_audit(request.model_copy(update={"base": merged, "head": later})).diff
    assert diff.gate.passed and diff.judging_changes == ()


def _verify_h100(data: dict[str, Any]) -> None:
    data["meta"]["hardware"]["h100"] = "verified"


H100 = AuditFilters(variants=("mxfp8",), hardware=("h100",), features="none")


def _ledger_declaring(tmp_path: Path, declaration_id: str, match: dict[str, str]) -> Path:
    declaration: dict[str, object] = {
        "id": declaration_id,
        "match": match,
        "reason": "r",
        "date": "2026-12-05",
    }
    return _embedded_ledger_with(tmp_path, [declaration])


def test_a_claim_inside_inferencex_coverage_blocks_unless_declared(tmp_path: Path) -> None:
    """InferenceX ran MiniMax-M3 (MXFP8) on H100, and nothing the recipe renders there is
    recommended: a new ``h100: verified`` claim is a finding, and a reviewed declaration
    in the ledger acknowledges it."""
    request = _recipe_pr(tmp_path / "a", _verify_h100, filters=H100)
    diff = run_pr_audit(request).diff
    assert [(c.hardware, c.coverage) for c in diff.claims] == [("h100", "in-coverage")]
    assert not diff.gate.passed and diff.gate.claims == 1
    assert "1 new unbacked claim(s) inside InferenceX coverage" in verdict_line(diff, [])
    ledger = _ledger_declaring(
        tmp_path, "h100-tested-end-to-end", {"recipe": "MiniMaxAI/MiniMax-M3", "hardware": "h100"}
    )
    diff = run_pr_audit(request.model_copy(update={"ledger": ledger})).diff
    assert diff.gate.passed and diff.claims == ()
    assert [(c.hardware, c.declared_by) for c in diff.claims_reported] == [
        ("h100", "h100-tested-end-to-end")
    ]


def test_a_declaration_scoped_to_a_variant_does_not_acknowledge_a_claim(
    tmp_path: Path,
) -> None:
    # a claim is about the whole recipe on a hardware: a variant-scoped declaration is not
    request = _recipe_pr(tmp_path / "a", _verify_h100, filters=H100)
    ledger = _ledger_declaring(tmp_path, "mxfp8-only", {"variant": "mxfp8", "hardware": "h100"})
    diff = run_pr_audit(request.model_copy(update={"ledger": ledger})).diff
    assert [c.hardware for c in diff.claims] == ["h100"] and not diff.gate.passed
