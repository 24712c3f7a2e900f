"""The console-script entry: it runs one command with the collector off and ends the
process; prove that nothing is lost on the way out (full output on a pipe and in
``--output`` files, the exit status of every kind of ending, ``atexit`` handlers)."""

from __future__ import annotations

import gc
import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from provenance.cli.main import exit_status, one_shot_process

REPO_ROOT = Path(__file__).resolve().parents[2]


#: A slice of the embedded MiniMax-M3 audit: large enough to span many buffer flushes.
AUDIT_JSON = (
    "audit",
    "MiniMaxAI/MiniMax-M3",
    "--variant",
    "nvfp4",
    "--hardware",
    "b300",
    "--format",
    "json",
)


def _provenance(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "provenance", *args],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )


@pytest.mark.parametrize(
    ("code", "status"), [(None, 0), (0, 0), (1, 1), (3, 3), (256, 0), (257, 1)]
)
def test_exit_status_follows_sys_exit(code: int | None, status: int) -> None:
    assert exit_status(code) == status


def test_exit_status_of_a_message_is_one_and_prints_it(capsys: pytest.CaptureFixture[str]) -> None:
    assert exit_status("gone wrong") == 1
    assert capsys.readouterr().err == "gone wrong\n"


def test_large_output_on_a_pipe_arrives_whole() -> None:
    done = _provenance(*AUDIT_JSON)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)  # a truncated buffer would not parse
    assert report["schema"] == "provenance.audit/v3"
    assert report["summary"]["combinations"] > 1000


def test_output_file_is_complete(tmp_path: Path) -> None:
    out = tmp_path / "audit.json"
    done = _provenance(*AUDIT_JSON, "--output", str(out))
    assert done.returncode == 0, done.stderr
    assert done.stdout == ""
    assert json.loads(out.read_text(encoding="utf-8"))["schema"] == "provenance.audit/v3"


def test_error_status_and_diagnostic_survive_the_exit(tmp_path: Path) -> None:
    done = _provenance("audit", str(tmp_path / "missing.yaml"))
    assert done.returncode == 3
    assert "missing.yaml" in done.stderr
    assert "Traceback" not in done.stderr


def test_usage_error_and_version() -> None:
    bad = _provenance("audit", "--no-such-option")
    assert bad.returncode == 2
    assert "No such option" in bad.stderr
    version = _provenance("--version")
    assert version.returncode == 0
    assert version.stdout.startswith("provenance, version ")


def test_exit_handlers_run_and_the_status_is_the_commands() -> None:
    script = (
        "import atexit\n"
        "atexit.register(lambda: print('handler ran', flush=True))\n"
        "import provenance.cli.main as m\n"
        "m.main(['audit', '--no-such-option'])\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=False
    )
    assert "handler ran" in done.stdout
    assert done.returncode == 2
    assert "No such option" in done.stderr


def _one_shot(command: Callable[[], int]) -> tuple[pytest.ExceptionInfo[BaseException], int]:
    """Run ``command`` through ``one_shot_process``; what it raised and how many objects
    it left frozen (the collector and the freeze are restored after)."""
    was = gc.isenabled()
    try:
        with pytest.raises(BaseException) as ended:
            one_shot_process(command)
        frozen = gc.get_freeze_count()
    finally:
        gc.unfreeze()
        if was:
            gc.enable()
    return ended, frozen


def test_one_shot_process_runs_the_command_without_the_collector() -> None:
    seen: list[bool] = []

    def command() -> int:
        seen.append(gc.isenabled())
        return 3

    ended, frozen = _one_shot(command)
    assert seen == [False]
    assert isinstance(ended.value, SystemExit)
    assert ended.value.code == 3
    assert frozen > 0  # the interpreter's final collection will not scan them


def test_one_shot_process_freezes_the_objects_left_even_when_the_command_raises() -> None:
    def command() -> int:
        raise ValueError("boom")

    ended, frozen = _one_shot(command)
    assert isinstance(ended.value, ValueError)
    assert frozen > 0
