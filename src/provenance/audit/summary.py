"""The report's summary (counts by verdict and reason) and its table of cited records."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Sequence

from provenance.audit.index import EvidenceIndex
from provenance.audit.tally import Tally
from provenance.audit.verdicts import (
    AuditSummary,
    RecordSummary,
    UnreachableGroup,
    VerdictEntry,
)
from provenance.model.reasons import ReasonCode, VerdictKind


def cited_records(tally: Tally) -> set[str]:
    """The ids of every record a flag of the tally's outcomes cites.

    A flag cites the records that set it in its role's index (a scope without evidence
    cites none); outcomes share judgements and judgements share indexes, so each
    distinct (index, flag) is read once."""
    judgements = {j: None for outcome in tally.outcomes() for j in outcome.judgements}
    flags = {(j.index, item): None for j in judgements for item in j.flags.items()}
    ids: set[str] = set()
    for index, item in flags:
        ids.update(ref.record for ref in index.setters.get(item, ()))
    return ids


def record_table(ids: Iterable[str], graph: EvidenceIndex) -> tuple[RecordSummary, ...]:
    """The records ``ids``, sorted by id (the JSON ``records`` table flags point into)."""
    out = []
    for record_id in sorted(ids):
        indexed = graph.records.get(record_id)
        out.append(
            RecordSummary(
                record=record_id,
                config_key=indexed.config_key if indexed is not None else "",
                prs=indexed.prs if indexed is not None else (),
            )
        )
    return tuple(out)


#: Prefix of an environment variable's flag key.
ENV_PREFIX = "env:"


def summarise(
    verdicts: Sequence[VerdictEntry],
    count: int,
    is_classified: Callable[[str], bool] | None = None,
) -> AuditSummary:
    """Combinations by verdict, declared, and by reason code (each code once per entry).

    With ``is_classified`` (the policy's), also the environment variables no policy rule
    names (major only by the catch-all) that a guide-only reason names, with the
    combinations each decided: the names the policy table should learn. The combinations
    with reason ``unreachable`` are listed by recipe, variant, hardware, strategy and why.
    """
    recommended = guide_only = declared = 0
    by_reason: Counter[str] = Counter()
    unclassified: Counter[str] = Counter()
    #: (recipe, variant, hardware, strategy, why) -> unreachable combinations
    unreachable: Counter[tuple[str, str, str, str | None, str]] = Counter()
    unreachable_code = ReasonCode.UNREACHABLE
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
            if code is unreachable_code:
                for selection_set in entry.selections:
                    key = (
                        entry.recipe,
                        selection_set.variant,
                        selection_set.hardware,
                        selection_set.strategy,
                        reason.detail,
                    )
                    unreachable[key] += selection_set.count
        if is_classified is not None:
            names = {
                r.flag
                for r in entry.reasons
                if r.flag and r.flag.startswith(ENV_PREFIX) and not is_classified(r.flag)
            }
            for name in names:
                unclassified[name] += size
    return AuditSummary(
        combinations=count,
        recommended=recommended,
        guide_only=guide_only,
        declared=declared,
        undeclared_guide_only=guide_only - declared,
        by_reason={str(code): size for code, size in sorted(by_reason.items())},
        unclassified_env=dict(sorted(unclassified.items(), key=lambda kv: (-kv[1], kv[0]))),
        unreachable=tuple(
            UnreachableGroup(
                recipe=recipe,
                variant=variant,
                hardware=hardware,
                strategy=strategy,
                combinations=combinations,
                why=why,
            )
            for (recipe, variant, hardware, strategy, why), combinations in unreachable.items()
        ),
    )
