"""Every user-visible output, pinned: a change to any report shows up here first.

Each case runs one real command of the CLI (click's runner, in process) on the embedded
data, on a recipes PR replayed from the MiniMax-M3 history in ``../shared/corpus``, or
(slow) on every recipe of a vllm-project/recipes checkout at 8959cf6. Small outputs are
kept whole in ``__snapshots__/`` so a reviewer reads the change; large ones (the JSON,
SARIF and HTML reports, tens of megabytes) as their SHA-256 and size.

An intended change of output is accepted with ``python -m pytest tests/snapshots
--snapshot-update`` and reviewed in the diff of ``__snapshots__/``.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from click.testing import CliRunner
from recipes_history import HISTORY, REPO_ROOT, replay_pr682
from recipes_support import full_checkout
from syrupy.assertion import SnapshotAssertion

from provenance.cli.main import cli
from provenance.escaping import markdown_inline
from provenance.report.markdown import COMMENT_LIMIT


@dataclass(frozen=True)
class Case:
    args: tuple[str, ...]
    #: keep the digest only (outputs of megabytes)
    digest: bool = False
    #: what the case needs beyond the repository: "" | "corpus" | "checkout"
    needs: str = ""
    #: one of the slowest tests without a checkout (``--durations``)
    slow: bool = False


EXPLAIN_PD = (
    "explain",
    "MiniMaxAI/MiniMax-M3",
    "--variant",
    "nvfp4",
    "--hardware",
    "b300",
    "--strategy",
    "pd_cluster",
    "--feature",
    "spec_decoding=eagle3_gqa",
    "--prefill",
    "1:tp",
    "--decode",
    "1:tp",
)
EXPLAIN_TP = (
    "explain",
    "MiniMaxAI/MiniMax-M3",
    "--variant",
    "nvfp4",
    "--hardware",
    "b200",
    "--strategy",
    "single_node_tp",
)
PR = ("--repo", "{repo}", "--base", "{base}", "--head", "{head}")

CASES: dict[str, Case] = {
    "audit-text": Case(("audit",)),
    "audit-markdown": Case(("audit", "--format", "markdown")),
    "audit-json": Case(("audit", "--format", "json"), digest=True),
    "audit-sarif": Case(("audit", "--format", "sarif"), digest=True),
    "audit-html": Case(("audit", "--format", "html"), digest=True),
    "audit-star-kv-json": Case(
        ("audit", "--pd-pairing", "star", "--kv", "all", "--format", "json"), digest=True
    ),
    "audit-b300-text": Case(("audit", "--hardware", "b300", "--features", "default")),
    "explain-pd-text": Case(EXPLAIN_PD),
    "explain-pd-json": Case((*EXPLAIN_PD, "--format", "json"), digest=True),
    "explain-tp-text": Case(EXPLAIN_TP),
    "cite-en-zh": Case(("cite", "--lang", "en,zh")),
    "combos-jsonl": Case(
        ("combos", "MiniMaxAI/MiniMax-M3", "--recipes-root", "recipes"), True, slow=True
    ),
    "evidence-list-text": Case(("evidence", "list", "--hardware", "b300"), digest=True),
    "evidence-list-json": Case(("evidence", "list", "--format", "json"), digest=True),
    "graph-json": Case(("graph", "--format", "json"), digest=True),
    "verify-text": Case(("verify",)),
    "flags-text": Case(
        (
            "flags",
            "--",
            "vllm",
            "serve",
            "MiniMaxAI/MiniMax-M3",
            "--attention-config",
            '{"indexer_kv_dtype": "fp8"}',
            "--no-enable-prefix-caching",
            "-tp",
            "4",
        )
    ),
    "pr682-text": Case(("audit", *PR), needs="corpus"),
    "pr682-markdown": Case(("audit", *PR, "--format", "markdown"), needs="corpus"),
    "pr682-json": Case(("audit", *PR, "--format", "json"), digest=True, needs="corpus"),
    "pr682-sarif": Case(("audit", *PR, "--format", "sarif"), digest=True, needs="corpus"),
    "pr682-html": Case(("audit", *PR, "--format", "html"), digest=True, needs="corpus"),
    "pr682-cite": Case(("cite", *PR, "--lang", "en,zh"), needs="corpus"),
    "all-recipes-json": Case(
        ("audit", "--recipes-root", "{checkout}", "--format", "json"), digest=True, needs="checkout"
    ),
    "all-recipes-star-json": Case(
        ("audit", "--recipes-root", "{checkout}", "--pd-pairing", "star", "--format", "json"),
        digest=True,
        needs="checkout",
    ),
    "all-recipes-markdown": Case(
        ("audit", "--recipes-root", "{checkout}", "--format", "markdown"), needs="checkout"
    ),
}


@pytest.fixture(scope="module")
def pr682_repo(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The embedded recipes root in a git repository: base = MiniMax-M3 after recipes
    PR #672, head = after #682."""
    if not HISTORY.is_dir():
        pytest.skip("../shared/corpus is absent")
    work, base, head = replay_pr682(tmp_path_factory.mktemp("pr682"))
    return {"repo": str(work), "base": base, "head": head}


def _slow(name: str) -> list[pytest.MarkDecorator]:
    case = CASES[name]
    return [pytest.mark.slow] if case.needs == "checkout" or case.slow else []


@pytest.fixture
def in_repo_root() -> Iterator[None]:
    cwd = Path.cwd()
    os.chdir(REPO_ROOT)
    try:
        yield
    finally:
        os.chdir(cwd)


def _run(args: tuple[str, ...], values: dict[str, str]) -> tuple[int, bytes]:
    argv = [values.get(arg[1:-1], arg) if arg.startswith("{") else arg for arg in args]
    result = CliRunner(env={"COLUMNS": "160", "NO_COLOR": "1"}).invoke(cli, argv)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    out = result.stdout_bytes
    # the PR reports name the recipes repository they read: a new temporary directory
    if "repo" in values:
        for shown in (values["repo"], markdown_inline(values["repo"])):
            out = out.replace(shown.encode(), b"{repo}")
    return result.exit_code, out


@pytest.mark.parametrize("name", [pytest.param(n, marks=_slow(n)) for n in CASES])
def test_output(
    name: str,
    snapshot: SnapshotAssertion,
    request: pytest.FixtureRequest,
    in_repo_root: None,
) -> None:
    case = CASES[name]
    values: dict[str, str] = {}
    if case.needs == "corpus":
        values = request.getfixturevalue("pr682_repo")
    elif case.needs == "checkout":
        checkout = full_checkout()
        if checkout is None:
            pytest.skip("no vllm-project/recipes checkout (set PROVENANCE_RECIPES_ROOT)")
        values = {"checkout": str(checkout)}
    code, out = _run(case.args, values)
    if "markdown" in case.args:  # a PR comment or job summary: within GitHub's limit
        assert len(out.decode("utf-8")) <= COMMENT_LIMIT
    shown: Callable[[bytes], object] = _digest if case.digest else _text
    assert {"exit": code, "output": shown(out)} == snapshot


def _digest(out: bytes) -> str:
    return f"sha256:{hashlib.sha256(out).hexdigest()} bytes:{len(out)}"


def _text(out: bytes) -> str:
    return out.decode("utf-8")


def test_pr682_comment_opens_with_the_verdict_and_lists_regressions_first(
    pr682_repo: dict[str, str], in_repo_root: None
) -> None:
    """The review's PR: exit 1, the verdict line first, then the blocking sections in
    order (regressions, new claims, new unevidenced flags — whichever there are).

    Against the all-models ledger with sweeps scoped by re-extraction (#2120's run ran
    all 32 of its records: its runner launchers changed on main between the swept head
    and the merge without changing what ran), 4 combinations recommended before the PR
    regress, 1 new verified claim is unbacked, and 360 combinations newly carry the FP8
    indexer flag no in-scope evidence sets."""
    args = tuple(pr682_repo.get(a[1:-1], a) if a.startswith("{") else a for a in PR)
    titles = (
        "Regressed: was recommended, now guide",
        "New verified claim inside InferenceX coverage that no recommended combination",
        "New major flag or value no in",
    )
    for fmt, verdict in (
        ("markdown", "**gate: FAIL — 4 regressed"),
        ("text", "gate: FAIL — 4 regressed"),
    ):
        code, out = _run(("audit", *args, "--format", fmt), {})
        text = out.decode("utf-8")
        assert code == 1
        first = text.splitlines()[0]
        assert first.startswith(verdict), first
        assert "1 new unbacked claim" in first and "360 newly carry" in first
        positions = [text.index(t) for t in titles if t in text]
        assert len(positions) == len(titles) and positions == sorted(positions), fmt
        assert "`serve: attention_config.indexer_kv_dtype=fp8`" in text or fmt == "text"
        if fmt == "markdown":
            assert len(text) < 65_536
