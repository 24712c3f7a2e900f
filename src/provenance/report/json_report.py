"""JSON report (``provenance.audit/v3``): the :class:`AuditReport` model, streamed entry by entry.

The output is ``AuditReport.model_dump_json(by_alias=True)`` (with the report's
record index as context: a flag's ``evidence`` is a list of indexes into the
report's ``records`` table) and a newline, byte for byte;
``tests/report/test_json_report.py`` checks it against ``model_dump_json`` on
generated reports and on the embedded audit. ``provenance schema audit`` prints the
JSON Schema of this document.

Why not just ``model_dump_json`` (a constant-factor optimisation, kept behind
:func:`write` alone): measured on the MiniMax-M3 report (9,000 verdict entries,
37.8 MB of JSON, this 2-core machine), ``model_dump_json`` takes 0.46–0.60 s and
builds the whole document as one string; :func:`write` takes 0.16–0.20 s and
writes a few entries at a time. Without it the console audit (0.7 s) would lose
about 0.35 s and fall under the 5× bound of docs/performance.md. The saving comes
from sharing: verdict entries share their parts (the roles of one judgement, the
same reasons and nearest evidence, the same feature choices and PD pools in their
selection sets), and :class:`_EntryWriter` serialises each shared part once
(with pydantic, so the text is exactly the model's) and joins the pieces in the
model's field order.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Hashable, Sequence
from operator import attrgetter
from typing import Any, TextIO

from pydantic import TypeAdapter
from pydantic_core import to_json

from provenance.audit.verdicts import (
    RECORD_INDEX,
    AuditReport,
    RoleFlags,
    SelectionSet,
    VerdictEntry,
)

#: The fields of a selection set written before ``features`` and ``pd`` (its last two).
_SET_HEAD = tuple(
    f.name for f in dataclasses.fields(SelectionSet) if f.name not in ("features", "pd")
)
_SET_ADAPTER = TypeAdapter(SelectionSet)
_set_head_key = attrgetter(*_SET_HEAD)
_REPORT_FIELDS = tuple(AuditReport.model_fields)
#: The report's fields written after ``verdicts`` (the rest, but for them, comes before).
_AFTER_VERDICTS = frozenset(_REPORT_FIELDS[_REPORT_FIELDS.index("verdicts") + 1 :])
#: Verdict entries joined into one ``write``: about 40 kB of text, fewer calls than one
#: per entry, without building the whole 38 MB document.
_ENTRIES_PER_WRITE = 8


class _EntryWriter:
    """Serialises the verdict entries of one report, each shared part once.

    Models and tuples of them are cached by ``id``: on the MiniMax-M3 report, hashing
    every part by value takes 0.54 s (and the feature choices, which hold dicts, do not
    hash at all), looking up their ids 0.03 s. The writer lives only inside
    :func:`_write_verdicts`, and
    the report being written keeps every part alive meanwhile, so no id is reused
    while the writer exists. Scalars
    (and the scalar head of a selection set) are cached by value. The hot path
    (:meth:`entry`, :meth:`_selection_set`) looks the cache up inline and calls the
    serialising methods only on a miss: ~9,000 entries of ~20 parts each.
    """

    def __init__(self, context: dict[str, Any]) -> None:
        self.context = context
        #: id of a model, or of a tuple of models -> its JSON text
        self._json: dict[int, str] = {}
        #: a scalar, or the head values of a selection set -> its JSON text
        self._texts: dict[Hashable, str] = {}
        #: id of a model -> ``[its JSON text]`` (most arrays hold one part: pools, reasons)
        self._singles: dict[int, str] = {}
        #: the serialiser of each kind of part
        self._adapters: dict[type, TypeAdapter[Any]] = {}

    # Cache misses: serialise (pydantic) and remember ----------------------------------

    def _value(self, value: str | None) -> str:
        found = self._texts[value] = to_json(value).decode()
        return found

    def _part(self, part: Any) -> str:
        adapter = self._adapters.get(type(part))
        if adapter is None:
            adapter = self._adapters[type(part)] = TypeAdapter(type(part))
        found = self._json[id(part)] = adapter.dump_json(
            part, by_alias=True, context=self.context
        ).decode()
        return found

    def _single(self, part: Any) -> str:
        found = self._singles[id(part)] = f"[{self._json.get(id(part)) or self._part(part)}]"
        return found

    def _shared_array(self, parts: Sequence[Any]) -> str:
        """``[part,...]``, remembered by the sequence's ``id`` (shared by many entries)."""
        found = self._json[id(parts)] = self._array(parts)
        return found

    def _role(self, role: RoleFlags) -> str:
        """A role, its flags serialised one by one (the same flags recur in many roles)."""
        found = self._json[id(role)] = (
            f'{{"role":{to_json(role.role).decode()},"node_rank":{to_json(role.node_rank).decode()},'
            f'"flags":{self._array(role.flags)}}}'
        )
        return found

    def _set_head(self, selection_set: SelectionSet) -> str:
        """``{"variant":…,…,"omni_task":…``: every field before ``features``, by value."""
        text = _SET_ADAPTER.dump_json(selection_set, by_alias=True, include=set(_SET_HEAD)).decode()
        found = self._texts[_set_head_key(selection_set)] = text[:-1]
        return found

    # Hot path -------------------------------------------------------------------------

    def _array(self, parts: Sequence[Any]) -> str:
        """``[part,...]``, each part serialised once; the array itself is seldom shared."""
        if len(parts) == 1:
            (only,) = parts
            return self._singles.get(id(only)) or self._single(only)
        cached, part = self._json.get, self._part
        return f"[{','.join([cached(id(p)) or part(p) for p in parts])}]"

    def _selection_set(self, selection_set: SelectionSet) -> str:
        features, pd = selection_set.features, selection_set.pd
        head = self._texts.get(_set_head_key(selection_set)) or self._set_head(selection_set)
        choices = self._json.get(id(features)) or self._shared_array(features)
        if pd is None:
            return f'{head},"features":{choices},"pd":null}}'
        return (
            f'{head},"features":{choices},'
            f'"pd":{{"prefill":{self._array(pd.prefill)},"decode":{self._array(pd.decode)}}}}}'
        )

    def entry(self, entry: VerdictEntry) -> str:
        cached, texts = self._json.get, self._texts.get
        recipe, verdict, declared_by = entry.recipe, entry.verdict, entry.declared_by
        nearest, overall, evidence = entry.nearest, entry.nearest_overall, entry.evidence
        role, selections = self._role, entry.selections
        sets = (  # mostly one
            self._selection_set(selections[0])
            if len(selections) == 1
            else ",".join(map(self._selection_set, selections))
        )
        return (
            f'{{"recipe":{texts(recipe) or self._value(recipe)},'
            f'"combinations":{entry.combinations},"selections":[{sets}],'
            f'"verdict":{texts(verdict) or self._value(verdict)},'
            f'"roles":[{",".join([cached(id(r)) or role(r) for r in entry.roles])}],'
            f'"reasons":{self._array(entry.reasons)},'
            f'"nearest":{self._array(nearest) if nearest else "[]"},'
            f'"nearest_overall":{self._array(overall) if overall else "[]"},'
            f'"evidence":{self._array(evidence) if evidence else "[]"},'
            f'"declared_by":{texts(declared_by) or self._value(declared_by)}}}'
        )


def _write_verdicts(verdicts: Sequence[VerdictEntry], context: dict[str, Any], out: TextIO) -> None:
    """``[entry,...]``, a few entries per ``write`` (the writer's caches end here)."""
    writer = _EntryWriter(context)
    out.write("[")
    for start in range(0, len(verdicts), _ENTRIES_PER_WRITE):
        chunk = ",".join(map(writer.entry, verdicts[start : start + _ENTRIES_PER_WRITE]))
        out.write(f",{chunk}" if start else chunk)
    out.write("]")


def write(report: AuditReport, out: TextIO) -> None:
    """Write ``report.model_dump_json(by_alias=True, context=…)`` and a newline to ``out``,
    the verdict entries streamed by :class:`_EntryWriter` (see the module's reason)."""
    context = {RECORD_INDEX: report.record_index()}
    # the fields before the verdicts (``schema`` first: never empty), then those after
    head = report.model_dump_json(
        by_alias=True, context=context, exclude={"verdicts", *_AFTER_VERDICTS}
    )
    out.write(f'{head[:-1]},"verdicts":')
    _write_verdicts(report.verdicts, context, out)
    tail = report.model_dump_json(by_alias=True, context=context, include=set(_AFTER_VERDICTS))
    out.write(f",{tail[1:]}\n")
