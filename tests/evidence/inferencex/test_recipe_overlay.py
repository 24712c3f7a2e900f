"""The srt-slurm recipe lookup follows the runner launcher's static overlay copies
(``cp -rT SRC DST``, ``cp -r SRC/. DST``): hand-made repositories, and the InferenceX
mirror before #2002 (skips without the mirror)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest
from inferencex_fixtures import LAUNCH_B300, RECIPE_4P1D, TOY_RECIPE, RepoBuilder, toy_base_files

from provenance.evidence.bash import evaluate_script
from provenance.evidence.bash.values import known
from provenance.evidence.inferencex.ingest import extract
from provenance.model.record import EvidenceRecord

_DEFAULT = Path(__file__).resolve().parents[4] / ".mirror" / "SemiAnalysisAI+InferenceX" / "repo"
MIRROR = Path(os.environ.get("PROVENANCE_INFERENCEX", str(_DEFAULT)))

KEY = "toy-fp4-b300-dynamo-vllm"
RUNNER = "runners/launch_b300-nv.sh"
OVERLAID = "benchmarks/multi_node/srt-slurm-recipes/vllm/toy-b300/4p1d.yaml"
SRC = '"$GITHUB_WORKSPACE/benchmarks/multi_node/srt-slurm-recipes/vllm/toy-b300"'
OVERLAID_RECIPE = RECIPE_4P1D.replace("max-num-seqs: 1024", "max-num-seqs: 512")


def _launcher(overlay: str) -> str:
    """The toy runner launcher with ``overlay`` run before ``srtctl``."""
    head, _, tail = LAUNCH_B300.partition('    srtctl apply -f "$CONFIG_FILE"\n')
    return head + overlay + '    srtctl apply -f "$CONFIG_FILE"\n' + tail


def _extract(
    make_repo: Callable[[], RepoBuilder], overlay: str, *, default: bool = True
) -> list[EvidenceRecord]:
    builder = make_repo()
    files = toy_base_files()
    files[RUNNER] = _launcher(overlay)
    files[OVERLAID] = OVERLAID_RECIPE
    if not default:
        del files[TOY_RECIPE]
    builder.commit("toy with an overlay (#1)", files)
    result = extract(builder.root, "HEAD", None, KEY, [])
    assert result.summary.skip_counts() == {}
    return result.records


def _files(record: EvidenceRecord) -> dict[str, str]:
    return {f.path: f.kind for f in record.source.files}


def _max_num_seqs(record: EvidenceRecord) -> str:
    return record.roles["decode"]["max_num_seqs"]


RENAME = f"""\
    if [[ $FRAMEWORK == "dynamo-vllm" && $MODEL_PREFIX == "toy" ]]; then
        mkdir -p recipes/vllm/toy
        cp -rT {SRC} recipes/vllm/toy
    fi
"""


def test_a_renaming_copy_decides_the_file_read(make_repo: Callable[[], RepoBuilder]) -> None:
    (record,) = _extract(make_repo, RENAME)
    assert _files(record) == {
        "configs/nvidia-master.yaml": "master-config",
        OVERLAID: "srt-slurm-recipe",
        RUNNER: "other",
    }
    assert _max_num_seqs(record) == "512"
    assert record.partial == ()


def test_the_overlay_finds_a_recipe_absent_at_the_plain_path(
    make_repo: Callable[[], RepoBuilder],
) -> None:
    (record,) = _extract(make_repo, RENAME, default=False)
    assert OVERLAID in _files(record)


def test_a_copy_the_conditions_exclude_changes_nothing(
    make_repo: Callable[[], RepoBuilder],
) -> None:
    overlay = RENAME.replace('"toy" ]]', '"other" ]]')
    (record,) = _extract(make_repo, overlay)
    assert _files(record) == {
        "configs/nvidia-master.yaml": "master-config",
        TOY_RECIPE: "srt-slurm-recipe",
    }
    assert _max_num_seqs(record) == "1024"


def test_dot_source_form_and_last_copy_wins(make_repo: Callable[[], RepoBuilder]) -> None:
    other = '"$GITHUB_WORKSPACE/benchmarks/multi_node/srt-slurm-recipes/vllm/elsewhere"'
    overlay = f'    cp -rT {other} recipes/vllm/toy\n    cp -r {SRC[:-1]}/." recipes/vllm/toy\n'
    (record,) = _extract(make_repo, overlay)
    assert OVERLAID in _files(record)


def test_a_copy_without_the_file_falls_through(make_repo: Callable[[], RepoBuilder]) -> None:
    overlay = RENAME.replace("toy-b300", "empty-dir")
    (record,) = _extract(make_repo, overlay)
    assert _files(record)[TOY_RECIPE] == "srt-slurm-recipe"
    assert RUNNER not in _files(record)


def test_an_identity_copy_adds_no_source(make_repo: Callable[[], RepoBuilder]) -> None:
    overlay = RENAME.replace("vllm/toy-b300", "vllm/toy")
    (record,) = _extract(make_repo, overlay)
    assert RUNNER not in _files(record)
    assert _max_num_seqs(record) == "1024"


def test_an_undecidable_condition_marks_the_record_partial(
    make_repo: Callable[[], RepoBuilder],
) -> None:
    overlay = RENAME.replace('$MODEL_PREFIX == "toy"', "-d /data/models/toy")
    (record,) = _extract(make_repo, overlay)
    assert OVERLAID in _files(record)
    (marker,) = record.partial
    assert marker.construct_name == "srt-slurm-overlay"
    assert (marker.path, marker.line) == (RUNNER, 6)
    assert "condition known at run time" in marker.detail


def test_a_target_that_is_not_static_marks_the_record_partial(
    make_repo: Callable[[], RepoBuilder],
) -> None:
    overlay = f'    cp -rT {SRC} "$(ls -d recipes/vllm/*)"\n'
    (record,) = _extract(make_repo, overlay)
    assert _files(record)[TOY_RECIPE] == "srt-slurm-recipe"
    (marker,) = record.partial
    assert marker.construct_name == "srt-slurm-overlay"
    assert "not static" in marker.detail


def test_cp_without_t_is_not_followed(make_repo: Callable[[], RepoBuilder]) -> None:
    overlay = f"    cp -r {SRC} recipes/vllm/toy\n"
    (record,) = _extract(make_repo, overlay)
    assert _files(record)[TOY_RECIPE] == "srt-slurm-recipe"
    (marker,) = record.partial
    assert "without -T" in marker.detail


def test_the_evaluator_records_copies_joined_across_branches() -> None:
    script = "cp -rT a b\nif [[ -d /x ]]; then cp -rT c d; fi\ncp -rT e f\n"
    evaluation = evaluate_script(script, "s.sh", {}, record=frozenset({"cp"}))
    assert evaluation.serves == ()
    words = [[known(w) for w in c.argv] for c in evaluation.recorded]
    assert words == [["cp", "-rT", "a", "b"], ["cp", "-rT", "c", "d"], ["cp", "-rT", "e", "f"]]
    assert [bool(c.markers) for c in evaluation.recorded] == [False, True, False]
    assert evaluate_script(script, "s.sh", {}).recorded == ()


@pytest.mark.corpus
def test_mirror_before_2002_reads_the_b300_overlay() -> None:
    if not (MIRROR / "objects").is_dir() and not (MIRROR / ".git").exists():
        pytest.skip(f"InferenceX mirror not found at {MIRROR}")
    # bd710a0c6 (#2002) removed the overlaid directories; its parent still has them
    result = extract(MIRROR, "bd710a0c6^", None, "minimaxm2.5-fp8-b300-dynamo-vllm", [])
    assert result.summary.skip_counts() == {}
    assert len(result.records) >= 10
    for record in result.records:
        files = _files(record)
        assert files["runners/launch_b300-nv.sh"] == "other"
        (recipe,) = [p for p, kind in files.items() if kind == "srt-slurm-recipe"]
        assert recipe.startswith(
            "benchmarks/multi_node/srt-slurm-recipes/vllm/minimax-m2.5-b300-fp8/"
        )
        assert record.partial == ()


def test_a_pr_that_changes_only_the_overlaid_recipe_keeps_its_record(
    make_repo: Callable[[], RepoBuilder],
) -> None:
    """``--pr`` evaluates overlays only for points a PR can touch; a PR that edits just
    the copied source recipe (not the key, not the plain path) still gets its record."""
    builder = make_repo()
    files = toy_base_files()
    files[RUNNER] = _launcher(RENAME)
    files[OVERLAID] = OVERLAID_RECIPE
    builder.commit("toy with an overlay (#1)", files)
    builder.commit(
        "tune the overlaid recipe (#2)",
        {OVERLAID: OVERLAID_RECIPE.replace("max-num-seqs: 512", "max-num-seqs: 256")},
    )
    builder.commit("unrelated single-node edit (#3)", {"README.md": "notes\n"})
    (record,) = extract(builder.root, "HEAD", None, KEY, [2]).records
    assert _max_num_seqs(record) == "256" and OVERLAID in _files(record)
    assert extract(builder.root, "HEAD", None, KEY, [3]).records == []


def test_the_pr_scope_evaluates_overlays_only_where_they_can_matter() -> None:
    from provenance.evidence.inferencex.extractor import PrScope

    plain = "benchmarks/multi_node/srt-slurm-recipes/vllm/toy/4p1d.yaml"
    config = "recipes/vllm/toy/4p1d.yaml"
    untouched = PrScope(frozenset(), frozenset({"benchmarks/single_node/x.sh"}))
    assert not untouched.may_overlay(KEY, plain, config)
    assert PrScope(frozenset({KEY}), frozenset()).may_overlay(KEY, plain, config)
    assert PrScope(frozenset(), frozenset({plain})).may_overlay(KEY, plain, config)
    assert PrScope(frozenset(), frozenset({OVERLAID})).may_overlay(KEY, plain, config)
    assert PrScope(frozenset(), frozenset({RUNNER})).may_overlay(KEY, plain, config)
