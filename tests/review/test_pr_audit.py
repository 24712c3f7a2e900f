"""Diff-aware audit against git repositories built in the test (no checkout, no network)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml
from recipes_repo import EMBEDDED, MODEL, REPO_ROOT, work_tree
from recipes_repo import commit_all as _commit
from recipes_repo import init_recipes_repo as _init

from provenance.audit.pipeline import AuditFilters
from provenance.audit.verdicts import AuditReport
from provenance.errors import InputError
from provenance.model.combination import Selection
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


def test_added_flag_is_listed_everywhere_it_newly_appears(tmp_path: Path) -> None:
    repo = _init(tmp_path)
    _without_mxfp8_indexer(work_tree(repo) / MODEL)
    base = _commit(repo, "base")
    shutil.copy(EMBEDDED / MODEL, work_tree(repo) / MODEL)
    head = _commit(repo, "add the FP8 indexer cache to mxfp8")
    ledger = _ledger(tmp_path)
    result = run_pr_audit(
        PrAuditRequest(
            repo=work_tree(repo),
            base=base,
            head=head,
            ledger=ledger,
            evidence=tmp_path / "evidence",
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
    assert entry.evidenced == 0 and entry.unevidenced == len(occurrences)
    # The gate blocks: guide-only combinations now carry an unevidenced major flag.
    assert not diff.gate.passed
    assert {c.block_reason for c in changes if c.blocking} == {"new-unevidenced-flag"}
    assert diff.gate.blocking == len(gained)


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
    ledger = _ledger(tmp_path, [declaration])
    request = PrAuditRequest(
        repo=work_tree(repo),
        base=base,
        head=head,
        ledger=ledger,
        evidence=tmp_path / "evidence",
        filters=FILTERS,
    )
    diff = run_pr_audit(request).diff
    assert diff.gate.passed and diff.gate.declared > 0


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


@pytest.mark.corpus
def test_history_replay_pr682_adds_indexer_to_nvfp4_and_mxfp8(tmp_path: Path) -> None:
    if not HISTORY.is_dir():
        pytest.skip("../shared/corpus is not available")
    repo = _init(tmp_path)
    target = work_tree(repo) / MODEL
    commits: dict[str, str] = {}
    for version in sorted(HISTORY.glob("*.yaml")):
        shutil.copy(version, target)
        pr = version.stem.rsplit("_pr", 1)[1]
        commits[pr] = _commit(repo, f"{version.stem} (#{pr})")
    ledger = _ledger(tmp_path)
    filters = AuditFilters(features="none", hardware=("b200", "mi355x"))
    diff = run_pr_audit(
        PrAuditRequest(
            repo=work_tree(repo),
            base=commits["672"],
            head=commits["682"],
            ledger=ledger,
            evidence=tmp_path / "evidence",
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
    ledger = _ledger(tmp_path)
    common = [
        "audit", "--repo", str(work), "--base", base, "--head", head,
        "--ledger", str(ledger), "--evidence", str(tmp_path / "evidence"),
        "--variant", "mxfp8", "--hardware", "b200", "--features", "none",
    ]  # fmt: skip
    runner = CliRunner()
    result = runner.invoke(cli, [*common, "--format", "markdown"])
    assert result.exit_code == 1, result.output
    assert "**gate: FAIL" in result.output
    assert "`attention_config.indexer_kv_dtype=fp8`" in result.output
    result = runner.invoke(cli, [*common, "--format", "json"])
    assert result.exit_code == 1
    assert '"schema":"provenance.diff/v2"' in result.output.replace(" ", "")
    _ledger(
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
    result = runner.invoke(cli, [*common, "--format", "text"])
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
    ledger = _ledger(tmp_path)
    args = [
        "audit", "--repo", str(work), "--base", base, "--head", head,
        "--ledger", str(ledger), "--evidence", str(tmp_path / "evidence"),
        "--variant", "mxfp8", "--hardware", "b200", "--features", "none", "--format", "sarif",
    ]  # fmt: skip
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 1, result.output  # the gate fails: no evidence at all
    sarif = json.loads(result.stdout)
    locations = [
        loc["physicalLocation"] for r in sarif["runs"][0]["results"] for loc in r["locations"]
    ]
    assert locations
    assert {loc["artifactLocation"]["uri"] for loc in locations} == {MODEL}
    head_lines = (EMBEDDED / MODEL).read_text().count("\n")
    assert all(1 <= loc["region"]["startLine"] <= head_lines for loc in locations)
    assert any(loc["region"]["startLine"] > 1 for loc in locations)
