"""JSON report (``provenance.audit/v2``): the :class:`AuditReport` model, streamed entry by entry.

The output is ``AuditReport.model_dump_json(by_alias=True)`` with one difference:
a flag's ``evidence`` is a list of indexes into the report's ``records`` table
(the same few records back the same flag in thousands of verdict entries). It is
written one verdict entry at a time, so a large audit never builds one giant
string. ``provenance schema audit`` prints the JSON Schema of this document.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, TextIO

from pydantic import BaseModel

from provenance.audit.model import RECORD_INDEX, AuditReport

_STREAMED = ("records", "verdicts", "reverse", "claims")


def _write_array(out: TextIO, items: Sequence[BaseModel], context: dict[str, Any]) -> None:
    out.write("[")
    for index, item in enumerate(items):
        if index:
            out.write(",")
        out.write(item.model_dump_json(by_alias=True, context=context))
    out.write("]")


def write(report: AuditReport, out: TextIO) -> None:
    context = {RECORD_INDEX: report.record_index()}
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
        _write_array(out, getattr(report, name), context)
    out.write("}\n")
