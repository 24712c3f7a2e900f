"""Differential test: the static evaluation of a launcher against REAL bash running it.

Each case of ``tests/fixtures/launchers/*.sh`` is a small launcher (optionally with the
runner launcher that starts it and the ``benchmark_lib.sh`` it sources). Real bash runs
it in a sandbox: a temporary directory, the environment cleared but for the case's env
and a ``PATH`` whose first directory holds a fake ``vllm`` that writes its argv
(NUL-separated) and its environment to a log, ``timeout``, and no network when user
namespaces allow (``unshare -rn``). The same files are evaluated statically the way
ingest evaluates them (:func:`provenance.evidence.bash.context.evaluate_in_context`).

The rule checked for every case: the record is partial, or its argv and environment
are the ones bash gave ``vllm`` (one of its alternatives, when a value depends on a
run-time condition). Never complete and different. A case may also state what it
expects (``# expect: complete`` or ``# expect: partial CONSTRUCT@FILE:LINE``).

Case file format: header comments (``# expect: …``, ``# env: K=V …``, ``# probe: NAME
OUTPUT``: a fake host command ``NAME`` that prints OUTPUT; several lines for one NAME
run bash once per output, each run checked), then sections
opened by ``#--- launcher``, ``#--- runner`` (runs ``bash "$BENCH_SCRIPT"``) or
``#--- lib`` (replaces the stand-in ``_benchmark_lib.sh``).
"""

from __future__ import annotations

import itertools
import os
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from provenance.evidence.bash import LauncherResult
from provenance.evidence.bash.context import RunnerLauncher, evaluate_in_context

CORPUS = Path(__file__).resolve().parents[2] / "fixtures" / "launchers"
LAUNCHER = "benchmarks/single_node/fixed_seq_len/model_fp8_h200.sh"
RUNNER = "runners/launch_h200-xx.sh"
LIB = "benchmarks/benchmark_lib.sh"
BASE_ENV = {
    "MODEL": "org/M",
    "TP": "4",
    "EP_SIZE": "1",
    "DP_ATTENTION": "false",
    "CONC": "8",
    "ISL": "1024",
    "OSL": "1024",
    "MAX_MODEL_LEN": "2048",
    "RANDOM_RANGE_RATIO": "0.8",
    "RESULT_FILENAME": "r",
    "RUN_EVAL": "false",
    "EVAL_ONLY": "false",
    "FRAMEWORK": "vllm",
}
# Set by bash itself, or exported by benchmark_lib.sh (the evaluator reports neither).
_NOT_THE_LAUNCHERS = frozenset(
    {"PWD", "OLDPWD", "SHLVL", "_", "PORT", "PYTHONDONTWRITEBYTECODE", "PYTHONPYCACHEPREFIX"}
)
_FAKE_VLLM = """#!/bin/sh
i=0
while ! mkdir "{log}/$i" 2>/dev/null; do i=$((i + 1)); done
printf '%s\\0' "$@" > "{log}/$i/argv"
env -0 > "{log}/$i/env"
"""
BASH = shutil.which("bash")
pytestmark = pytest.mark.skipif(BASH is None, reason="bash is not installed")


@dataclass
class Case:
    name: str
    launcher: str
    runner: str | None = None
    lib: str | None = None
    env: dict[str, str] = field(default_factory=dict)
    expect: str = "partial-or-equal"
    #: fake host commands (name → what they print, one bash run per output), e.g. a
    #: firmware probe on old and new firmware
    probes: dict[str, tuple[str, ...]] = field(default_factory=dict)

    def outcomes(self) -> list[dict[str, str]]:
        """What the fake host commands print, one mapping per bash run."""
        names = sorted(self.probes)
        return [
            dict(zip(names, outputs, strict=True))
            for outputs in itertools.product(*(self.probes[n] for n in names))
        ]


def load_case(path: Path) -> Case:
    sections: dict[str, list[str]] = {}
    header: list[str] = []
    current: list[str] = header
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("#--- "):
            current = sections.setdefault(line[5:].strip(), [])
            continue
        current.append(line)
    env = dict(BASE_ENV)
    expect = "partial-or-equal"
    probes: dict[str, tuple[str, ...]] = {}
    for line in header:
        if line.startswith("# probe:"):
            name, _, output = line[8:].strip().partition(" ")
            probes[name] = (*probes.get(name, ()), output)
        if line.startswith("# env:"):
            env.update(item.split("=", 1) for item in line[6:].split())  # type: ignore[misc]
        elif line.startswith("# expect:"):
            expect = line[9:].strip()

    def text(name: str) -> str | None:
        return "\n".join(sections[name]) + "\n" if name in sections else None

    launcher = text("launcher")
    assert launcher is not None, f"{path.name} has no #--- launcher section"
    return Case(path.stem, launcher, text("runner"), text("lib"), env, expect, probes)


CASES = sorted(p for p in CORPUS.glob("*.sh") if not p.name.startswith("_"))


@dataclass
class Run:
    """What bash gave the fake ``vllm``: one (argv, env) per ``vllm serve`` call."""

    serves: list[tuple[list[str], dict[str, str]]]
    returncode: int


def run_bash(case: Case, tmp: Path, probes: dict[str, str] | None = None) -> Run:
    """Run the case in real bash; ``probes``: what its fake host commands print (default:
    the first of :meth:`Case.outcomes`)."""
    if probes is None:
        probes = case.outcomes()[0]
    tmp.mkdir(parents=True, exist_ok=True)
    root, log, fake = tmp / "repo", tmp / "log", tmp / "bin"
    for directory in (root, log, fake):
        directory.mkdir()
    files = {LAUNCHER: case.launcher, LIB: case.lib or (CORPUS / "_benchmark_lib.sh").read_text()}
    if case.runner is not None:
        files[RUNNER] = case.runner
    for rel, content in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(content, encoding="utf-8")
    (fake / "vllm").write_text(_FAKE_VLLM.format(log=log), encoding="utf-8")
    for name in ("nvidia-smi", "hf", "pip"):
        (fake / name).write_text("#!/bin/sh\nexit 0\n", encoding="utf-8")
    for name, output in probes.items():
        quoted = output.replace("'", "'\\''")
        (fake / name).write_text(f"#!/bin/sh\nprintf '%s\\n' '{quoted}'\n", encoding="utf-8")
    for tool in fake.iterdir():
        tool.chmod(0o755)
    env = {
        **case.env,
        "PATH": f"{fake}:/usr/bin:/bin",
        "HOME": str(tmp),
        "BENCH_SCRIPT": LAUNCHER,
    }
    argv = [str(BASH), RUNNER if case.runner is not None else LAUNCHER]
    if _can_unshare():
        argv = ["unshare", "-rn", *argv]
    # Every process the run starts inherits ``held``; its end reaching EOF means the last
    # of them (a ``vllm serve … &`` left running when the script ends) has exited.
    done_reading, held = os.pipe()
    try:
        done = subprocess.run(
            ["timeout", "20", *argv],
            cwd=root,
            env=env,
            capture_output=True,
            timeout=60,
            check=False,
            pass_fds=(held,),
        )
    finally:
        os.close(held)
    with os.fdopen(done_reading, "rb") as stragglers:
        stragglers.read()
    serves = []
    for entry in sorted(log.iterdir(), key=lambda p: int(p.name)):
        words = (entry / "argv").read_bytes().split(b"\0")[:-1]
        env_items = (entry / "env").read_bytes().split(b"\0")[:-1]
        values = dict(item.decode().split("=", 1) for item in env_items if b"=" in item)
        decoded = [w.decode() for w in words]
        if decoded[:1] == ["serve"]:
            serves.append((["vllm", *decoded], values))
    return Run(serves, done.returncode)


_UNSHARE: list[bool] = []


def _can_unshare() -> bool:
    if not _UNSHARE:
        ok = shutil.which("unshare") is not None
        if ok:
            probe = subprocess.run(["unshare", "-rn", "true"], capture_output=True, check=False)
            ok = probe.returncode == 0
        _UNSHARE.append(ok)
    return _UNSHARE[0]


def evaluate(case: Case) -> LauncherResult:
    """The case evaluated as ingest does: the runner launcher (run in the checkout, whose
    files are the case's) with the workflow env, then the launcher it runs."""
    lib = case.lib or (CORPUS / "_benchmark_lib.sh").read_text()
    tree = {LAUNCHER, LIB, RUNNER}
    runner = None
    if case.runner is not None:
        runner = RunnerLauncher(
            case.runner,
            RUNNER,
            files=lambda p: p in tree,
            tree="case",
            unset=frozenset({"IS_MULTINODE"}),
        )
    return evaluate_in_context(
        case.launcher,
        LAUNCHER,
        {**case.env, "BENCH_SCRIPT": LAUNCHER} if runner is not None else case.env,
        runner=runner,
        library=(lib, LIB),
        conditional=True,
    )


def differences(case: Case, result: LauncherResult, run: Run) -> list[str]:
    """How the complete static record differs from what bash ran (empty: equal)."""
    if not run.serves:
        return ["bash never ran vllm serve"] if result.served else []
    if not result.served or result.argv is None:
        return [f"bash ran {run.serves[0][0]}, the evaluation found no serve"]
    out: list[str] = []
    argv, env = run.serves[0]
    if len(run.serves) > 1:
        out.append(f"bash ran vllm serve {len(run.serves)} times")
    if result.alternatives:
        # a value that depends on a run-time condition: bash ran one of the alternatives
        ran = [a for a in result.alternatives if a.argv == argv]
        ran = [a for a in ran if all(env.get(k) == v for k, v in a.env.items())]
        ran = [a for a in ran if not (_engine_env(case, env) - a.env.keys())]
        if not ran:
            out.append(f"bash ran {argv} with {env}: no alternative of {result.alternatives}")
        return out
    if result.argv != argv:
        out.append(f"argv: static {result.argv} != bash {argv}")
    for name, value in result.env.items():
        if env.get(name) != value:
            out.append(f"env {name}: static {value!r} != bash {env.get(name)!r}")
    for name, value in env.items():
        changed = case.env.get(name) != value and name not in _NOT_THE_LAUNCHERS
        if changed and name.startswith("VLLM_") and name not in result.env:
            out.append(f"env {name}={value!r} reached vllm, not in the static env")
    return out


def _engine_env(case: Case, env: dict[str, str]) -> set[str]:
    """The variables the launcher itself gave ``vllm`` (those the workflow gave it and
    those bash or the library set aside)."""
    return {
        name
        for name, value in env.items()
        if case.env.get(name) != value
        and name not in _NOT_THE_LAUNCHERS
        and name not in ("PATH", "HOME", "BENCH_SCRIPT")
    }


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_static_evaluation_is_partial_or_what_bash_runs(path: Path, tmp_path: Path) -> None:
    case = load_case(path)
    result = evaluate(case)
    diff = []
    for number, probes in enumerate(case.outcomes()):
        run = run_bash(case, tmp_path / str(number), probes)
        diff += [f"{probes}: {d}" if probes else d for d in differences(case, result, run)]
    if not result.partial:
        assert diff == [], f"complete and different: {diff}"
    if case.expect == "complete":
        assert result.partial == [], result.partial
        assert diff == [], diff
    elif case.expect.startswith("partial "):
        construct, _, place = case.expect[8:].partition("@")
        where, _, line = place.partition(":")
        path_of = {"launcher": LAUNCHER, "runner": RUNNER, "lib": LIB}[where]
        found = {(m.construct_name, m.path, m.line) for m in result.partial}
        assert (construct, path_of, int(line)) in found, result.partial
        assert diff, "the case should make bash differ from the unwrapped flags"


def test_the_corpus_has_the_real_shapes_and_every_class() -> None:
    names = {p.stem for p in CASES}
    for prefix in ("real_", "nameref_", "indirect_", "trap_", "runner_", "lib_", "set_"):
        assert any(n.startswith(prefix) for n in names), prefix


# --- random compositions of constructs the evaluator follows exactly -----------------

_SAFE_STEPS = st.sampled_from(
    [
        'A="$TP"',
        "A=${A:-2}",
        'B="${MODEL##*/}"',
        'ARGS+=(--max-num-seqs "$CONC")',
        'if [ "$DP_ATTENTION" = true ]; then ARGS+=(--enable-dp); fi',
        "N=$(( TP * 2 ))",
        "export VLLM_FLAG=$N",
        'case "$MODEL" in org/*) ARGS+=(--trust-remote-code) ;; esac',
        'IND=TP; ARGS+=(--x "${!IND}")',
        "NAMES=(CONC TP); ARGS+=(--y ${!NAMES[1]})",
        # defined and called in one step: a call of an undefined command is not a
        # construct the evaluator follows (under ``set -e`` bash exits there)
        'f() { ARGS+=(--from-f "$1"); }; f "${A:-x}"',
        "trap 'exit 3' TERM",
        "set -x",
        "set +x",
        "set -eo pipefail",
        'for k in 1 2; do ARGS+=(--k"$k"); done',
        'printf -v P "%s-%s" "$TP" "$CONC"',
        'ARGS+=(--p "${P:-none}")',
        "unset A",
        'local_fn() { local B="$1"; ARGS+=(--b "$B"); }; local_fn "$ISL"',
        '[[ "$ISL" -gt 512 ]] && ARGS+=(--long)',
    ]
)


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(steps=st.lists(_SAFE_STEPS, max_size=8), tp=st.sampled_from(["1", "4", "8"]))
def test_random_compositions_of_safe_constructs_equal_bash(
    steps: list[str], tp: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    script = "\n".join(
        ["#!/usr/bin/env bash", "ARGS=()", *steps, 'vllm serve "$MODEL" "${ARGS[@]}"']
    )
    case = Case("hypothesis", script + "\n", env={**BASE_ENV, "TP": tp}, expect="complete")
    result = evaluate(case)
    run = run_bash(case, tmp_path_factory.mktemp("run"))
    assert result.partial == [], result.partial
    assert differences(case, result, run) == []


def test_the_sandbox_sees_what_vllm_was_given(tmp_path: Path) -> None:
    """The harness itself: a launcher's argv (with spaces and an empty word) comes back whole."""
    case = Case(
        "probe",
        "export VLLM_X='a b'\nvllm serve \"$MODEL\" '' 'two words' --tp \"$TP\"\n",
        env=dict(BASE_ENV),
    )
    run = run_bash(case, tmp_path)
    assert run.serves[0][0] == ["vllm", "serve", "org/M", "", "two words", "--tp", "4"]
    assert run.serves[0][1]["VLLM_X"] == "a b"
    assert "HOME" in run.serves[0][1] and os.sep in run.serves[0][1]["HOME"]
