"""GitHub Actions annotations: ``::error file=…,line=…,title=…::message`` lines.

A workflow step that prints them gets inline comments on the PR's diff without code
scanning (a fork's PR cannot upload SARIF). The findings and their lines are the SARIF
report's (:func:`provenance.report.sarif.build`, :func:`~provenance.report.sarif.build_pr`:
the line of the argument that introduced a flag, in a PR the line the PR changed), so
the two never disagree:

* the audit (``--format github``): each recipe that does not load (``error``) and each
  undeclared guide-only finding (``warning``); notes (unreachable combinations: no
  recipe edit helps) and findings a declaration covers are left out;
* the PR audit: what the gate blocks (``error``), each new claim it reports without
  blocking (``notice``) and each recipe invalid in the head (``error``).

A first ``notice`` names the ledger the findings were judged against. Findings on one
line become one annotation (GitHub shows one per line anyway), naming
at most :data:`MAX_PER_LINE` of them. Values are escaped as the runner's command parser
expects: in the message ``%``, CR and LF; in a property also ``:`` and ``,``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, TextIO

from provenance.audit.verdicts import AuditReport
from provenance.escaping import terminal
from provenance.review.diff import DiffReport

#: SARIF level -> annotation command.
COMMANDS: Mapping[str, str] = {"error": "error", "warning": "warning", "note": "notice"}
#: Findings named in one annotation; the rest are counted.
MAX_PER_LINE = 8
#: What the annotations of a single audit leave out (see the module docstring).
AUDIT_LEVELS = frozenset({"error", "warning"})


def escape_data(value: str) -> str:
    """A message for a workflow command: ``%``, CR, LF escaped."""
    return value.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(value: str) -> str:
    """A property value (``file``, ``title``…): also ``:`` and ``,``."""
    return escape_data(value).replace(":", "%3A").replace(",", "%2C")


def command(level: str, message: str, *, file: str, line: int | None, title: str) -> str:
    """One workflow command line (without its newline)."""
    props = [f"file={escape_property(file)}"]
    if line is not None:
        props.append(f"line={line}")
    props.append(f"title={escape_property(title)}")
    return f"::{level} {','.join(props)}::{escape_data(message)}"


def _place(result: Mapping[str, Any]) -> tuple[str, int | None]:
    physical = result["locations"][0]["physicalLocation"]
    uri: str = physical["artifactLocation"]["uri"]
    line = physical.get("region", {}).get("startLine")
    return uri.removeprefix("file://"), line if isinstance(line, int) else None


def from_sarif(document: Mapping[str, Any], levels: Iterable[str] | None = None) -> list[str]:
    """The annotations of a SARIF document's results (of ``levels`` only, when given;
    suppressed results never): one per (file, line, level), errors first."""
    wanted = frozenset(levels) if levels is not None else None
    run = document["runs"][0]
    by_place: dict[tuple[str, str, int | None], list[Mapping[str, Any]]] = {}
    for result in run.get("results", ()):
        level = result.get("level", "warning")
        if result.get("suppressions") or (wanted is not None and level not in wanted):
            continue
        by_place.setdefault((level, *_place(result)), []).append(result)
    order = list(COMMANDS)
    lines = []
    for (level, file, line), results in sorted(
        by_place.items(), key=lambda kv: (order.index(kv[0][0]), kv[0][1], kv[0][2] or 0)
    ):
        rules = list(dict.fromkeys(str(r["ruleId"]) for r in results))
        title = f"provenance: {', '.join(rules)}"
        if len(results) > 1:
            title = f"provenance: {len(results)} findings ({', '.join(rules)})"
        texts = [str(r["message"]["text"]) for r in results[:MAX_PER_LINE]]
        left = len(results) - MAX_PER_LINE
        if left > 0:
            texts.append(f"… {left} more on this line (provenance audit --format sarif)")
        lines.append(command(COMMANDS[level], "\n".join(texts), file=file, line=line, title=title))
    return lines


def _write(ledger: str, lines: list[str], out: TextIO) -> None:
    head = [f"::notice title=provenance::{escape_data(terminal(ledger))}"] if ledger else []
    out.write("".join(f"{line}\n" for line in (*head, *lines)))


def write(report: AuditReport, out: TextIO) -> None:
    """The annotations of an audit (module docstring)."""
    from provenance.report.sarif import build

    _write(report.ledger_line(), from_sarif(build(report), AUDIT_LEVELS), out)


def write_pr(
    head: AuditReport | None, base: AuditReport | None, diff: DiffReport, out: TextIO
) -> None:
    """The annotations of a PR audit (module docstring); without a head audit (no recipe
    of the head loads) only its invalid recipes, each ``<rev>:<path>`` on its path."""
    ledger = diff.ledger_source.describe() if diff.ledger_source is not None else ""
    if head is not None:
        from provenance.report.sarif import build_pr

        _write(ledger, from_sarif(build_pr(head, base, diff)), out)
        return
    revision = f"{diff.head}:"
    _write(
        ledger,
        [
            command(
                "error",
                terminal(error.located()),
                file=error.path.removeprefix(revision),
                line=error.line,
                title="provenance: invalid-recipe",
            )
            for error in diff.errors
        ],
        out,
    )
