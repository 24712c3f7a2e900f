"""Ingest follows the runner launcher on the path the point's run takes.

Each red-team class in the runner launcher (an exported ``vllm`` function, ``BASH_ENV``,
a ``PATH`` wrapper, an exported ``VLLM_*`` variable) is placed on the single-node path
of a toy InferenceX tree and ingested: the record is partial at the runner's line, or
(an engine variable with a static value) carries the variable in its env exactly. The
same lines in the multi-node branch, which a single-node run never takes, change nothing.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from inferencex_fixtures import LAUNCH_B300, TOY_SCRIPT, RepoBuilder, toy_base_files

from provenance.evidence.inferencex.ingest import extract
from provenance.model.record import EvidenceRecord

KEY = "toy-fp4-b300-vllm-mtp"
RUNNER = "runners/launch_b300-nv.sh"
SINGLE_NODE = '    bash "$BENCH_SCRIPT"\n'
MULTI_NODE = '    srtctl apply -f "$CONFIG_FILE"\n'

HAZARDS = {
    "export-f": (
        ['    vllm() { command vllm "$@" --enforce-eager; }', "    export -f vllm"],
        "command-redefinition",
        1,
    ),
    "bash-env": (['    export BASH_ENV="$PWD/hook.sh"'], "command-redefinition", 0),
    "path-wrapper": (['    export PATH="$PWD/wrap:$PATH"'], "command-redefinition", 0),
    "declare-fx": (
        ['    serve_wrapper() { vllm "$@"; }', "    declare -fx serve_wrapper"],
        "command-redefinition",
        1,
    ),
    "shellopts": (["    export SHELLOPTS"], "runner-environment", None),
}


def _ingest(make_repo: Callable[[], RepoBuilder], runner: str) -> list[EvidenceRecord]:
    builder = make_repo()
    files = toy_base_files()
    files[RUNNER] = runner
    builder.commit("toy (#1)", files)
    records = extract(builder.root, "HEAD", None, KEY, []).records
    assert records
    return records


def _with(lines: list[str], before: str) -> tuple[str, int]:
    """The toy runner with ``lines`` inserted before ``before``; the first line's number."""
    assert before in LAUNCH_B300
    head, _, tail = LAUNCH_B300.partition(before)
    line = head.count("\n") + 1
    return head + "".join(f"{item}\n" for item in lines) + before + tail, line


def _runner_markers(record: EvidenceRecord) -> set[tuple[str, int | None]]:
    return {(m.construct_name, m.line) for m in record.partial if m.path == RUNNER}


def test_the_plain_toy_runner_leaves_records_complete(
    make_repo: Callable[[], RepoBuilder],
) -> None:
    for record in _ingest(make_repo, LAUNCH_B300):
        assert record.partial == (), record.partial


@pytest.mark.parametrize("name", sorted(HAZARDS))
def test_a_hazard_on_the_single_node_path_makes_every_record_partial(
    make_repo: Callable[[], RepoBuilder], name: str
) -> None:
    lines, construct, offset = HAZARDS[name]
    runner, first = _with(lines, SINGLE_NODE)
    for record in _ingest(make_repo, runner):
        found = _runner_markers(record)
        if offset is None:  # named at the invocation, where the variable is passed
            assert any(c == construct for c, _ in found), record.partial
        else:
            assert (construct, first + offset) in found, record.partial


@pytest.mark.parametrize("name", sorted(HAZARDS))
def test_the_same_hazard_in_the_multi_node_branch_changes_nothing(
    make_repo: Callable[[], RepoBuilder], name: str
) -> None:
    plain = {r.id for r in _ingest(make_repo, LAUNCH_B300)}
    runner, _ = _with(HAZARDS[name][0], MULTI_NODE)
    records = _ingest(make_repo, runner)
    assert all(r.partial == () for r in records)
    # the runner's blob is part of the record's source, so only the content must agree
    assert {r.roles["serve"] for r in records} == {
        r.roles["serve"] for r in _ingest(make_repo, LAUNCH_B300)
    }
    assert len(plain) == len(records)


@pytest.mark.parametrize(
    ("export", "key", "value"),
    [
        ("VLLM_CACHE_ROOT=/shared/cache/vllm", "VLLM_CACHE_ROOT", "/shared/cache/vllm"),
        # the toy script exports VLLM_FLOAT32_MATMUL_PRECISION=high after the runner
        ("VLLM_FLOAT32_MATMUL_PRECISION=medium", "VLLM_FLOAT32_MATMUL_PRECISION", "high"),
    ],
)
def test_an_exported_engine_variable_is_carried_as_the_script_leaves_it(
    make_repo: Callable[[], RepoBuilder], export: str, key: str, value: str
) -> None:
    runner, _ = _with([f"    export {export}"], SINGLE_NODE)
    for record in _ingest(make_repo, runner):
        assert record.partial == (), record.partial
        assert dict(record.roles["serve"].items())[f"env:{key}"] == value


def test_an_engine_variable_known_only_at_run_time_makes_records_partial(
    make_repo: Callable[[], RepoBuilder],
) -> None:
    runner, first = _with(['    export VLLM_CACHE_ROOT="$(mktemp -d)"'], SINGLE_NODE)
    for record in _ingest(make_repo, runner):
        assert ("runner-environment", first) in _runner_markers(record), record.partial
        assert "env:VLLM_CACHE_ROOT" not in dict(record.roles["serve"].items())


def test_srun_export_passes_the_variable_exactly(make_repo: Callable[[], RepoBuilder]) -> None:
    runner = LAUNCH_B300.replace(
        SINGLE_NODE, '    srun --jobid=1 --export=ALL,VLLM_USE_V1=0 bash "$BENCH_SCRIPT"\n'
    )
    for record in _ingest(make_repo, runner):
        assert record.partial == ()
        assert dict(record.roles["serve"].items())["env:VLLM_USE_V1"] == "0"


def test_a_script_the_runner_does_not_run_is_partial(
    make_repo: Callable[[], RepoBuilder],
) -> None:
    runner = LAUNCH_B300.replace(SINGLE_NODE, '    echo "$BENCH_SCRIPT"\n')
    for record in _ingest(make_repo, runner):
        assert "runner-invocation" in {c for c, _ in _runner_markers(record)}


def test_the_toy_script_is_the_one_the_fixture_runs() -> None:
    assert TOY_SCRIPT.endswith("toy_fp4_b300_mtp.sh") and SINGLE_NODE in LAUNCH_B300
