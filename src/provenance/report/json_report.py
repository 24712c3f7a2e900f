"""JSON report (``provenance.audit/v1``): the :class:`AuditReport` model, streamed entry by entry.

The output is exactly ``AuditReport.model_dump_json(by_alias=True)`` (same keys,
same values) but written one verdict entry at a time, so a 70,000-combination
audit never builds one giant string. ``provenance schema audit`` prints the
JSON Schema of this document.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TextIO

from pydantic import BaseModel

from provenance.audit.model import AuditReport

_STREAMED = ("verdicts", "reverse", "claims")


def _write_array(out: TextIO, items: Sequence[BaseModel]) -> None:
    out.write("[")
    for index, item in enumerate(items):
        if index:
            out.write(",")
        out.write(item.model_dump_json(by_alias=True))
    out.write("]")


def write(report: AuditReport, out: TextIO) -> None:
    head = report.model_dump(mode="json", by_alias=True, exclude=set(_STREAMED))
    out.write("{")
    for key, value in head.items():
        out.write(json.dumps(key))
        out.write(":")
        out.write(json.dumps(value, ensure_ascii=False, separators=(",", ":")))
        out.write(",")
    for index, name in enumerate(_STREAMED):
        if index:
            out.write(",")
        out.write(json.dumps(name))
        out.write(":")
        _write_array(out, getattr(report, name))
    out.write("}\n")
