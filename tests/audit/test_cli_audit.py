"""``provenance audit`` / ``explain`` / ``graph`` end to end on the embedded MiniMax-M3 recipe."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from provenance.cli.main import cli
from provenance.model.combination import Selection
from provenance.model.ledger import LedgerEntry, PrRef, SweepRun
from provenance.model.record import (
    EvidenceRecord,
    EvidenceSource,
    RoleTopology,
    SourceFile,
    Topology,
    WorkloadPoint,
)
from provenance.normalise.canonical import normalise_argv
from provenance.recipes.load.loader import load_recipe, load_recipes_root
from provenance.recipes.render.synthesis import render
from provenance.store.evidence import EvidenceStore
from provenance.store.ledger import Ledger

ROOT = Path(__file__).resolve().parents[2] / "recipes"
RECIPE = "MiniMaxAI/MiniMax-M3"
SELECT = ["--variant", "nvfp4", "--hardware", "b200", "--strategy", "single_node_tp"]


def _record_for_tp8(green: bool) -> EvidenceRecord:
    root = load_recipes_root(ROOT)
    recipe = load_recipe(root, RECIPE)
    selection = Selection(variant="nvfp4", hardware="b200", strategy="single_node_tp", node_count=1)
    serve = render(recipe, root, selection).roles[0]
    flags = normalise_argv(list(serve.argv or ()), serve.env).flags
    return EvidenceRecord(
        source=EvidenceSource(
            commit="7a428f813f26fb3db96c4746f8ab72bd6a7b3a16",
            files=(SourceFile(path="benchmarks/x.sh", blob_sha="1" * 40, kind="launcher"),),
        ),
        config_key="minimaxm3-fp4-b200-vllm",
        checkpoint="nvidia/MiniMax-M3-NVFP4",
        hardware="b200",
        framework="vllm",
        topology=Topology(
            kind="single_node",
            roles={"serve": RoleTopology(gpus_per_worker=8, tp=8)},
            gpus_per_node=8,
            total_gpus=8,
        ),
        workloads=(WorkloadPoint(isl=8192, osl=1024, conc=64),),
        roles={"serve": flags},
    ).with_id()


@pytest.fixture
def dirs(tmp_path: Path) -> tuple[Path, Path]:
    ledger, evidence = tmp_path / "ledger", tmp_path / "evidence"
    ledger.mkdir()
    evidence.mkdir()
    record = _record_for_tp8(green=True)
    EvidenceStore(evidence).put(record)
    Ledger(ledger).write_entry(
        LedgerEntry(
            pr=PrRef(repo="SemiAnalysisAI/InferenceX", number=2120),
            title="Update vLLM MiniMax-M3 image tags",
            records=(record.id,),
            sweeps=(
                SweepRun(
                    run_id=29984401390,
                    head_sha="0b896e92f975d0ef8e374fdc284b06444fc95242",
                    conclusion="success",
                    source="review-thread",
                ),
            ),
        )
    )
    return ledger, evidence


def _args(dirs: tuple[Path, Path]) -> list[str]:
    return ["--recipes-root", str(ROOT), "--ledger", str(dirs[0]), "--evidence", str(dirs[1])]


def test_audit_json_recommends_the_evidenced_combination(dirs: tuple[Path, Path]) -> None:
    result = CliRunner().invoke(
        cli, ["audit", RECIPE, *_args(dirs), *SELECT, "--features", "none", "--format", "json"]
    )
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["schema"] == "provenance.audit/v3"
    assert report["summary"]["combinations"] == 1
    assert report["summary"]["recommended"] == 1
    verdict = report["verdicts"][0]
    assert verdict["verdict"] == "recommended"
    assert verdict["evidence"][0]["prs"] == ["SemiAnalysisAI/InferenceX#2120"]
    assert report["reverse"][0]["status"] == "reproduced"


def test_audit_strict_gate(dirs: tuple[Path, Path], tmp_path: Path) -> None:
    out = tmp_path / "audit.md"
    result = CliRunner().invoke(
        cli,
        [
            "audit",
            RECIPE,
            *_args(dirs),
            *SELECT,
            "--features",
            "default",
            "--format",
            "markdown",
            "--strict",
            "--output",
            str(out),
        ],
    )
    # the default features (tool_calling, reasoning) are functional: still recommended
    assert result.exit_code == 0, result.output
    result = CliRunner().invoke(
        cli,
        [
            "audit",
            RECIPE,
            *_args(dirs),
            "--variant",
            "nvfp4",
            "--hardware",
            "b200",
            "--features",
            "none",
            "--format",
            "sarif",
            "--strict",
            "--output",
            str(out),
        ],
    )
    assert result.exit_code == 1
    assert "not covered by a declaration" in result.output
    sarif = json.loads(out.read_text())
    assert sarif["version"] == "2.1.0"
    assert sarif["runs"][0]["results"]


def test_audit_text_and_missing_ledger(dirs: tuple[Path, Path], tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["audit", RECIPE, *_args(dirs), *SELECT, "--features", "none"])
    assert result.exit_code == 0, result.output
    assert "1 combinations: 1 recommended" in result.output
    result = CliRunner().invoke(
        cli, ["audit", RECIPE, "--recipes-root", str(ROOT), "--ledger", str(tmp_path / "no")]
    )
    assert result.exit_code == 2
    assert "--ledger" in result.output


def test_explain_step_by_step(dirs: tuple[Path, Path]) -> None:
    result = CliRunner().invoke(cli, ["explain", RECIPE, *_args(dirs), *SELECT])
    assert result.exit_code == 0, result.output
    text = result.output
    for step in (
        "1. rendered commands",
        "2. major flags",
        "3. scope",
        "4. candidate",
        "5. verdict",
    ):
        assert step in text
    assert "[MATCH] minimaxm3-fp4-b200-vllm" in text
    assert "verdict: recommended" in text
    result = CliRunner().invoke(
        cli,
        [
            "explain",
            RECIPE,
            *_args(dirs),
            *SELECT,
            "--feature",
            "spec_decoding=eagle3_gqa",
            "--format",
            "json",
        ],
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["verdict"] == "guide-only"
    assert data["selection"]["feature_modes"] == {"spec_decoding": "eagle3_gqa"}
    assert data["candidates"][0]["matches"] is False


def test_explain_refuses_ambiguous_or_unreachable(dirs: tuple[Path, Path]) -> None:
    result = CliRunner().invoke(cli, ["explain", RECIPE, *_args(dirs), "--variant", "nvfp4"])
    assert result.exit_code == 2
    assert "add --variant, --hardware and --strategy" in result.output
    result = CliRunner().invoke(
        cli, ["explain", RECIPE, *_args(dirs), *SELECT, "--feature", "no_such_feature"]
    )
    assert result.exit_code == 2


def test_graph_export(dirs: tuple[Path, Path]) -> None:
    result = CliRunner().invoke(
        cli, ["graph", "--ledger", str(dirs[0]), "--evidence", str(dirs[1]), "--format", "json"]
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    kinds = {node["kind"] for node in data["nodes"]}
    assert {"evidence", "flag", "pr", "sweep", "config", "commit"} <= kinds
    result = CliRunner().invoke(
        cli, ["graph", "--ledger", str(dirs[0]), "--evidence", str(dirs[1]), "--format", "dot"]
    )
    assert result.exit_code == 0
    assert result.output.startswith("digraph provenance {")
