"""Which PRs changed what was served, and which were reverted (``review.served``)."""

from __future__ import annotations

import datetime as dt

from audit_builders import entry, single_record

from provenance.audit.normaliser import PolicyNormaliser
from provenance.model.ledger import LedgerEntry, RevertLink
from provenance.review.served import standings

IX = "SemiAnalysisAI/InferenceX"
MAJOR = PolicyNormaliser().role_major


def _on(number: int, day: int, *records: object, **facts: object) -> LedgerEntry:
    made = entry(number, *records)  # type: ignore[arg-type]
    return made.model_copy(update={"merged_at": dt.date(2026, 5, day), **facts})


def test_a_later_pr_serving_the_same_deployment_changed_nothing_served() -> None:
    first = single_record("k", "tensor_parallel_size=8 kv_cache_dtype=fp8")
    # Another workload point and a tuning knob: the same deployment served again.
    again = single_record("k", "tensor_parallel_size=8 kv_cache_dtype=fp8 max_num_seqs=8", conc=8)
    other = single_record("k", "tensor_parallel_size=8 kv_cache_dtype=auto")
    records = {r.id: r for r in (first, again, other)}
    entries = [_on(1, 1, first), _on(2, 2, again), _on(3, 3, other)]
    cited = {f"{IX}#{n}": {r.id} for n, r in ((1, first), (2, again), (3, other))}
    found = standings(entries, records, cited, MAJOR)
    assert found[f"{IX}#1"].changed_served and found[f"{IX}#1"].backs
    assert found[f"{IX}#2"].changed_served is False and not found[f"{IX}#2"].backs
    assert found[f"{IX}#2"].served_before == (f"{IX}#1",)
    assert found[f"{IX}#3"].changed_served


def test_a_reverted_pr_backs_nothing_and_first_served_nothing() -> None:
    record = single_record("k", "tensor_parallel_size=8")
    again = single_record("k", "tensor_parallel_size=8", conc=8)
    revert = RevertLink(pr=2, commit="b" * 40, source=f"git:{'b' * 40}")
    entries = [_on(1, 1, record, reverted_by=revert), _on(3, 3, again)]
    cited = {f"{IX}#1": {record.id}, f"{IX}#3": {again.id}}
    found = standings(entries, {r.id: r for r in (record, again)}, cited, MAJOR)
    assert found[f"{IX}#1"].reverted_by == f"{IX}#2" and not found[f"{IX}#1"].backs
    # The reverted PR is no predecessor: #3 is the first to serve it.
    assert found[f"{IX}#3"].changed_served and found[f"{IX}#3"].backs
