"""The report's summary (counts by verdict and reason) and its table of cited records."""

from __future__ import annotations

import operator
from collections import Counter
from collections.abc import Sequence

from provenance.audit.index import EvidenceIndex
from provenance.audit.verdicts import AuditSummary, RecordSummary, VerdictEntry
from provenance.model.combination import construct
from provenance.model.reasons import VerdictKind

_RECORD_OF = operator.attrgetter("record")


def referenced_records(
    verdicts: Sequence[VerdictEntry], graph: EvidenceIndex
) -> tuple[RecordSummary, ...]:
    """Every record a flag of ``verdicts`` cites, sorted by id (the JSON ``records`` table)."""
    ids: set[str] = set()
    # roles and evidence tuples are shared by many entries: each is read once
    roles = {id(role): role for entry in verdicts for role in entry.roles}
    evidence = {id(f.evidence): f.evidence for role in roles.values() for f in role.flags}
    for refs in evidence.values():
        ids.update(map(_RECORD_OF, refs))
    out = []
    for record_id in sorted(ids):
        indexed = graph.records.get(record_id)
        out.append(
            construct(
                RecordSummary,
                {
                    "record": record_id,
                    "config_key": indexed.config_key if indexed is not None else "",
                    "prs": indexed.prs if indexed is not None else (),
                },
            )
        )
    return tuple(out)


def summarise(verdicts: Sequence[VerdictEntry], count: int) -> AuditSummary:
    """Combinations by verdict, declared, and by reason code (each code once per entry)."""
    recommended = guide_only = declared = 0
    by_reason: Counter[str] = Counter()
    recommended_kind = VerdictKind.RECOMMENDED
    for entry in verdicts:
        size = entry.combinations
        if entry.verdict is recommended_kind:
            recommended += size
            continue
        guide_only += size
        if entry.declared_by:
            declared += size
        counted: set[str] = set()  # each code once per entry
        for reason in entry.reasons:
            code = reason.code
            if code not in counted:
                counted.add(code)
                by_reason[code] += size
    return AuditSummary(
        combinations=count,
        recommended=recommended,
        guide_only=guide_only,
        declared=declared,
        undeclared_guide_only=guide_only - declared,
        by_reason={str(code): size for code, size in sorted(by_reason.items())},
    )
