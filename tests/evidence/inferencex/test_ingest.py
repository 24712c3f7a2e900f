from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from inferencex_fixtures import (
    LAUNCH_B300,
    MASTER_DISAGG,
    MASTER_SINGLE,
    SCRIPT_MTP,
    TOY_RECIPE,
    TOY_SCRIPT,
    RepoBuilder,
    backing_prs,
    toy_base_files,
    toy_history,
)

from provenance.errors import UnsafeInputError, UsageError
from provenance.evidence.inferencex.ingest import IngestResult, extract
from provenance.model.record import EvidenceRecord

SCRIPT = TOY_SCRIPT
RECIPE = TOY_RECIPE
_base_files = toy_base_files


@pytest.fixture
def history(make_repo: Callable[[], RepoBuilder]) -> RepoBuilder:
    return toy_history(make_repo())


def _by_key(result: IngestResult, key: str) -> list[EvidenceRecord]:
    return [r for r in result.records if r.config_key == key]


def test_head_records_argv_per_point_and_attribution(history: RepoBuilder) -> None:
    result = extract(history.root, "HEAD", None, None, [])
    single = _by_key(result, "toy-fp4-b300-vllm-mtp")
    by_point = {(w.tp, w.conc): r for r in single for w in r.workloads}
    assert set(by_point) == {(2, 64), (2, 128), (4, 1), (4, 2), (4, 4)}
    dep = by_point[(2, 128)].roles["serve"]
    # vLLM's default parallel size 1 is canonicalised away by the normaliser
    assert "tensor_parallel_size" not in dep and dep["data_parallel_size"] == "2"
    assert dep["enable_expert_parallel"] == "true"
    assert dep["speculative_config.num_speculative_tokens"] == "4"
    assert by_point[(2, 64)].roles["serve"]["speculative_config.num_speculative_tokens"] == "3"
    assert by_point[(4, 1)].roles["serve"]["speculative_config.num_speculative_tokens"] == "2"
    assert by_point[(4, 2)].roles["serve"]["tensor_parallel_size"] == "4"
    assert "enable_expert_parallel" not in by_point[(4, 2)].roles["serve"]
    # identical points collapse into one record listing every point it covers
    assert by_point[(4, 2)] is by_point[(4, 4)]
    assert [w.conc for w in by_point[(4, 2)].workloads] == [2, 4]
    assert len(single) == 4
    record = by_point[(2, 128)]
    assert record.id == record.compute_id()
    assert record.hardware == "b300" and record.topology.roles["serve"].dp == 2
    paths = {f.path: f.kind for f in record.source.files}
    assert paths == {
        "configs/nvidia-master.yaml": "master-config",
        SCRIPT: "launcher",
        "runners/launch_b300-nv.sh": "other",
    }
    links = backing_prs(result)
    # launcher last changed by #2; #3's changelog re-swept it afterwards
    assert all(links[r.id] == {2, 3} for r in single)
    disagg = _by_key(result, "toy-fp4-b300-dynamo-vllm")
    assert len(disagg) == 1 and links[disagg[0].id] == {4}
    assert [w.conc for w in disagg[0].workloads] == [64, 4096]
    assert disagg[0].roles["decode"]["max_num_seqs"] == "512"
    entry = {e.pr.number: e for e in result.entries}[2]
    assert entry.title == "Tune toy launcher" and entry.merge_commit
    assert {f.path for f in entry.files} == set(paths)
    assert result.summary.records == 5 and result.summary.partial_records == 0
    assert result.summary.points == 6


def test_pr_mode_ingests_at_the_merge_commit(history: RepoBuilder) -> None:
    first = extract(history.root, "HEAD", None, None, [1])
    assert {e.pr.number for e in first.entries} == {1}
    assert len(first.records) == 5
    assert all("gpu_memory_utilization" not in r.roles.get("serve", {}) for r in first.records)
    decode = _by_key(first, "toy-fp4-b300-dynamo-vllm")[0].roles["decode"]
    assert decode["max_num_seqs"] == "1024"
    resweep = extract(history.root, "HEAD", None, "toy-fp4-b300-vllm-*", [3])
    assert {e.pr.number for e in resweep.entries} == {3}
    assert resweep.entries[0].sources[-1] == "perf-changelog.yaml"
    assert len(resweep.records) == 4
    nothing = extract(history.root, "HEAD", None, "toy-fp4-b300-dynamo-vllm", [2])
    assert nothing.records == [] and nothing.entries == []
    with pytest.raises(UsageError):
        extract(history.root, "HEAD", None, None, [99])


def test_deterministic_ids(history: RepoBuilder) -> None:
    one = extract(history.root, "HEAD", "toy", None, [])
    two = extract(history.root, "HEAD", "toy", None, [])
    assert [r.id for r in one.records] == [r.id for r in two.records]
    assert extract(history.root, "HEAD", "other", None, []).records == []


@pytest.mark.parametrize(
    "config_file",
    ["recipes/../../../etc/passwd", "/etc/passwd", "recipes/vllm/toy/link.yaml"],
)
def test_escaping_config_files_are_refused(
    make_repo: Callable[[], RepoBuilder], config_file: str
) -> None:
    builder = make_repo()
    files = _base_files()
    files["configs/nvidia-master.yaml"] = MASTER_DISAGG.replace(
        "recipes/vllm/toy/4p1d.yaml", config_file
    )
    files["benchmarks/multi_node/srt-slurm-recipes/vllm/toy/link.yaml"] = "->/etc/passwd"
    builder.commit("unsafe (#1)", files)
    with pytest.raises(UnsafeInputError):
        extract(builder.root, "HEAD", None, None, [])


def test_symlinked_launcher_is_refused(make_repo: Callable[[], RepoBuilder]) -> None:
    builder = make_repo()
    files = _base_files()
    files[SCRIPT] = "->/etc/shadow"
    builder.commit("unsafe (#1)", files)
    with pytest.raises(UnsafeInputError):
        extract(builder.root, "HEAD", None, "toy-fp4-b300-vllm-mtp", [])


def test_missing_pieces_are_summarised(
    make_repo: Callable[[], RepoBuilder], tmp_path: Path
) -> None:
    builder = make_repo()
    files = _base_files()
    del files[SCRIPT], files[RECIPE]
    builder.commit("partial tree (#1)", files)
    result = extract(builder.root, "HEAD", None, None, [])
    assert result.records == []
    assert result.summary.skip_counts() == {"launcher-not-found": 5, "recipe-not-in-tree": 1}
    by_code = {item.code: item for item in result.summary.skipped}
    assert by_code["recipe-not-in-tree"].message.startswith(
        "srt-slurm recipe not in the InferenceX tree: CONFIG_FILE recipes/<rest> looked up as "
        "benchmarks/multi_node/srt-slurm-recipes/<rest>"
    )
    assert by_code["launcher-not-found"].keys == ["toy-fp4-b300-vllm-mtp"]
    assert len(result.summary.unresolved_scripts) == 1
    assert any(
        w.startswith(f"srt-slurm recipe {RECIPE}: absent at ") and "first-parent history" in w
        for w in result.summary.warnings
    )


def test_recipe_removed_earlier_names_the_removing_commit(
    make_repo: Callable[[], RepoBuilder],
) -> None:
    builder = make_repo()
    files = _base_files()
    builder.commit("add recipe (#1)", files)
    builder.commit("clean up srt-slurm recipes (#2)", {RECIPE: None})
    builder.commit("unrelated (#3)", {"README.md": "later"})
    result = extract(builder.root, "HEAD", None, None, [])
    assert "recipe-deleted" in result.summary.skip_counts()
    assert "recipe-not-in-tree" not in result.summary.skip_counts()
    removal = [w for w in result.summary.warnings if w.startswith(f"srt-slurm recipe {RECIPE}")]
    assert len(removal) == 1
    assert "removed by " in removal[0] and "(#2) clean up srt-slurm recipes" in removal[0]


def test_unknown_runner_is_kept_raw_and_reported(make_repo: Callable[[], RepoBuilder]) -> None:
    builder = make_repo()
    files = _base_files()
    master = MASTER_SINGLE.replace("runner: b300", "runner: b300-nv")
    master += MASTER_SINGLE.replace("toy-fp4", "odd-fp4").replace("runner: b300", "runner: rtxlab")
    files["configs/nvidia-master.yaml"] = master
    files["runners/launch_rtxlab.sh"] = LAUNCH_B300.replace("_b300", "_rtxlab")
    files[SCRIPT.replace("toy_fp4_b300", "toy_fp4_rtxlab")] = SCRIPT_MTP
    builder.commit("odd runner (#1)", files)
    result = extract(builder.root, "HEAD", None, None, [])
    odd = _by_key(result, "odd-fp4-b300-vllm-mtp")
    assert odd and all(r.hardware == "rtxlab" for r in odd)
    assert all(r.hardware == "b300" for r in _by_key(result, "toy-fp4-b300-vllm-mtp"))
    assert any("'rtxlab' is no recipes hardware id" in w for w in result.summary.warnings)
