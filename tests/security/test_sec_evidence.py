"""Hostile evidence: nothing from a PR is ever executed, nothing escapes the repository.

The canary repository's launcher, benchmark script, sourced helper, master
config and srt-slurm recipe are full of commands that would leave a trace if
anything ran them: create files, delete a directory, connect to a loopback
listener the test holds open. After ``provenance ingest inferencex`` (run as a
real process, and again in-process with every process-spawning call spied on)
no trace exists, and the only program started is ``git``.
"""

from __future__ import annotations

import os
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from inferencex_fixtures import (
    MASTER_DISAGG,
    MASTER_SINGLE,
    RECIPE_4P1D,
    WORKFLOW_PATH,
    RepoBuilder,
    workflow,
)
from sec_fixtures import (
    LAUNCHER,
    MASTER,
    RECIPE,
    RUNNERS_PATH,
    SCRIPT,
    base_files,
    run_provenance,
    tree_state,
)

from provenance.cli.main import cli
from provenance.errors import EXIT_INPUT, EXIT_OK, UnsafeInputError
from provenance.sources.git import open_repo, read_blob, resolve_commit
from provenance.store.evidence import EvidenceStore


@pytest.fixture
def listener() -> Iterator[socket.socket]:
    """A loopback TCP listener: any connection to it proves something ran."""
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    server.setblocking(False)
    yield server
    server.close()


def _connected(server: socket.socket) -> bool:
    try:
        conn, _ = server.accept()
    except BlockingIOError:
        return False
    conn.close()
    return True


def _payloads(canary: Path, port: int) -> list[str]:
    """Shell lines that each leave a distinct trace if executed."""
    c = str(canary)
    return [
        f"touch {c}/plain",
        f"echo pwned > {c}/redirect",
        f"echo pwned >> {c}/append",
        f"tee {c}/tee < /dev/null",
        f"X=$(touch {c}/subst; echo 4)",
        f"Y=`touch {c}/backtick`",
        f'eval "touch {c}/eval"',
        f"source <(echo touch {c}/procsub)",
        f"bash -c 'touch {c}/bash-c'",
        f"sh -c 'touch {c}/sh-c'",
        f'python3 -c \'open("{c}/python", "w")\'',
        f"rm -rf {c}/keep",
        f"curl -s http://127.0.0.1:{port}/curl -o {c}/curl",
        f"wget -q http://127.0.0.1:{port}/wget -O {c}/wget",
        f"exec 3>/dev/tcp/127.0.0.1/{port}",
        f"nc 127.0.0.1 {port} < /dev/null",
        f"python3 -c 'import socket; socket.create_connection((\"127.0.0.1\", {port}))'",
        f"(touch {c}/subshell) &",
        f"trap 'touch {c}/trap' EXIT",
        f"alias vllm='touch {c}/alias; vllm'",
        f"function cleanup {{ touch {c}/function; }}; cleanup",
        f"mkfifo {c}/fifo",
    ]


def hostile_repo(root: Path, canary: Path, port: int) -> RepoBuilder:
    lines = _payloads(canary, port)
    payload = "\n".join(lines) + "\n"
    script = (
        "#!/usr/bin/env bash\n"
        + payload
        + "source ./evil_helper.sh\n"
        + ". benchmarks/evil_helper.sh\n"
        + "export VLLM_FLOAT32_MATMUL_PRECISION=high\n"
        + f'vllm serve "$MODEL" --port "$PORT" --tensor-parallel-size "$(touch {canary}/arg; '
        + 'echo 4)" \\\n'
        + "  --max-model-len `touch "
        + str(canary)
        + '/arg2; echo 9472` --served-model-name "$(eval $X)" \\\n'
        + f"  > {canary}/server.log 2>&1 &\n"
    )
    launcher = str(base_files()[LAUNCHER])
    launcher = launcher.replace("#!/usr/bin/env bash\n", "#!/usr/bin/env bash\n" + payload)
    master = MASTER_SINGLE + "\n" + MASTER_DISAGG
    master = master.replace(
        '"CONFIG_FILE=recipes/vllm/toy/4p1d.yaml"',
        f'"CONFIG_FILE=recipes/vllm/toy/4p1d.yaml"\n          - "EXTRA=$(touch {canary}/master)"',
    )
    recipe = RECIPE_4P1D.replace(
        "      enforce-eager: true",
        f'      enforce-eager: true\n      served-model-name: "$(touch {canary}/recipe)"',
    )
    builder = RepoBuilder(root)
    builder.commit(
        "Evil but well-formed (#66)",
        {
            MASTER: master,
            RUNNERS_PATH: str(base_files()[RUNNERS_PATH]),
            WORKFLOW_PATH: workflow(),
            LAUNCHER: launcher,
            SCRIPT: script,
            RECIPE: recipe,
            "benchmarks/evil_helper.sh": payload.replace("/plain", "/helper"),
            "evil_helper.sh": payload.replace("/plain", "/helper2"),
            "benchmarks/benchmark_lib.sh": payload.replace("/plain", "/lib"),
        },
    )
    return builder


def _canary(tmp_path: Path) -> Path:
    canary = tmp_path / "canary"
    (canary / "keep").mkdir(parents=True)
    (canary / "keep" / "still-here").write_text("rm -rf never ran\n")
    return canary


def _assert_no_trace(canary: Path, server: socket.socket) -> None:
    assert sorted(p.name for p in canary.iterdir()) == ["keep"]
    assert (canary / "keep" / "still-here").exists()
    assert not _connected(server), "something connected to the canary listener"


def test_ingest_runs_nothing_from_the_repository(tmp_path: Path, listener: socket.socket) -> None:
    canary = _canary(tmp_path)
    repo = hostile_repo(tmp_path / "inferencex", canary, listener.getsockname()[1])
    out = tmp_path / "out"
    result = run_provenance(
        [
            "ingest",
            "inferencex",
            str(repo.root),
            "--ledger",
            str(out / "ledger"),
            "--evidence",
            str(out / "evidence"),
            "--format",
            "json",
        ],
        cwd=tmp_path,
    )
    assert result.returncode == EXIT_OK, result.stderr
    _assert_no_trace(canary, listener)
    records = list(EvidenceStore(out / "evidence").iter_records())
    assert records, "the well-formed parts are still ingested"
    served = [r for r in records if "serve" in r.roles]
    assert served
    for record in served:
        # the substituted values were never computed: they are holes, marked partial
        flags = record.roles["serve"]
        assert flags["tensor_parallel_size"] == "<unevaluated:command-substitution>"
        assert flags["max_model_len"] == "<unevaluated:backticks>"
        assert {"command-substitution", "backticks"} <= {m.construct_name for m in record.partial}
    constructs = {m.construct_name for r in served for m in r.partial}
    print(f"\npartial constructs recorded: {sorted(constructs)}")  # figure for the docs


def test_only_git_is_spawned_in_process(
    tmp_path: Path, listener: socket.socket, monkeypatch: pytest.MonkeyPatch
) -> None:
    canary = _canary(tmp_path)
    repo = hostile_repo(tmp_path / "inferencex", canary, listener.getsockname()[1])
    spawned: list[list[str]] = []
    original_init = subprocess.Popen.__init__

    def spy(self: subprocess.Popen[Any], args: Any, *rest: Any, **kwargs: Any) -> None:
        argv = [str(a) for a in args] if isinstance(args, list | tuple) else [str(args)]
        spawned.append(argv)
        original_init(self, args, *rest, **kwargs)

    def forbidden(*args: object, **kwargs: object) -> None:
        raise AssertionError(f"process spawned outside subprocess: {args!r}")

    monkeypatch.setattr(subprocess.Popen, "__init__", spy)
    for name in ("system", "popen", "posix_spawn", "posix_spawnp", "execv", "execve", "execvp"):
        monkeypatch.setattr(os, name, forbidden)
    out = tmp_path / "out"
    result = CliRunner().invoke(
        cli,
        [
            "ingest",
            "inferencex",
            str(repo.root),
            "--ledger",
            str(out / "ledger"),
            "--evidence",
            str(out / "evidence"),
        ],
    )
    assert result.exit_code == EXIT_OK, result.output
    _assert_no_trace(canary, listener)
    programs = {Path(argv[0]).name for argv in spawned}
    assert programs <= {"git"}, spawned


# --- paths that escape the repository -------------------------------------------

_DISAGG_CONFIG = "recipes/vllm/toy/4p1d.yaml"
ESCAPES: dict[str, dict[str, str | None]] = {
    "config-file-dotdot": {
        MASTER: MASTER_SINGLE + MASTER_DISAGG.replace(_DISAGG_CONFIG, "recipes/../../../etc/passwd")
    },
    "config-file-absolute": {
        MASTER: MASTER_SINGLE + MASTER_DISAGG.replace(_DISAGG_CONFIG, "/etc/passwd")
    },
    "config-file-nul": {
        MASTER: MASTER_SINGLE + MASTER_DISAGG.replace(_DISAGG_CONFIG, "recipes/a\\0b.yaml")
    },
    "config-file-backslash": {
        MASTER: MASTER_SINGLE + MASTER_DISAGG.replace(_DISAGG_CONFIG, "recipes\\\\..\\\\x.yaml")
    },
    "recipe-symlink": {RECIPE: "->/etc/passwd"},
    "recipe-relative-symlink": {RECIPE: "->../../../../../configs/runners.yaml"},
    "recipe-dir-symlink": {
        RECIPE: None,
        "benchmarks/multi_node/srt-slurm-recipes/vllm/toy": "->/etc",
    },
    "script-symlink": {SCRIPT: "->/etc/shadow"},
    "script-dir-symlink": {SCRIPT: None, "benchmarks/single_node/fixed_seq_len": "->/etc"},
    "launcher-symlink": {LAUNCHER: "->/etc/passwd"},
    "runners-symlink": {RUNNERS_PATH: "->/etc/passwd"},
    "model-prefix-dotdot": {
        MASTER: MASTER_SINGLE.replace("model-prefix: toy", "model-prefix: ../../../../etc/x")
    },
}


@pytest.mark.parametrize("name", sorted(ESCAPES))
def test_escaping_paths_exit_3_and_write_nothing(name: str, tmp_path: Path) -> None:
    files = base_files()
    change = dict(ESCAPES[name])
    for path, content in list(change.items()):
        if content is None:
            del files[path], change[path]
    builder = RepoBuilder(tmp_path / "inferencex")
    builder.commit("escape (#5)", {**files, **change})
    out = tmp_path / "out"
    before = tree_state(out)
    result = CliRunner().invoke(
        cli,
        [
            "ingest",
            "inferencex",
            str(builder.root),
            "--ledger",
            str(out / "ledger"),
            "--evidence",
            str(out / "evidence"),
        ],
    )
    assert result.exit_code == EXIT_INPUT, result.output
    assert result.output.startswith("unsafe input: "), result.output
    assert len(result.output.strip().splitlines()) == 1
    assert tree_state(out) == before


def test_symlinked_master_config_is_refused(tmp_path: Path) -> None:
    builder = RepoBuilder(tmp_path / "inferencex")
    builder.commit("escape (#5)", {**base_files(), MASTER: "->/etc/passwd"})
    out = tmp_path / "out"
    result = CliRunner().invoke(
        cli,
        [
            "ingest",
            "inferencex",
            str(builder.root),
            "--ledger",
            str(out / "l"),
            "--evidence",
            str(out / "e"),
        ],
    )
    assert result.exit_code == EXIT_INPUT, result.output


def test_gitread_refuses_symlinks_as_unsafe(tmp_path: Path) -> None:
    builder = RepoBuilder(tmp_path / "repo")
    builder.commit("link (#1)", {"a.yaml": "a: 1\n", "link.yaml": "->/etc/passwd"})
    commit = resolve_commit(open_repo(builder.root), "HEAD")
    assert read_blob(commit, "a.yaml") is not None
    assert read_blob(commit, "missing.yaml") is None
    with pytest.raises(UnsafeInputError, match="symlink"):
        read_blob(commit, "link.yaml")


@pytest.mark.parametrize("separator", ["\r", "\x0c", "\x1e", "\u2028"])
def test_commit_subject_with_line_separators_is_just_text(separator: str, tmp_path: Path) -> None:
    builder = RepoBuilder(tmp_path / "inferencex")
    builder.commit(f"Evil{separator}title (#7)", base_files())
    out = tmp_path / "out"
    result = CliRunner().invoke(
        cli,
        [
            "ingest",
            "inferencex",
            str(builder.root),
            "--ledger",
            str(out / "l"),
            "--evidence",
            str(out / "e"),
        ],
    )
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert result.exit_code == EXIT_OK, result.output
