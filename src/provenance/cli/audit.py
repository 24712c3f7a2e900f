"""``provenance audit`` and ``provenance explain``."""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NamedTuple, TextIO

import click

from provenance.cli.options import audit_filters, enumeration_options, input_options, settings
from provenance.cli.runner import run
from provenance.errors import EXIT_GATE, EXIT_INPUT, EXIT_OK, UsageError
from provenance.report.formats import FORMATS


class ReportTarget(NamedTuple):
    """One rendering of the audit result written to a file: ``--output`` in ``--format``,
    or one ``--report FORMAT=PATH``."""

    fmt: str
    path: Path


def parse_report_targets(
    ctx: click.Context, param: click.Parameter, values: tuple[str, ...]
) -> tuple[ReportTarget, ...]:
    """Each ``--report FORMAT=PATH`` as a :class:`ReportTarget`; a malformed value or an
    unknown format is a usage error (exit 2)."""
    targets = []
    for value in values:
        fmt, sep, path = value.partition("=")
        if not sep or not fmt or not path:
            raise click.BadParameter(
                f"expects FORMAT=PATH, e.g. sarif=out.sarif (got {value!r})", ctx, param
            )
        if fmt not in FORMATS:
            raise click.BadParameter(
                f"unknown format {fmt!r} (choose from {', '.join(sorted(FORMATS))})", ctx, param
            )
        targets.append(ReportTarget(fmt, Path(path)))
    return tuple(targets)


def report_targets(
    fmt: str, output: Path | None, reports: Sequence[ReportTarget]
) -> tuple[ReportTarget, ...]:
    """Every file the run writes: ``--output`` first, then each ``--report``; two outputs
    naming the same file are a usage error."""
    targets = ((ReportTarget(fmt, output),) if output is not None else ()) + tuple(reports)
    seen: dict[Path, ReportTarget] = {}
    for target in targets:
        key = target.path.resolve()
        if key in seen:
            raise UsageError(
                f"{target.path} is named by two outputs ({seen[key].fmt}, {target.fmt})"
            )
        seen[key] = target
    return targets


def _write_targets(write: Callable[[str, TextIO], None], targets: Sequence[ReportTarget]) -> None:
    """Render the one result into each target: a regular file appears whole or not at all
    (an error mid-write leaves no file); a FIFO or device is written in place."""
    from provenance.store.atomic import output_text_stream

    for target in targets:
        with output_text_stream(target.path) as out:
            write(target.fmt, out)


@click.command()
@click.argument("recipes", nargs=-1)
@input_options
@enumeration_options
@click.option(
    "--format",
    "fmt",
    type=click.Choice(sorted(FORMATS)),
    default="text",
    show_default=True,
    help="github: GitHub Actions annotations (::error file=…,line=…::…) for inline "
    "feedback without code scanning.",
)
@click.option("--strict", is_flag=True, help="Exit 1 if a guide-only combination is undeclared.")
@click.option(
    "--all",
    "show_all",
    is_flag=True,
    help="Text and markdown: print every row (by default long sections are cut, saying so).",
)
@click.option(
    "--output", type=click.Path(dir_okay=False, path_type=Path), default=None, help="Write here."
)
@click.option(
    "--report",
    "reports",
    metavar="FORMAT=PATH",
    multiple=True,
    callback=parse_report_targets,
    help="Also write the same result as FORMAT to PATH (repeat; e.g. sarif=out.sarif).",
)
@click.option(
    "--repo",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    default=None,
    help="A recipes git repository: audit what --base..--head changes (read from git).",
)
@click.option("--base", default=None, help="Base revision of the PR (with --repo).")
@click.option("--head", default=None, help="Head revision of the PR (with --repo).")
@click.option(
    "--staged",
    is_flag=True,
    help="Audit what the staged change alters: base HEAD, head the index (pre-commit).",
)
@click.option(
    "--github-pr",
    default=None,
    metavar="OWNER/REPO#N",
    help="Check the PR body cites the evidence behind recommended combinations (needs a token).",
)
@click.option("--comment", is_flag=True, help="With --github-pr: create or update one comment.")
@click.option(
    "--github-errors",
    type=click.Choice(["fail", "warn"]),
    default="fail",
    show_default=True,
    help="With --github-pr: warn = a GitHub API failure is a warning, the audit's code stands.",
)
@click.option(
    "--token-env",
    default="GITHUB_TOKEN",
    show_default=True,
    help="Environment variable holding the GitHub token.",
)
def audit(
    recipes: tuple[str, ...],
    recipes_root: Path | None,
    ledger: Path | None,
    evidence: Path | None,
    variants: tuple[str, ...],
    hardware: tuple[str, ...],
    strategies: tuple[str, ...],
    features: str,
    pd_nodes: str,
    pd_pairing: str,
    kv: str,
    fmt: str,
    strict: bool,
    show_all: bool,
    output: Path | None,
    reports: tuple[ReportTarget, ...],
    repo: Path | None,
    base: str | None,
    head: str | None,
    staged: bool,
    github_pr: str | None,
    comment: bool,
    github_errors: str,
    token_env: str,
) -> None:
    """Audit RECIPE(s) (Org/Name or a YAML path; default: every recipe) against the ledger.

    Every selectable combination is recommended (one validated evidence point
    has exactly its major flags, per role) or guide-only, with reasons.

    Auditing every recipe, an invalid one is reported (on stderr and in the report)
    and skipped, the rest audited, and the command exits 3; a named RECIPE that is
    invalid stops the audit at once.

    With --repo/--base/--head, audit what a pull request changes instead: both
    revisions are read from git, and the command exits 1 when the PR makes a
    benchmarked combination worse or adds an unbacked verified claim that no
    declaration covers (docs/audit.md, "The PR gate"). Each changed recipe is
    audited on its own: one invalid in the head is reported and blocks, the rest
    are diffed, and the command exits 3 after writing the report.

    Every output (stdout or --output, and each --report) is rendered from the one
    audit result, and the exit code is that audit's.
    """

    def action() -> int:
        from provenance.audit.pipeline import AuditInputs, run_audit
        from provenance.report.formats import write_report

        filters = audit_filters(variants, hardware, strategies, features, pd_nodes, pd_pairing, kv)
        if comment and not github_pr:
            raise UsageError("--comment needs --github-pr OWNER/REPO#N")
        if github_errors != "fail" and not github_pr:
            raise UsageError("--github-errors needs --github-pr OWNER/REPO#N")
        targets = report_targets(fmt, output, reports)
        github = _GitHubRequest(github_pr, comment, token_env, github_errors == "warn")
        nonlocal repo, base, head
        if staged:
            repo, base, head = _staged_revisions(repo, base, head)
        if repo is not None or base or head:
            return _pr_audit(
                repo, base, head, ledger, evidence, filters, fmt, output, targets, github
            )
        from provenance.cli.progress import progress_for

        with progress_for(settings(), sys.stderr) as progress:
            progress(f"auditing {', '.join(recipes) or 'every recipe'}")
            report = run_audit(
                AuditInputs(
                    recipes=recipes, recipes_root=recipes_root, ledger=ledger, evidence=evidence
                ),
                filters,
            )
        if report.errors and not report.recipes:
            # every recipe is invalid: nothing was audited, so no report is written
            from provenance.escaping import terminal

            for error in report.errors:
                click.echo(f"invalid input: {terminal(error.located())}", err=True)
            return EXIT_INPUT
        if output is None:
            if fmt == "text":
                from provenance.report.text import write as write_text

                color = settings().use_color(sys.stdout)
                write_text(report, sys.stdout, color=color, show_all=show_all)
            else:
                write_report(report, fmt, sys.stdout, show_all=show_all)
        _write_targets(
            lambda name, out: write_report(report, name, out, show_all=show_all), targets
        )
        if github.pr:
            _github_check(report, github)
        if report.errors:
            from provenance.escaping import terminal

            for error in report.errors:
                click.echo(f"invalid input: {terminal(error.located())}", err=True)
            click.echo(
                f"{len(report.errors)} invalid recipe(s) not audited; the report covers the rest",
                err=True,
            )
            return EXIT_INPUT
        if strict and report.summary.undeclared_guide_only:
            click.echo(
                f"{report.summary.undeclared_guide_only} guide-only combination(s) are not "
                "covered by a declaration",
                err=True,
            )
            return EXIT_GATE
        return EXIT_OK

    run(action)


def _staged_revisions(
    repo: Path | None, base: str | None, head: str | None
) -> tuple[Path, str, str]:
    """``--staged``: the repository around the current directory (or ``--repo``), base
    ``HEAD``, head a commit of the index (staged blobs read through git, never the work
    tree)."""
    from provenance.sources.git import open_repo, staged_commit
    from provenance.store.embedded import git_toplevel

    if base or head:
        raise UsageError("--staged compares HEAD with the index: leave out --base and --head")
    where = repo or git_toplevel(Path.cwd())
    if where is None:
        raise UsageError("--staged: not inside a git work tree")
    return where, "HEAD", staged_commit(open_repo(where))


class _GitHubRequest(NamedTuple):
    """``--github-pr``, ``--comment``, ``--token-env`` and ``--github-errors warn``."""

    pr: str | None
    comment: bool
    token_env: str
    warn: bool


def _pr_audit(
    repo: Path | None,
    base: str | None,
    head: str | None,
    ledger: Path | None,
    evidence: Path | None,
    filters: Any,
    fmt: str,
    output: Path | None,
    targets: Sequence[ReportTarget],
    github: _GitHubRequest,
) -> int:
    from provenance.cli.progress import progress_for
    from provenance.report.pr import gate_exit_code
    from provenance.review.pr_audit import PrAuditRequest, run_pr_audit

    if repo is None or not base or not head:
        raise UsageError("--repo, --base and --head go together")
    request = PrAuditRequest(
        repo=repo, base=base, head=head, ledger=ledger, evidence=evidence, filters=filters
    )
    with progress_for(settings(), sys.stderr) as progress:
        result = run_pr_audit(request, progress)
    if output is None:
        _write_pr(result, fmt, sys.stdout)
    _write_targets(lambda name, out: _write_pr(result, name, out), targets)
    if github.pr and result.head_report is not None:
        _github_check(result.head_report, github)
    if result.diff.errors:
        from provenance.escaping import terminal

        for error in result.diff.errors:
            click.echo(f"invalid input: {terminal(error.located())}", err=True)
        click.echo(
            f"{len(result.diff.errors)} recipe(s) invalid in the head, not audited there; "
            "the report covers the rest",
            err=True,
        )
    if result.diff.gate.blocking or result.diff.gate.claims:
        gate = result.diff.gate
        click.echo(
            f"gate: {gate.blocking} combination(s) made worse and {gate.claims} new unbacked "
            "claim(s) are not covered by a declaration",
            err=True,
        )
    return gate_exit_code(result)


def _write_pr(result: Any, fmt: str, out: TextIO) -> None:
    """The PR audit in ``fmt``: GitHub annotations here, every other format in
    :func:`provenance.report.pr.write_pr_audit`."""
    if fmt == "github":
        from provenance.report.annotations import write_pr

        write_pr(result.head_report, result.base_report, result.diff, out)
        return
    from provenance.report.pr import write_pr_audit

    write_pr_audit(result, fmt, out)


def _github_check(report: Any, github: _GitHubRequest) -> None:
    """Report evidence PRs missing from the PR body; optionally upsert the marked comment.
    With ``--github-errors warn`` an API failure is a warning on stderr, not the exit code."""
    from provenance.errors import NetworkError
    from provenance.github.pr import evidence_prs, github_pr_report, render_text
    from provenance.report.markdown import write as write_markdown

    assert github.pr is not None
    body = None
    if github.comment:
        import io

        buffer = io.StringIO()
        write_markdown(report, buffer)
        body = buffer.getvalue()
    try:
        checked = github_pr_report(
            github.pr, evidence_prs(report), body, token_env=github.token_env
        )
    except NetworkError as exc:
        if not github.warn:
            raise
        click.echo(
            f"warning: {GITHUB_NOT_CHECKED} (--github-errors warn): {exc.diagnostic()}", err=True
        )
        return
    click.echo(render_text(checked), err=True)


#: the warning ``--github-errors warn`` prints when the GitHub API failed
GITHUB_NOT_CHECKED = "GitHub PR not checked, no comment written"


def _pool(text: str | None, name: str) -> tuple[int, str] | None:
    if text is None:
        return None
    nodes, _, mode = text.partition(":")
    if not nodes.isdigit() or mode not in ("tp", "tep", "dep"):
        raise UsageError(f"{name} expects NODES:MODE with MODE tp, tep or dep (got {text!r})")
    return int(nodes), mode


@click.command()
@click.argument("recipe")
@input_options
@click.option("--variant", default=None, help="Variant key (e.g. nvfp4).")
@click.option("--hardware", default=None, help="Hardware id (e.g. b300).")
@click.option("--strategy", default=None, help="Strategy (e.g. pd_cluster).")
@click.option(
    "--feature",
    "features",
    multiple=True,
    help="An enabled feature, NAME or NAME=MODE (repeat; none given = no features).",
)
@click.option("--nodes", type=click.IntRange(1, 16), default=None, help="Node count (non-PD).")
@click.option("--prefill", default=None, help="PD prefill pool NODES:MODE, e.g. 1:tp.")
@click.option("--decode", default=None, help="PD decode pool NODES:MODE, e.g. 2:dep.")
@click.option("--kv", default=None, help="KV offload option or Mooncake topology id.")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text")
def explain(
    recipe: str,
    recipes_root: Path | None,
    ledger: Path | None,
    evidence: Path | None,
    variant: str | None,
    hardware: str | None,
    strategy: str | None,
    features: tuple[str, ...],
    nodes: int | None,
    prefill: str | None,
    decode: str | None,
    kv: str | None,
    fmt: str,
) -> None:
    """Explain one combination's verdict step by step.

    \b
    Example:
      provenance explain MiniMaxAI/MiniMax-M3 --variant nvfp4 --hardware b300 \\
        --strategy pd_cluster --feature spec_decoding=eagle3_gqa --prefill 1:tp --decode 1:tp
    """

    def action() -> int:
        from provenance.audit.explain import Explanation
        from provenance.audit.pipeline import AuditInputs, SelectionSpec, run_explain

        spec = SelectionSpec(
            recipe=recipe,
            variant=variant,
            hardware=hardware,
            strategy=strategy,
            features=features,
            nodes=nodes,
            prefill=_pool(prefill, "--prefill"),
            decode=_pool(decode, "--decode"),
            kv=kv,
        )
        explanation = run_explain(
            AuditInputs(recipes_root=recipes_root, ledger=ledger, evidence=evidence), spec
        )
        assert isinstance(explanation, Explanation)
        if fmt == "json":
            click.echo(explanation.model_dump_json(by_alias=True, indent=2))
        else:
            from provenance.report.explain_text import write

            write(explanation, sys.stdout)
        return EXIT_OK

    run(action)
