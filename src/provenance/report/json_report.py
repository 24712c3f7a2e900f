"""JSON report (``provenance.audit/v2``): the :class:`AuditReport` model, streamed entry by entry.

The output is ``AuditReport.model_dump_json(by_alias=True)`` with one difference:
a flag's ``evidence`` is a list of indexes into the report's ``records`` table
(the same few records back the same flag in thousands of verdict entries). It is
written one verdict entry at a time, so a large audit never builds one giant
string. ``provenance schema audit`` prints the JSON Schema of this document.

Verdict entries share their parts: the flags of one role judged once, the same
reasons and nearest evidence. :class:`_EntryWriter` serialises each shared part
once (pydantic, so the text is exactly the model's) and joins the pieces in the
model's field order; ``tests/report/test_audit_reports.py`` checks the result
against ``model_dump_json``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, TextIO

from pydantic import BaseModel, TypeAdapter

from provenance.audit.model import (
    RECORD_INDEX,
    AuditReport,
    EvidenceRef,
    FlagProvenance,
    SelectionSet,
    VerdictEntry,
)

_STREAMED = ("records", "verdicts", "reverse", "claims")
_SETS = TypeAdapter(tuple[SelectionSet, ...])
_REFS = TypeAdapter(tuple[EvidenceRef, ...])


def _text(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


class _EntryWriter:
    """Serialises the verdict entries of one report, each shared part once.

    Parts are cached by ``id``: the report being written keeps every one of them alive,
    so no id is reused while the writer exists.
    """

    def __init__(self, context: dict[str, Any]) -> None:
        self.context = context
        self._json: dict[int, str] = {}
        self._texts: dict[object, str] = {}

    def _value(self, value: str | int | None) -> str:
        found = self._texts.get(value)
        if found is None:
            found = self._texts[value] = _text(value)
        return found

    def _part_json(self, part: BaseModel) -> str:
        found = self._json.get(id(part))
        if found is None:
            found = part.model_dump_json(by_alias=True, context=self.context)
            self._json[id(part)] = found
        return found

    def _flags_json(self, flags: tuple[FlagProvenance, ...]) -> str:
        found = self._json.get(id(flags))
        if found is None:
            found = self._json[id(flags)] = f"[{','.join(self._part_json(f) for f in flags)}]"
        return found

    def entry(self, entry: VerdictEntry) -> str:
        value = self._value
        roles = ",".join(
            f'{{"role":{value(r.role)},"node_rank":{value(r.node_rank)},'
            f'"flags":{self._flags_json(r.flags)}}}'
            for r in entry.roles
        )
        reasons = ",".join(self._part_json(r) for r in entry.reasons)
        nearest = ",".join(self._part_json(n) for n in entry.nearest)
        evidence = _REFS.dump_json(entry.evidence).decode() if entry.evidence else "[]"
        return (
            f'{{"recipe":{value(entry.recipe)},"combinations":{entry.combinations},'
            f'"selections":{_SETS.dump_json(entry.selections).decode()},'
            f'"verdict":{value(str(entry.verdict))},"roles":[{roles}],'
            f'"reasons":[{reasons}],"nearest":[{nearest}],'
            f'"evidence":{evidence},"declared_by":{value(entry.declared_by)}}}'
        )


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
        out.write(_text(value))
        out.write(",")
    for index, name in enumerate(_STREAMED):
        if index:
            out.write(",")
        out.write(json.dumps(name))
        out.write(":")
        if name == "verdicts":
            writer = _EntryWriter(context)
            out.write("[")
            for position, entry in enumerate(report.verdicts):
                if position:
                    out.write(",")
                out.write(writer.entry(entry))
            out.write("]")
        else:
            _write_array(out, getattr(report, name), context)
    out.write("}\n")
