"""``provenance ingest inferencex`` and ``provenance evidence list`` end to end (CliRunner)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from click.testing import CliRunner
from inferencex_fixtures import (
    LAUNCH_B300,
    MASTER_DISAGG,
    MASTER_SINGLE,
    RECIPE_4P1D,
    RUNNERS,
    SCRIPT_MTP,
    WORKFLOW_PATH,
    RepoBuilder,
    workflow,
)

from provenance.cli.main import cli
from provenance.model.ledger import PrRef, SweepRun
from provenance.store.evidence import EvidenceStore
from provenance.store.ledger import Ledger

SCRIPT = "benchmarks/single_node/fixed_seq_len/toy_fp4_b300_mtp.sh"
RECIPE = "benchmarks/multi_node/srt-slurm-recipes/vllm/toy/4p1d.yaml"


def _repo(make_repo: Callable[[], RepoBuilder]) -> RepoBuilder:
    builder = make_repo()
    builder.commit(
        "Add toy configs (#7)",
        {
            "configs/nvidia-master.yaml": MASTER_SINGLE + "\n" + MASTER_DISAGG,
            "configs/runners.yaml": RUNNERS,
            WORKFLOW_PATH: workflow(),
            "runners/launch_b300-nv.sh": LAUNCH_B300,
            SCRIPT: SCRIPT_MTP,
            RECIPE: RECIPE_4P1D,
        },
    )
    return builder


def _ingest(repo: Path, out: Path, *extra: str) -> tuple[int, str]:
    result = CliRunner().invoke(
        cli,
        [
            "ingest",
            "inferencex",
            str(repo),
            "--ledger",
            str(out / "ledger"),
            "--evidence",
            str(out / "evidence"),
            *extra,
        ],
    )
    return result.exit_code, result.output


def test_ingest_is_idempotent_and_keeps_hand_recorded_sweeps(
    make_repo: Callable[[], RepoBuilder], tmp_path: Path
) -> None:
    repo = _repo(make_repo)
    code, output = _ingest(repo.root, tmp_path)
    assert code == 0, output
    assert "records: 5 (5 new, 0 already stored); partial: 0" in output
    assert "ledger entries: 1 written (#7)" in output
    assert len(EvidenceStore(tmp_path / "evidence").ids()) == 5
    ledger = Ledger(tmp_path / "ledger")
    entry = ledger.entry(PrRef.parse("7"))
    assert entry is not None and len(entry.records) == 5
    sweep = SweepRun(run_id=123, head_sha="abcdef1", conclusion="success", source="manual")
    ledger.write_entry(entry.model_copy(update={"sweeps": (sweep,), "notes": "by hand"}))
    code, output = _ingest(repo.root, tmp_path)
    assert code == 0, output
    assert "(0 new, 5 already stored)" in output
    assert "ledger entries: 0 written, 1 unchanged" in output
    kept = ledger.entry(PrRef.parse("7"))
    assert kept is not None and kept.sweeps == (sweep,) and kept.notes == "by hand"


def test_ingest_json_summary_and_usage_errors(
    make_repo: Callable[[], RepoBuilder], tmp_path: Path
) -> None:
    repo = _repo(make_repo)
    code, output = _ingest(repo.root, tmp_path, "--format", "json", "--keys", "*dynamo*")
    assert code == 0, output
    data = json.loads(output)
    assert data["summary"]["records"] == 1 and data["records_written"] == 1
    code, output = _ingest(repo.root, tmp_path, "--pr", "99")
    assert code == 2 and "(#99)" in output
    code, output = _ingest(repo.root, tmp_path, "--rev", "nope")
    assert code == 2 and "unknown revision" in output


def test_evidence_list_shows_points_roles_classes_and_prs(
    make_repo: Callable[[], RepoBuilder], tmp_path: Path
) -> None:
    repo = _repo(make_repo)
    assert _ingest(repo.root, tmp_path)[0] == 0
    base = ["--ledger", str(tmp_path / "ledger"), "--evidence", str(tmp_path / "evidence")]
    runner = CliRunner()
    result = runner.invoke(
        cli, ["evidence", "list", "--key", "*dynamo*", "--format", "json", *base]
    )
    assert result.exit_code == 0, result.output
    [view] = json.loads(result.output)
    assert view["config_key"] == "toy-fp4-b300-dynamo-vllm"
    assert [p["conc"] for p in view["points"]] == [64, 4096]
    assert view["points"][0]["prefill"] == {"num_worker": 4, "tp": 1, "ep": 1, "dp_attn": False}
    decode = {f["key"]: f for f in view["roles"]["decode"]}
    assert decode["speculative_config.num_speculative_tokens"]["value"] == "3"
    assert decode["tensor_parallel_size"]["class"] == "major"
    assert view["topology"]["roles"]["prefill"]["workers"] == 4
    assert {f["kind"] for f in view["files"]} == {"master-config", "srt-slurm-recipe"}
    assert [p["pr"] for p in view["prs"]] == ["SemiAnalysisAI/InferenceX#7"]
    text = runner.invoke(cli, ["evidence", "list", "--hardware", "b300", "--pr", "#7", *base])
    assert text.exit_code == 0
    assert (
        "toy-fp4-b300-vllm-mtp" in text.output and "PRs: SemiAnalysisAI/InferenceX#7" in text.output
    )
    assert "tensor_parallel_size = 4  [major]" in text.output
    none = runner.invoke(cli, ["evidence", "list", "--hardware", "h100", *base])
    assert none.exit_code == 0 and "no evidence records match" in none.output
    bad = runner.invoke(cli, ["evidence", "list", "--pr", "not-a-pr", *base])
    assert bad.exit_code == 2
