"""The report formats behind one small interface: ``write(report, out)``.

Each format lives in its own module and is imported only when used.
"""

from __future__ import annotations

import importlib
from typing import Protocol, TextIO

from provenance.audit.verdicts import AuditReport
from provenance.errors import UsageError

#: format name -> module implementing ``write(report: AuditReport, out: TextIO) -> None``.
FORMATS: dict[str, str] = {
    "text": "provenance.report.text",
    "json": "provenance.report.json_report",
    "markdown": "provenance.report.markdown",
    "sarif": "provenance.report.sarif",
    "html": "provenance.report.html",
}


class Writer(Protocol):
    def __call__(self, report: AuditReport, out: TextIO) -> None: ...


def writer(name: str) -> Writer:
    module = FORMATS.get(name)
    if module is None:
        raise UsageError(f"unknown report format {name!r} (choose from {', '.join(FORMATS)})")
    found: Writer = importlib.import_module(module).write
    return found


def write_report(report: AuditReport, name: str, out: TextIO) -> None:
    writer(name)(report, out)
