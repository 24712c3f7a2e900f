"""Attribution by content: a record is credited to the merge that introduced what it runs.

Moves, renames and deprecations of its config entry or launcher are history on the
record, never its backing PR. Small hand-made repositories, then the InferenceX
mirror when it is on this machine.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from pathlib import Path

import pytest
from inferencex_fixtures import (
    MASTER_DISAGG,
    MASTER_SINGLE,
    RECIPE_4P1D,
    SCRIPT_MTP,
    TOY_RECIPE,
    TOY_SCRIPT,
    RepoBuilder,
    backing_prs,
    toy_base_files,
)

from provenance.errors import UsageError
from provenance.evidence.inferencex.content_trace import (
    PathLog,
    file_contents,
    file_key,
    move_kind,
    trace,
)
from provenance.evidence.inferencex.history import (
    first_parent_history,
    launcher_content,
    pr_head,
    require_pr_commit,
)
from provenance.evidence.inferencex.ingest import IngestResult, extract
from provenance.evidence.inferencex.lineage import Lineage
from provenance.model.record import EvidenceRecord
from provenance.sources.git import open_repo, resolve_commit

SINGLE_KEY = "toy-fp4-b300-vllm-mtp"
MASTER = "configs/nvidia-master.yaml"
LEGACY_MASTER = ".github/configs/nvidia-master.yaml"
DEPRECATED_SCRIPT = "benchmarks/single_node/fixed_seq_len/deprecated/toy_fp4_b300_mtp.sh"
RENAMED_SCRIPT = "benchmarks/single_node/fixed_seq_len/toy_fp4_b300_vllm_mtp.sh"


def _single(result: IngestResult) -> list[EvidenceRecord]:
    return [r for r in result.records if r.config_key == SINGLE_KEY]


def _base(builder: RepoBuilder, master_path: str = MASTER) -> None:
    files = toy_base_files()
    if master_path != MASTER:
        files[master_path] = files.pop(MASTER)
    builder.commit("Add toy configs (#1)", files)


def test_a_moved_master_config_keeps_its_backing_pr(make_repo: Callable[[], RepoBuilder]) -> None:
    builder = make_repo()
    _base(builder, LEGACY_MASTER)
    # the whole file moves, re-ordered and commented: the same points, another place
    builder.commit(
        "Move configs to the root (#2)",
        {
            LEGACY_MASTER: None,
            MASTER: "# moved\n" + MASTER_DISAGG + "\n" + MASTER_SINGLE,
        },
    )
    result = extract(builder.root, "HEAD", None, None, [])
    links = backing_prs(result)
    single = _single(result)
    assert single and all(links[r.id] == {1} for r in single)
    for record in single:
        assert [(m.kind, m.pr, m.file_kind) for m in record.history] == [
            ("moved", 2, "master-config")
        ]
        (move,) = record.history
        assert [(p.path, p.config_key) for p in move.before] == [(LEGACY_MASTER, SINGLE_KEY)]
        assert [(p.path, p.config_key) for p in move.after] == [(MASTER, SINGLE_KEY)]
    # #2 benchmarked nothing: at its merge commit it backs no record
    assert extract(builder.root, "HEAD", None, None, [2]).records == []


def test_a_renamed_launcher_keeps_its_backing_pr(make_repo: Callable[[], RepoBuilder]) -> None:
    builder = make_repo()
    _base(builder)
    builder.commit(
        "Tune toy launcher (#2)",
        {
            TOY_SCRIPT: SCRIPT_MTP.replace(
                "--max-model-len", "--gpu-memory-utilization 0.9 \\\n  --max-model-len"
            )
        },
    )
    builder.commit("Rename toy launchers (#3)", {}, renames={TOY_SCRIPT: RENAMED_SCRIPT})
    result = extract(builder.root, "HEAD", None, None, [])
    links = backing_prs(result)
    single = _single(result)
    assert single and all(links[r.id] == {2} for r in single)
    for record in single:
        assert {f.path for f in record.source.files if f.kind == "launcher"} == {RENAMED_SCRIPT}
        assert [(m.kind, m.pr, m.file_kind) for m in record.history] == [("renamed", 3, "launcher")]
        assert [p.path for p in record.history[0].after] == [RENAMED_SCRIPT]
    assert extract(builder.root, "HEAD", None, None, [3]).records == []
    # the disaggregated key's recipe was never touched after #1
    disagg = [r for r in result.records if r.config_key != SINGLE_KEY]
    assert disagg and all(links[r.id] == {1} and not r.history for r in disagg)


def test_deprecating_other_scenarios_credits_neither_kept_nor_archived_points(
    make_repo: Callable[[], RepoBuilder],
) -> None:
    builder = make_repo()
    _base(builder)
    tp4 = "      - { tp: 4, conc-list: [1, 2, 4], spec-decoding: mtp }\n"
    assert tp4 in MASTER_SINGLE
    archived = MASTER_SINGLE.replace(
        "      - { tp: 2, ep: 2, dp-attn: true, conc-list: [64, 128], spec-decoding: mtp }\n", ""
    )
    builder.commit(
        "Deprecate tp4 scenarios (#2)",
        {
            MASTER: MASTER_SINGLE.replace(tp4, "") + "\n" + MASTER_DISAGG,
            "configs/deprecated/2026-toy.yaml": archived,
            TOY_SCRIPT: None,
            DEPRECATED_SCRIPT: SCRIPT_MTP.replace(
                '/../benchmark_lib.sh"', '/../../benchmark_lib.sh"'
            ),
        },
    )
    result = extract(builder.root, "HEAD", None, None, [])
    links = backing_prs(result)
    single = _single(result)
    by_tp = {w.tp: r for r in single for w in r.workloads}
    assert set(by_tp) == {2, 4}
    assert all(links[r.id] == {1} for r in single)
    kept = [r for r in single if all(w.tp == 2 for w in r.workloads)]
    gone = [r for r in single if all(w.tp == 4 for w in r.workloads)]
    assert kept and gone
    for record in kept:
        # its point did not move; its launcher did (to deprecated/, source line aside)
        assert [(m.kind, m.pr, m.file_kind) for m in record.history] == [
            ("deprecated", 2, "launcher")
        ]
    for record in gone:
        assert {(m.kind, m.pr, m.file_kind) for m in record.history} == {
            ("deprecated", 2, "master-config"),
            ("deprecated", 2, "launcher"),
        }
        move = next(m for m in record.history if m.file_kind == "master-config")
        assert [(p.path, p.config_key) for p in move.after] == [
            ("configs/deprecated/2026-toy.yaml", SINGLE_KEY)
        ]
    assert extract(builder.root, "HEAD", None, None, [2]).records == []


def _archive_tp4(builder: RepoBuilder) -> str:
    """#2 archives the tp=4 scenarios (entry to ``configs/deprecated``, launcher to
    ``deprecated/``); returns the archived launcher's text."""
    tp4 = "      - { tp: 4, conc-list: [1, 2, 4], spec-decoding: mtp }\n"
    assert tp4 in MASTER_SINGLE
    archived = MASTER_SINGLE.replace(
        "      - { tp: 2, ep: 2, dp-attn: true, conc-list: [64, 128], spec-decoding: mtp }\n", ""
    )
    script = SCRIPT_MTP.replace('/../benchmark_lib.sh"', '/../../benchmark_lib.sh"')
    builder.commit(
        "Deprecate tp4 scenarios (#2)",
        {
            MASTER: MASTER_SINGLE.replace(tp4, "") + "\n" + MASTER_DISAGG,
            "configs/deprecated/2026-toy.yaml": archived,
            TOY_SCRIPT: None,
            DEPRECATED_SCRIPT: script,
        },
    )
    return script


def test_an_archived_entry_survives_launcher_edits_that_serve_the_same_command(
    make_repo: Callable[[], RepoBuilder],
) -> None:
    """After the archiving, #3 edits the launcher's text (a harness call) without
    changing what the archived tp=4 points serve: what is read now is what was swept
    before the archiving, so the points stay evidence, credited to #1. #4 then changes a
    flag the tp=4 points serve: read now, they were never swept so and yield nothing."""
    builder = make_repo()
    _base(builder)
    script = _archive_tp4(builder)
    harness = script + 'echo "running eval harness"\n'
    builder.commit("Eval harness call (#3)", {DEPRECATED_SCRIPT: harness})
    result = extract(builder.root, "HEAD", None, None, [])
    links = backing_prs(result)
    gone = [r for r in _single(result) if all(w.tp == 4 for w in r.workloads)]
    assert gone and all(links[r.id] == {1} for r in gone)
    for record in gone:
        assert ("unchanged-served", 3, "launcher") in {
            (m.kind, m.pr, m.file_kind) for m in record.history
        }
    assert result.summary.skip_counts().get("archived-launcher-changed", 0) == 0

    served = harness.replace("--max-model-len", "--enforce-eager \\\n  --max-model-len")
    assert served != harness
    builder.commit("Eager everywhere (#4)", {DEPRECATED_SCRIPT: served})
    after = extract(builder.root, "HEAD", None, None, [])
    assert not [r for r in _single(after) if all(w.tp == 4 for w in r.workloads)]
    assert after.summary.skip_counts()["archived-launcher-changed"] == len(
        {(w.tp, w.conc) for r in gone for w in r.workloads}
    )
    kept = [r for r in _single(after) if all(w.tp == 2 for w in r.workloads)]
    assert kept and all(backing_prs(after)[r.id] == {4} for r in kept)


def test_an_archive_moved_out_of_dot_github_keeps_its_backing_pr(
    make_repo: Callable[[], RepoBuilder],
) -> None:
    """InferenceX#1874 archived MiniMax-M2.5 into ``.github/configs/deprecated``; #1992
    moved that directory to ``configs/deprecated``. Neither backs the archived points."""
    builder = make_repo()
    _base(builder, LEGACY_MASTER)
    legacy_archive = ".github/configs/deprecated/toy-master.yaml"
    builder.commit(
        "Deprecate toy configs (#2)",
        {LEGACY_MASTER: "# nothing left\n", legacy_archive: MASTER_SINGLE + "\n" + MASTER_DISAGG},
    )
    builder.commit(
        "Move configs to the root (#3)",
        {},
        renames={legacy_archive: "configs/deprecated/toy-master.yaml"},
    )
    result = extract(builder.root, "HEAD", None, None, [])
    links = backing_prs(result)
    single = _single(result)
    assert single and all(links[r.id] == {1} for r in single)
    for record in single:
        assert [(m.kind, m.pr) for m in record.history if m.file_kind == "master-config"] == [
            ("moved", 3),
            ("deprecated", 2),
        ]
    for number in (2, 3):
        assert extract(builder.root, "HEAD", None, None, [number]).records == []


def test_comment_edits_in_launchers_and_recipes_back_nothing(
    make_repo: Callable[[], RepoBuilder],
) -> None:
    """InferenceX#2493 rewrote paths in comments of launchers and models_vllm.yaml when it
    deprecated other scripts: comments and YAML formatting change nothing that runs."""
    builder = make_repo()
    _base(builder)
    builder.commit(
        "Deprecate other scripts (#2)",
        {
            TOY_SCRIPT: SCRIPT_MTP.replace("\n", "\n# see deprecated/other.sh\n\n", 2),
            TOY_RECIPE: "# moved comment\n"
            + RECIPE_4P1D.replace('name: "toy-4p1d"', "name: toy-4p1d  # same"),
        },
    )
    result = extract(builder.root, "HEAD", None, None, [])
    assert result.records and all(links == {1} for links in backing_prs(result).values())
    assert extract(builder.root, "HEAD", None, None, [2]).records == []


def test_a_changed_image_is_a_content_change(make_repo: Callable[[], RepoBuilder]) -> None:
    """The control: what a record runs changed, so the change backs it."""
    builder = make_repo()
    _base(builder)
    bumped = MASTER_SINGLE.replace("nightly-1", "nightly-2")
    builder.commit("Bump toy image (#2)", {MASTER: bumped + "\n" + MASTER_DISAGG})
    result = extract(builder.root, "HEAD", None, None, [])
    links = backing_prs(result)
    single = _single(result)
    assert single and all(links[r.id] == {2} and not r.history for r in single)
    assert {r.id for r in extract(builder.root, "HEAD", None, None, [2]).records} == {
        r.id for r in single
    }


def test_history_and_launcher_traces(make_repo: Callable[[], RepoBuilder]) -> None:
    builder = make_repo()
    body = "".join(f"echo step {i}\n" for i in range(30)) + "vllm serve m --tp 2\n"
    script = 'source "$(dirname "$0")/../benchmark_lib.sh"\n' + body
    moved = 'source "$(dirname "$0")/../../benchmark_lib.sh"\n' + body
    builder.commit("add launcher (#10)", {"benchmarks/fixed/s.sh": script})
    builder.commit("tune (#11)", {"benchmarks/fixed/s.sh": script + "export MORE=1\n"})
    builder.commit("unrelated (#12)", {"benchmarks/other.sh": "x\n"})
    builder.commit("no pr here", {"README": "x\n"})
    # not a git rename (a copy then a deletion), but the same launcher text
    builder.commit("copy (#13)", {"benchmarks/fixed/deprecated/s.sh": moved + "export MORE=1\n"})
    builder.commit("drop (#14)", {"benchmarks/fixed/s.sh": None})
    repo = open_repo(builder.root)
    history = first_parent_history(repo, "HEAD")
    assert [c.pr for c in history.commits] == [14, 13, None, 12, 11, 10]
    assert history.by_pr[11].title == "tune"
    assert launcher_content(moved.encode()) == launcher_content(script.encode())
    log = PathLog.read(repo, history.commits[0].sha, ["benchmarks"], lambda _p: True)
    data = (moved + "export MORE=1\n").encode()
    key = file_key("benchmarks/fixed/deprecated/s.sh", "", lambda: data)
    found = trace(history, log, file_contents(repo), [key])[key]
    assert found.origin is not None and found.origin.pr == 11
    kinds = [(m.commit.pr, move_kind(m)) for m in found.moves]
    assert kinds == [(14, "moved"), (13, "deprecated")]
    copy = ("benchmarks/fixed/deprecated/s.sh", "")
    assert [(sorted(m.before), sorted(m.after)) for m in found.moves] == [
        ([("benchmarks/fixed/s.sh", "")], []),
        ([], [copy]),
    ]
    with pytest.raises(UsageError):
        require_pr_commit(history, 99, "HEAD")
    assert pr_head(repo, 11) is None


def test_one_lineage_serves_every_commit_on_it(make_repo: Callable[[], RepoBuilder]) -> None:
    """Traces through the tip's path log == traces through a log read at each commit."""
    builder = make_repo()
    launcher = "benchmarks/fixed/s.sh"
    builder.commit("add (#1)", {launcher: "vllm serve a\n"})
    builder.commit("tune (#2)", {launcher: "vllm serve b\n"})
    builder.commit("move (#3)", {}, renames={launcher: "benchmarks/fixed/deprecated/s.sh"})
    builder.commit("retune (#4)", {"benchmarks/fixed/deprecated/s.sh": "vllm serve c\n"})
    builder.commit("back (#5)", {launcher: "vllm serve a\n"})
    repo = open_repo(builder.root)
    lineage = Lineage.of(repo, resolve_commit(repo, "HEAD").hexsha)
    texts = (b"vllm serve a\n", b"vllm serve b\n", b"vllm serve c\n")
    keys = [file_key("x.sh", "", functools.partial(bytes, text)) for text in texts]
    for commit in lineage.history.commits:
        direct = first_parent_history(repo, commit.sha)
        shared = lineage.history_of(commit.sha)
        assert [(c.sha, c.pr) for c in shared.commits] == [(c.sha, c.pr) for c in direct.commits]
        own = PathLog.read(repo, commit.sha, ["benchmarks"], lambda _p: True)
        mine = trace(shared, lineage.file_log(["benchmarks"]), file_contents(repo), keys)
        theirs = trace(direct, own, file_contents(repo), keys)
        assert {
            k: (t.origin and t.origin.sha, [(m.commit.sha, m.before, m.after) for m in t.moves])
            for k, t in mine.items()
        } == {
            k: (t.origin and t.origin.sha, [(m.commit.sha, m.before, m.after) for m in t.moves])
            for k, t in theirs.items()
        }, commit.pr


MIRROR = Path(
    os.environ.get("PROVENANCE_INFERENCEX_MIRROR", "/work/.mirror/SemiAnalysisAI+InferenceX/repo")
)
#: InferenceX PRs that only moved, renamed or deprecated configs and launchers
#: (subjects at the mirror): "chore: move configs to root level (#1992)",
#: "Deprecate 1k1k benchmark configurations (#2263)", "Enact the August 3, 2026
#: scenario and precision deprecations (#2493)".
MOVE_ONLY_PRS = {1992: "moved", 2263: "deprecated", 2493: "deprecated"}


@pytest.mark.slow
@pytest.mark.skipif(not MIRROR.is_dir(), reason="no InferenceX mirror on this machine")
def test_mirror_minimax_m3_credits_no_move_or_deprecation() -> None:
    repo = open_repo(MIRROR)
    try:
        resolve_commit(repo, "843c6254f")
    except UsageError:
        pytest.skip("the mirror does not have InferenceX 843c6254f")
    result = extract(MIRROR, "843c6254f", "minimaxm3", None, [])
    assert len(result.records) > 100
    backing = {e.pr.number for e in result.entries}
    assert not backing & set(MOVE_ONLY_PRS)
    seen: dict[int, set[str]] = {}
    for record in result.records:
        for move in record.history:
            if move.pr is not None:
                seen.setdefault(move.pr, set()).add(move.kind)
        # the newest move's ``after`` is where the content lives at the record's commit
        files = {f.path for f in record.source.files}
        for kind in ("master-config", "launcher"):
            newest = next((m for m in record.history if m.file_kind == kind), None)
            if newest is not None and newest.after:
                assert {p.path for p in newest.after} & files
    for number, kind in MOVE_ONLY_PRS.items():
        assert kind in seen.get(number, set()), number


@pytest.mark.slow
@pytest.mark.skipif(not MIRROR.is_dir(), reason="no InferenceX mirror on this machine")
def test_mirror_move_of_the_legacy_archive_backs_no_minimax_m25_record() -> None:
    """#1992 moved ``.github/configs/deprecated`` (MiniMax-M2.5's archive) unchanged."""
    repo = open_repo(MIRROR)
    try:
        resolve_commit(repo, "843c6254f")
    except UsageError:
        pytest.skip("the mirror does not have InferenceX 843c6254f")
    assert extract(MIRROR, "843c6254f", "minimaxm2.5", None, [1992]).records == []


def test_a_launcher_edit_that_serves_the_same_command_backs_nothing(
    make_repo: Callable[[], RepoBuilder],
) -> None:
    """#2 edits the launcher's text without changing what it serves (an eval harness
    call), #3 changes a served flag for the tp=2 points only: those credit #3, the
    others #1 with #2 as an ``unchanged-served`` move on their history."""
    builder = make_repo()
    _base(builder)
    harness = SCRIPT_MTP + 'echo "running eval harness"\nrun_eval --framework lm-eval\n'
    builder.commit("Add eval harness call (#2)", {TOY_SCRIPT: harness})
    tuned = harness.replace(
        '--data-parallel-size=$TP --enable-expert-parallel"',
        '--data-parallel-size=$TP --enable-expert-parallel --enforce-eager"',
    )
    assert tuned != harness
    builder.commit("Eager dp-attn (#3)", {TOY_SCRIPT: tuned})
    result = extract(builder.root, "HEAD", None, None, [])
    links = backing_prs(result)
    single = _single(result)
    changed = [r for r in single if any(w.dp_attn for w in r.workloads)]
    unchanged = [r for r in single if not any(w.dp_attn for w in r.workloads)]
    assert changed and unchanged
    for record in changed:
        assert links[record.id] == {3}
        assert not record.history
    for record in unchanged:
        assert links[record.id] == {1}
        assert [(m.kind, m.pr, m.file_kind) for m in record.history] == [
            ("unchanged-served", 3, "launcher"),
            ("unchanged-served", 2, "launcher"),
        ]
        assert [p.path for p in record.history[-1].after] == [TOY_SCRIPT]
        assert [p.path for p in record.history[-1].before] == [TOY_SCRIPT]
    # at its merge #2 changed nothing any record runs; #3 keeps just what it changed
    assert extract(builder.root, "HEAD", None, None, [2]).records == []
    assert {r.id for r in extract(builder.root, "HEAD", None, None, [3]).records} == {
        r.id for r in changed
    }
    assert 2 not in {e.pr.number for e in result.entries}


def test_a_launcher_edit_keeps_its_credit_when_the_parent_cannot_show_it_unchanged(
    make_repo: Callable[[], RepoBuilder],
) -> None:
    """Nothing is guessed: when the key cannot be evaluated at the first parent of the
    commit that edited its launcher, that commit keeps the credit."""
    builder = make_repo()
    _base(builder)
    # the launcher at #3's parent serves no vLLM engine: the key's points are skipped
    broken = SCRIPT_MTP.replace('vllm serve "$MODEL"', 'echo "$MODEL"')
    builder.commit("Break the launcher (#2)", {TOY_SCRIPT: broken})
    builder.commit("Fix it, add a harness call (#3)", {TOY_SCRIPT: SCRIPT_MTP + "echo done\n"})
    result = extract(builder.root, "HEAD", None, None, [])
    links = backing_prs(result)
    single = _single(result)
    assert single and all(links[r.id] == {3} and not r.history for r in single)
    assert {r.id for r in extract(builder.root, "HEAD", None, None, [3]).records} == {
        r.id for r in single
    }


def test_a_launcher_edit_keeps_its_credit_when_the_key_is_new_at_the_commit(
    make_repo: Callable[[], RepoBuilder],
) -> None:
    """#2 renames the config key (its points move: history) and adds an ``echo`` to its
    launcher: the key is absent at #2's parent, so #2 keeps the credit."""
    builder = make_repo()
    _base(builder)
    renamed = MASTER_SINGLE.replace(SINGLE_KEY + ":", "toy-fp4-b300-vllm-mtp2:")
    builder.commit(
        "Rename the key, log the start (#2)",
        {MASTER: renamed + "\n" + MASTER_DISAGG, TOY_SCRIPT: SCRIPT_MTP + "echo started\n"},
    )
    result = extract(builder.root, "HEAD", None, None, [])
    links = backing_prs(result)
    single = [r for r in result.records if r.config_key == "toy-fp4-b300-vllm-mtp2"]
    assert single and all(links[r.id] == {2} for r in single)
    for record in single:
        assert [(m.kind, m.pr, m.file_kind) for m in record.history] == [
            ("renamed", 2, "master-config")
        ]


@pytest.mark.slow
@pytest.mark.skipif(not MIRROR.is_dir(), reason="no InferenceX mirror on this machine")
def test_mirror_agentx_launcher_edit_does_not_back_gptoss_fixed_seq_len_records() -> None:
    """ "chore: agentx v0.3 (#1571)" edited the fixed-seq-len gpt-oss launchers (the
    ``benchmark_lib.sh`` harness around them) without changing what they serve: the
    gptoss-fp4-h100-vllm records are credited to the earlier PR that introduced what
    they run, with #1571 an ``unchanged-served`` move on their history."""
    repo = open_repo(MIRROR)
    try:
        resolve_commit(repo, "843c6254f")
    except UsageError:
        pytest.skip("the mirror does not have InferenceX 843c6254f")
    key = "gptoss-fp4-h100-vllm"
    result = extract(MIRROR, "843c6254f", None, key, [])
    assert result.records
    links = backing_prs(result)
    for record in result.records:
        (backer,) = links[record.id]
        assert backer < 1571
        unchanged = [m for m in record.history if m.kind == "unchanged-served"]
        assert 1571 in {m.pr for m in unchanged}
        assert all(m.file_kind == "launcher" and m.after for m in unchanged)
    assert extract(MIRROR, "843c6254f", None, key, [1571]).records == []
