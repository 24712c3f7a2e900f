"""Planning a whole-history ingest from git alone: which merges changed vLLM evidence, why."""

from __future__ import annotations

from collections.abc import Callable

from inferencex_fixtures import MASTER_SINGLE, TOY_SCRIPT, RepoBuilder, toy_history

from provenance.evidence.inferencex.plan import is_vllm_launcher_path, plan_vllm_merges
from provenance.sources.git import open_repo

SGLANG_KEY = """\
toy-fp8-h100-sglang:
  image: lmsys/sglang:1
  model: org/Toy
  model-prefix: toy
  runner: h100
  precision: fp8
  framework: sglang
  multinode: false
"""


def _planned(builder: RepoBuilder, since: str | None = None) -> dict[int | None, tuple[str, ...]]:
    merges = plan_vllm_merges(open_repo(builder.root), "HEAD", since)
    return {m.pr: m.reasons for m in merges}


def test_plan_selects_the_merges_that_changed_vllm_evidence(
    make_repo: Callable[[], RepoBuilder],
) -> None:
    builder = toy_history(make_repo())
    master = "configs/nvidia-master.yaml"
    text = (builder.root / master).read_text()
    builder.commit("Add an sglang key (#5)", {master: text + "\n" + SGLANG_KEY})
    builder.commit("Tune the sglang launcher (#6)", {"benchmarks/single_node/toy_sglang.sh": "x"})
    moved = (builder.root / master).read_text().replace(MASTER_SINGLE, "")
    builder.commit(
        "Archive the toy key (#7)",
        {master: moved, "configs/deprecated/nvidia-toy-master.yaml": MASTER_SINGLE},
    )
    builder.commit("Docs only (#8)", {"README.md": "y\n", "benchmarks/README.md": "z\n"})
    builder.commit("Runner fix (#9)", {"runners/launch_b300-nv.sh": "#!/bin/bash\n"})

    planned = _planned(builder)
    assert sorted(p for p in planned if p is not None) == [1, 2, 3, 4, 9]
    assert "master config entry toy-fp4-b300-vllm-mtp" in planned[1]
    assert planned[2] == (f"launcher or recipe {TOY_SCRIPT}",)
    assert planned[3] == ("perf-changelog.yaml names toy-fp4-b300-vllm-mtp",)
    assert planned[9] == ("runner runners/launch_b300-nv.sh",)
    # #5/#6 touch only sglang evidence, #7 moves a vLLM entry unchanged, #8 is docs


def test_plan_since_a_revision_takes_only_newer_merges(
    make_repo: Callable[[], RepoBuilder],
) -> None:
    builder = toy_history(make_repo())
    since = builder.repo.git.rev_parse("HEAD~2")  # after #3
    assert sorted(p for p in _planned(builder, since) if p is not None) == [4]


def test_launcher_paths() -> None:
    assert is_vllm_launcher_path("benchmarks/70b_fp8_h100_docker.sh")  # names no framework
    assert is_vllm_launcher_path("benchmarks/multi_node/srt-slurm-recipes/vllm/x.yaml")
    assert not is_vllm_launcher_path("benchmarks/single_node/dsr1_fp8_b200_sglang.sh")
    assert not is_vllm_launcher_path("benchmarks/README.md")
    assert not is_vllm_launcher_path("runners/launch_b300-nv.sh")
