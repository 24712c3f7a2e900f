"""``provenance audit --report FORMAT=PATH``: more renderings of the one audit result, and
``--github-errors warn``: a GitHub API failure that leaves the audit's exit code alone.

The GitHub Action relies on both: one audit per job writes the SARIF, the job summary
and the PR comment, and its exit code is the gate's."""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from recipes_repo import pr_repo, without_mxfp8_args

import provenance.review.pr_audit as pr_audit
from provenance.cli.main import cli
from provenance.errors import EXIT_GATE, EXIT_NETWORK, EXIT_OK, EXIT_USAGE

FORMATS = ("json", "markdown", "sarif", "text", "html", "github")


def _restore_mxfp8_args(data: dict[str, object]) -> None:
    return None


@pytest.fixture(scope="module")
def pr(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, str]:
    """A PR that gives mxfp8 back its extra arguments (base without them)."""
    return pr_repo(tmp_path_factory.mktemp("pr"), without_mxfp8_args, _restore_mxfp8_args)


def _pr_args(pr: tuple[Path, str, str]) -> list[str]:
    """The PR audit, cut to the cells the PR changes on one GPU (fast)."""
    work, base, head = pr
    return [
        *("audit", "--repo", str(work), "--base", base, "--head", head),
        *("--variant", "mxfp8", "--hardware", "b300"),
    ]


def _invoke(args: list[str], env: dict[str, str] | None = None) -> Any:
    return CliRunner().invoke(cli, args, env=env)


def test_every_report_comes_from_one_pr_audit(
    pr: tuple[Path, str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each ``--report`` file holds what ``--format`` of its own run prints, the core ran
    once for all of them, and the exit code is that run's."""
    calls: list[object] = []
    real = pr_audit.run_pr_audit

    def counted(request: Any, progress: Any = None) -> Any:
        calls.append(request)
        return real(request, progress)

    monkeypatch.setattr(pr_audit, "run_pr_audit", counted)
    reports = [f"--report={fmt}={tmp_path / f'out.{fmt}'}" for fmt in FORMATS if fmt != "text"]
    together = _invoke([*_pr_args(pr), "--format", "text", *reports])
    assert len(calls) == 1
    code = together.exit_code
    assert code in (EXIT_OK, EXIT_GATE), together.output
    for fmt in FORMATS:
        alone = _invoke([*_pr_args(pr), "--format", fmt])
        assert alone.exit_code == code
        if fmt == "text":
            assert together.stdout == alone.stdout
        else:
            assert (tmp_path / f"out.{fmt}").read_text(encoding="utf-8") == alone.stdout, fmt
    assert len(calls) == 1 + len(FORMATS)


def test_reports_of_an_audit_without_repo(tmp_path: Path) -> None:
    out = tmp_path / "a.md"
    done = _invoke(
        [
            *("audit", "MiniMaxAI/MiniMax-M3", "--hardware", "b300", "--format", "json"),
            *("--output", str(tmp_path / "a.json"), "--report", f"markdown={out}"),
        ]
    )
    assert done.exit_code == EXIT_OK, done.output
    alone = _invoke(["audit", "MiniMaxAI/MiniMax-M3", "--hardware", "b300", "--format", "markdown"])
    assert out.read_text(encoding="utf-8") == alone.stdout
    assert (tmp_path / "a.json").read_text(encoding="utf-8").startswith("{")


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("pdf=out.pdf", "unknown format 'pdf'"),
        ("sarif", "expects FORMAT=PATH"),
        ("sarif=", "expects FORMAT=PATH"),
        ("=out.sarif", "expects FORMAT=PATH"),
    ],
)
def test_a_bad_report_is_a_usage_error(tmp_path: Path, value: str, message: str) -> None:
    done = _invoke(["audit", "--report", value])
    assert done.exit_code == EXIT_USAGE
    assert message in done.output
    assert list(tmp_path.iterdir()) == []


def test_two_outputs_naming_one_file_are_a_usage_error(tmp_path: Path) -> None:
    same = tmp_path / "x"
    for args in (
        ["--output", str(same), "--report", f"markdown={same}"],
        ["--report", f"sarif={same}", "--report", f"json={tmp_path / '.' / 'x'}"],
    ):
        done = _invoke(["audit", "--hardware", "b300", *args])
        assert done.exit_code == EXIT_USAGE, done.output
        assert "is named by two outputs" in done.output
        assert not same.exists()


def test_github_errors_needs_github_pr() -> None:
    done = _invoke(["audit", "--github-errors", "warn"])
    assert done.exit_code == EXIT_USAGE
    assert "--github-errors needs --github-pr" in done.output


def _closed_port_url() -> str:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{sock.getsockname()[1]}"


def test_warn_keeps_the_audits_code_when_github_is_unreachable(
    pr: tuple[Path, str, str], tmp_path: Path
) -> None:
    token = "ghs_sentinel-token-of-the-report-option-test"
    env = {"GITHUB_TOKEN": token, "GITHUB_API_URL": _closed_port_url()}
    summary = tmp_path / "summary.md"
    github = ["--github-pr", "vllm-project/recipes#1", "--comment"]
    offline = _invoke(_pr_args(pr), env={"GITHUB_TOKEN": ""})
    warned = _invoke(
        [*_pr_args(pr), "--report", f"markdown={summary}", *github, "--github-errors", "warn"],
        env=env,
    )
    assert warned.exit_code == offline.exit_code, warned.output
    assert "warning: GitHub PR not checked, no comment written (--github-errors warn)" in (
        warned.stderr
    )
    assert summary.read_text(encoding="utf-8").strip()
    failed = _invoke([*_pr_args(pr), *github], env=env)
    assert failed.exit_code == EXIT_NETWORK
    for done in (warned, failed):
        assert token not in done.output
