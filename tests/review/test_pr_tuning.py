"""Tuning and harness flags a PR changes: counted by flag, exactly, without blocking."""

from __future__ import annotations

import shutil
from collections import Counter
from pathlib import Path
from typing import Any

import yaml
from click.testing import CliRunner
from recipes_repo import EMBEDDED, REPO_ROOT, pr_repo
from tuning_oracle import whole_changes

from provenance.audit.normaliser import PolicyNormaliser
from provenance.audit.pipeline import AuditFilters, enumeration_options
from provenance.cli.main import cli
from provenance.report.pr_json import read_pr
from provenance.review.pr_audit import PrAuditRequest, run_pr_audit
from provenance.review.tuning import recipe_pairs, tuning_changes

LEDGER, EVIDENCE = REPO_ROOT / "ledger", REPO_ROOT / "evidence"
MODEL = "models/MiniMaxAI/MiniMax-M3.yaml"


def _mi300x_batched_tokens(value: str) -> Any:
    """An edit setting mxfp8's ``--max-num-batched-tokens`` on MI300X (a tuning flag)."""

    def edit(data: dict[str, Any]) -> None:
        args = data["variants"]["mxfp8"]["hardware_overrides"]["mi300x"]["extra_args"]
        args[args.index("--max-num-batched-tokens") + 1] = value

    return edit


def _base_args(*extra: str) -> Any:
    def edit(data: dict[str, Any]) -> None:
        data["model"]["base_args"] = [*data["model"]["base_args"], *extra]

    return edit


def _brute_force(base_root: Path, head_root: Path, filters: AuditFilters) -> Counter[str]:
    """Selection by selection: every process rendered and normalised on both sides."""
    return whole_changes(base_root, head_root, MODEL, filters)[0]


def test_factored_counts_equal_the_selection_by_selection_ones(tmp_path: Path) -> None:
    """Features, PD pools and multi-node shapes included; one tuning flag changed on one
    hardware and a harness flag added to every command."""
    filters = AuditFilters(hardware=("mi300x", "b200"), features="default")
    base_root, head_root = tmp_path / "base", tmp_path / "head"
    for root, edits in (
        (base_root, [_mi300x_batched_tokens("16384")]),
        (head_root, [_mi300x_batched_tokens("8192"), _base_args("--disable-log-requests")]),
    ):
        shutil.copytree(EMBEDDED, root)
        data = yaml.safe_load((root / MODEL).read_text())
        for edit in edits:
            edit(data)
        (root / MODEL).write_text(yaml.safe_dump(data, sort_keys=False))
    found = tuning_changes(
        recipe_pairs(base_root, head_root, [MODEL]),
        enumeration_options(filters),
        PolicyNormaliser(),
    )
    expected = _brute_force(base_root, head_root, filters)
    assert {c.key: c.combinations for c in found} == dict(expected)
    assert expected["max_num_batched_tokens"] > 0
    assert expected["max_num_batched_tokens"] < expected["disable_log_requests"]


def test_a_pr_changing_only_a_tuning_flag_passes_and_is_counted(tmp_path: Path) -> None:
    work, base, head = pr_repo(
        tmp_path, _mi300x_batched_tokens("16384"), _mi300x_batched_tokens("32768")
    )
    args = [
        "audit", "--repo", str(work), "--base", base, "--head", head,
        "--ledger", str(LEDGER), "--evidence", str(EVIDENCE), "--hardware", "mi300x,b200",
    ]  # fmt: skip
    result = CliRunner().invoke(cli, [*args, "--format", "json"])
    assert result.exit_code == 0, result.output
    diff = read_pr(result.stdout)
    assert diff.gate.passed and not diff.changes
    head_report = run_pr_audit(
        PrAuditRequest(
            repo=work,
            base=base,
            head=head,
            ledger=LEDGER,
            evidence=EVIDENCE,
            filters=AuditFilters(hardware=("mi300x", "b200")),
        )
    ).head_report
    assert head_report is not None
    on_mi300x = sum(
        s.count
        for entry in head_report.verdicts
        for s in entry.selections
        if (s.variant, s.hardware) == ("mxfp8", "mi300x")
    )
    (change,) = diff.tuning
    assert (change.key, change.flag_class, change.combinations) == (
        "max_num_batched_tokens",
        "tuning",
        on_mi300x,
    )
    assert change.examples == (("16384", "32768"),)
    line = f"max_num_batched_tokens (tuning): {on_mi300x} combination(s); 16384 → 32768"
    text = CliRunner().invoke(cli, [*args, "--format", "text"])
    assert text.exit_code == 0 and "gate: PASS" in text.stdout
    assert f"    {line}\n" in text.stdout
    markdown = CliRunner().invoke(cli, [*args, "--format", "markdown"])
    assert markdown.exit_code == 0
    assert f"- `{line}`\n" in markdown.stdout


def test_a_pr_changing_no_tuning_flag_says_none(tmp_path: Path) -> None:
    work, base, head = pr_repo(
        tmp_path, _mi300x_batched_tokens("16384"), _mi300x_batched_tokens("16384")
    )
    result = CliRunner().invoke(
        cli,
        [
            "audit", "--repo", str(work), "--base", base, "--head", head,
            "--ledger", str(LEDGER), "--evidence", str(EVIDENCE), "--hardware", "b200",
        ],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "tuning/harness flags changed (not judged" in result.stdout
    # the informational section's tuning line says none; the ledger and recipes lines
    # follow it
    lines = [line.strip() for line in result.stdout.splitlines()]
    tuning = [line for line in lines if line.startswith("tuning/harness flags changed")]
    assert len(tuning) == 1 and tuning[0].endswith(": none"), lines
    assert lines[lines.index(tuning[0]) + 1].startswith("ledger ")
