"""``action.yml`` on a pull request that plants code, data and symbolic links in the
recipes checkout, run the way GitHub runs it (see ``test_action_steps.py``).

The pull request is the #682 replay — a PR that fails the gate — plus files that would
take over a Python started in the checkout or a writer following links there:

* ``pip/``, ``venv/``, ``ensurepip/`` and ``provenance/`` packages, ``sitecustomize.py``,
  ``usercustomize.py`` and a ``.pth`` file. Each, if imported, writes a marker file,
  prints the token that ``actions/checkout`` leaves in ``.git/config`` and the
  ``GITHUB_TOKEN`` of its process; the ``pip`` one also puts a ``provenance`` on PATH
  that passes every gate, and the ``provenance`` one exits 0 (the red team's attack);
* a ``ledger/``, ``evidence/`` and ``recipes/taxonomy.yaml``: what makes a directory a
  provenance source tree, whose (empty) ledger a run from there would read;
* ``provenance.sarif`` (the old default SARIF path) and ``reports/``, symbolic links to
  a file and a directory outside the checkout.

Every Python the action starts is probed: after the step that creates the action's venv,
its ``python`` is replaced by a script that logs its arguments, so the test counts the
audits (exactly one) and checks each call is isolated (``-I``)."""

from __future__ import annotations

import base64
import hashlib
import socket
from collections.abc import Mapping
from pathlib import Path

import pytest
from composite_action import ActionRun, pr_event, run_composite_action
from recipes_history import HISTORY, PR682_BASE, PR682_HEAD
from shipped_support import base_env, git, make_venv, recipes_repo

pytestmark = [pytest.mark.shipped, pytest.mark.slow, pytest.mark.corpus]

PREPARE = "Prepare a virtualenv outside the checkout"
REVS = "Resolve revisions"
AUDIT = "Audit the pull request (SARIF, job summary, PR comment)"
#: what actions/checkout persists in .git/config (persist-credentials: true)
CHECKOUT_TOKEN = "ghs_PLANTEDcheckoutTOKEN0123456789abcdefXYZ"
#: the github.token of the harness, handed to the audit step with comment: "true"
HARNESS_TOKEN = "ghs_not-a-real-token-the-test-never-calls-github"
PRECIOUS = b"a file outside the checkout that no step may write\n"


def _payload(name: str, markers: Path, repo: Path) -> str:
    """Python that, if it ever runs, leaves a marker and prints both tokens."""
    return (
        "import os, pathlib\n"
        f"_markers = pathlib.Path({str(markers)!r})\n"
        "_markers.mkdir(parents=True, exist_ok=True)\n"
        f"(_markers / '{name}-{{}}'.format(os.getpid())).write_text('ran')\n"
        f"_config = pathlib.Path({str(repo)!r}) / '.git' / 'config'\n"
        f"print('PLANTED {name}', os.environ.get('GITHUB_TOKEN', ''), _config.read_text())\n"
    )


def _plants(markers: Path, repo: Path) -> dict[str, str]:
    fake_provenance = (
        "import pathlib, sys\n"
        "_fake = pathlib.Path(sys.executable).parent / 'provenance'\n"
        "_fake.write_text('#!/bin/sh\\necho gate passed\\nexit 0\\n')\n"
        "_fake.chmod(0o755)\n"
    )
    files = {
        "pip/__init__.py": _payload("pip", markers, repo) + fake_provenance,
        "pip/__main__.py": "raise SystemExit(0)\n",
        "venv/__init__.py": _payload("venv", markers, repo),
        "venv/__main__.py": "raise SystemExit(0)\n",
        "ensurepip/__init__.py": _payload("ensurepip", markers, repo),
        "ensurepip/__main__.py": "raise SystemExit(0)\n",
        "provenance/__init__.py": _payload("provenance", markers, repo),
        "provenance/__main__.py": "raise SystemExit(0)\n",
        "provenance/cli/__init__.py": "",
        "provenance/cli/action_args.py": "raise SystemExit(0)\n",
        "sitecustomize.py": _payload("sitecustomize", markers, repo),
        "usercustomize.py": _payload("usercustomize", markers, repo),
        "zz-planted.pth": (
            f"import pathlib; pathlib.Path({str(markers / 'pth')!r}).mkdir(parents=True)\n"
        ),
        "ledger/README.md": "a ledger the PR brings along\n",
        "evidence/README.md": "evidence the PR brings along\n",
        "recipes/taxonomy.yaml": "hardware: {}\n",
    }
    return files


class Planted:
    def __init__(self, root: Path) -> None:
        if not HISTORY.is_dir():
            pytest.skip("needs ../shared/corpus/recipes-history")
        self.markers = root / "markers"
        self.outside = root / "outside"
        self.outside.mkdir()
        self.precious = self.outside / "precious.txt"
        self.precious.write_bytes(PRECIOUS)
        self.repo, (self.base, pr682) = recipes_repo(
            root / "recipes",
            [
                ("MiniMax-M3 as of recipes #672", (HISTORY / PR682_BASE).read_text("utf-8")),
                ("MiniMax-M3 as of recipes #682", (HISTORY / PR682_HEAD).read_text("utf-8")),
            ],
        )
        for rel, text in _plants(self.markers, self.repo).items():
            path = self.repo / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
        (self.repo / "provenance.sarif").symlink_to(self.precious)
        (self.repo / "reports").symlink_to(self.outside, target_is_directory=True)
        git(self.repo, "add", "-A")
        git(self.repo, "commit", "-q", "-m", "#682 and a few helpful files")
        self.head = git(self.repo, "rev-parse", "HEAD")
        assert git(self.repo, "rev-parse", "HEAD~1") == pr682
        # what actions/checkout leaves behind with persist-credentials: true
        basic = base64.b64encode(f"x-access-token:{CHECKOUT_TOKEN}".encode()).decode()
        self.secrets = (CHECKOUT_TOKEN, basic, HARNESS_TOKEN)
        git(
            self.repo,
            "config",
            "--local",
            "http.https://github.com/.extraheader",
            f"AUTHORIZATION: basic {basic}",
        )

    def untouched(self) -> None:
        assert self.precious.read_bytes() == PRECIOUS
        assert sorted(p.name for p in self.outside.iterdir()) == ["precious.txt"]
        assert (self.repo / "provenance.sarif").is_symlink()
        assert (self.repo / "reports").is_symlink()
        assert not self.markers.exists(), sorted(p.name for p in self.markers.iterdir())


@pytest.fixture(scope="module")
def planted(tmp_path_factory: pytest.TempPathFactory) -> Planted:
    return Planted(tmp_path_factory.mktemp("untrusted-pr"))


@pytest.fixture(scope="module")
def setup_python_bin(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """What ``actions/setup-python`` leaves: a Python with nothing but pip, first on PATH."""
    return make_venv(tmp_path_factory.mktemp("setup-python") / "venv")


def _closed_port_url() -> str:
    """An API URL on loopback where nothing listens (the comment fails fast)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{sock.getsockname()[1]}"


class PythonProbe:
    """Replaces the venv's ``python`` after the step that creates it with a script that
    logs each call's arguments, then runs the real interpreter."""

    def __init__(self, log: Path) -> None:
        self.log = log
        self.wrapped = False

    def __call__(self, name: str, outputs: Mapping[str, str]) -> None:
        if name != PREPARE:
            return
        python = Path(outputs["python"])
        assert python.is_symlink()
        # the same link under another name: the interpreter still finds the venv
        real = python.with_name("python-real")
        real.symlink_to(python.readlink())
        python.unlink()
        python.write_text(
            f'#!/bin/sh\nprintf "%s\\n" "$*" >> "{self.log}"\nexec "{real}" "$@"\n',
            encoding="utf-8",
        )
        python.chmod(0o755)
        self.wrapped = True

    def calls(self) -> list[str]:
        assert self.wrapped
        return self.log.read_text(encoding="utf-8").splitlines() if self.log.exists() else []


def _run(
    planted: Planted,
    setup_python_bin: Path,
    checkout: Path,
    tmp_path: Path,
    probe: PythonProbe,
    **inputs: str,
) -> ActionRun:
    return run_composite_action(
        checkout,
        inputs=inputs,
        event=pr_event(682, planted.base, planted.head),
        workspace=planted.repo,
        runner_temp=tmp_path / "runner-temp",
        env={**base_env(setup_python_bin), "GITHUB_API_URL": _closed_port_url()},
        repository="vllm-project/recipes",
        after_step=probe,
    )


def _everything_written(run: ActionRun, runner_temp: Path) -> dict[str, bytes]:
    """Every step's stdout and stderr, the job summary, and every file under
    ``$RUNNER_TEMP`` except the installed venv."""
    texts = {f"{s.name}: stdout": s.stdout.encode() for s in run.steps}
    texts |= {f"{s.name}: stderr": s.stderr.encode() for s in run.steps}
    texts["summary"] = run.summary.encode()
    for path in runner_temp.rglob("*"):
        if path.is_file() and "venv" not in path.relative_to(runner_temp).parts:
            texts[str(path)] = path.read_bytes()
    return texts


def _no_secret_anywhere(written: Mapping[str, bytes], secrets: tuple[str, ...]) -> None:
    for where, data in written.items():
        assert b"PLANTED" not in data, where
        for secret in secrets:
            assert secret.encode() not in data, f"{where} holds a token"


def test_planted_code_never_runs_and_the_gate_still_fails(
    planted: Planted, setup_python_bin: Path, checkout: Path, tmp_path: Path
) -> None:
    """With comment on (the token in the audit step) and the API unreachable: nothing
    planted runs, no token appears anywhere, the PR still fails the gate from one audit,
    the comment's failure is a warning, and nothing is written through a link."""
    probe = PythonProbe(tmp_path / "python-calls.log")
    run = _run(planted, setup_python_bin, checkout, tmp_path, probe, comment="true")
    audit = run.step(AUDIT)
    assert audit.ran and audit.returncode == 0, audit.stderr[-4000:]
    planted.untouched()
    _no_secret_anywhere(_everything_written(run, tmp_path / "runner-temp"), planted.secrets)
    # the gate: #682 makes benchmarked combinations worse, planted ledger or not
    assert run.outputs["exit-code"] == "1"
    assert run.summary.startswith("**gate: FAIL")
    assert "#### Blocking" in run.summary
    gate = run.step("Gate")
    assert gate.ran and gate.returncode == 1
    assert run.failed
    # one audit, every Python call isolated, none of them from the checkout
    calls = probe.calls()
    audits = [c for c in calls if c.startswith("-I -m provenance audit ")]
    assert len(audits) == 1, calls
    assert all(c.startswith("-I ") for c in calls), calls
    (audit_call,) = audits
    assert f"--repo {planted.repo} " in audit_call
    assert "--github-pr vllm-project/recipes#682 --comment --github-errors warn" in audit_call
    # the comment could not be written: a warning, the gate's code stands
    assert "::warning::provenance: the GitHub API could not be reached" in audit.stdout
    assert "warning: GitHub PR not checked" in audit.stderr
    # the SARIF uploaded is the one run's, under $RUNNER_TEMP
    upload = run.step("Upload SARIF to code scanning")
    assert upload.ran
    sarif = Path(upload.with_inputs["sarif_file"])
    assert sarif.is_relative_to(tmp_path / "runner-temp") and sarif.is_file()
    assert run.outputs["sarif-file"] == str(sarif)


@pytest.mark.parametrize("sarif_file", ["provenance.sarif", "reports/provenance.sarif"])
def test_a_sarif_file_through_a_committed_link_is_refused(
    planted: Planted, setup_python_bin: Path, checkout: Path, tmp_path: Path, sarif_file: str
) -> None:
    """``sarif-file`` naming the committed file link, or a path through the committed
    directory link: the step fails with exit 2 before any audit, nothing is written."""
    before = hashlib.sha256(planted.precious.read_bytes()).hexdigest()
    probe = PythonProbe(tmp_path / "python-calls.log")
    run = _run(planted, setup_python_bin, checkout, tmp_path, probe, **{"sarif-file": sarif_file})
    revs = run.step(REVS)
    assert revs.ran and revs.returncode == 2, revs.stderr[-2000:]
    assert "is a symbolic link; refusing to write through it" in revs.stderr
    assert not run.step(AUDIT).ran
    assert not run.step("Upload SARIF to code scanning").ran
    assert run.failed
    assert not [c for c in probe.calls() if "-m provenance audit" in c]
    assert hashlib.sha256(planted.precious.read_bytes()).hexdigest() == before
    planted.untouched()
