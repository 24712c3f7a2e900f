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
    "github": "provenance.report.annotations",
}


#: Formats that cut long sections (each cut says what it left out); ``show_all`` lifts the cuts.
CUTTING = frozenset({"text", "markdown"})


class Writer(Protocol):
    def __call__(self, report: AuditReport, out: TextIO) -> None: ...


class CuttingWriter(Protocol):
    def __call__(self, report: AuditReport, out: TextIO, *, show_all: bool = False) -> None: ...


def writer(name: str) -> Writer:
    module = FORMATS.get(name)
    if module is None:
        raise UsageError(f"unknown report format {name!r} (choose from {', '.join(FORMATS)})")
    found: Writer = importlib.import_module(module).write
    return found


def write_report(report: AuditReport, name: str, out: TextIO, *, show_all: bool = False) -> None:
    """Write ``report`` in format ``name``; ``show_all`` lifts the cuts of :data:`CUTTING`."""
    if show_all and name in CUTTING:
        full: CuttingWriter = importlib.import_module(FORMATS[name]).write
        full(report, out, show_all=True)
        return
    writer(name)(report, out)
