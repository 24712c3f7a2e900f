"""Each reason computed against one evidence record names it, and agrees with it.

On the embedded MiniMax-M3 recipe and evidence, mxfp8 · b200 · single_node_tp lacks
``--kv-cache-dtype fp8``: the ``missing-flag`` reason comes from the nearest point that
sets every recipe flag, which is not the nearest point overall (an unvalidated record
without the flag). The reason names its record, that record sets the flag to the value
the reason cites, the nearest validated point shown first sets it too, and the text
names the record.
"""

from __future__ import annotations

from provenance.audit.pipeline import AuditFilters, AuditInputs, run_audit
from provenance.audit.verdicts import AuditReport
from provenance.model.reasons import ReasonCode
from provenance.report.grouping import reason_label, short_record
from provenance.store.evidence import EvidenceStore
from provenance.store.paths import default_dirs

RECIPE = "MiniMaxAI/MiniMax-M3"
FILTERS = AuditFilters(
    variants=("mxfp8",), hardware=("b200",), strategies=("single_node_tp",), features="none"
)


def _report() -> AuditReport:
    return run_audit(AuditInputs(recipes=(RECIPE,)), FILTERS)


def test_missing_flag_names_the_record_that_sets_it() -> None:
    report = _report()
    (entry,) = report.verdicts
    (reason,) = [r for r in entry.reasons if r.flag == "kv_cache_dtype"]
    assert reason.code is ReasonCode.MISSING_FLAG and reason.evidence_value == "fp8"
    assert reason.record is not None
    record = EvidenceStore(default_dirs().evidence).get(reason.record)
    assert record.roles["serve"]["kv_cache_dtype"] == "fp8"
    cited = {r.record: r for r in report.records}[reason.record]
    assert tuple(cited.prs) == reason.sources
    # the nearest point overall is another record, without the flag: the reason's own
    # record is what the reader must compare against; the nearest *validated* point,
    # which the outputs show first, sets the flag as the reason says
    assert entry.nearest_overall
    assert all(n.record != reason.record for n in entry.nearest_overall)
    assert all("kv_cache_dtype" not in n.only_evidence for n in entry.nearest_overall)
    assert all(n.validated for n in entry.nearest)
    assert all(n.only_evidence.get("kv_cache_dtype") == "fp8" for n in entry.nearest)


def test_reasons_about_every_point_name_no_record() -> None:
    for entry in _report().verdicts:
        for reason in entry.reasons:
            one_record = reason.code in (ReasonCode.MISSING_FLAG, ReasonCode.NEVER_JOINTLY_OBSERVED)
            assert (reason.record is not None) == one_record, reason


def test_the_label_names_the_record_and_its_prs() -> None:
    (entry,) = _report().verdicts
    (reason,) = [r for r in entry.reasons if r.flag == "kv_cache_dtype"]
    assert reason.record is not None
    label = reason_label(reason, with_sources=True)
    assert f"[record {short_record(reason.record)} {reason.sources[0]}" in label
    assert short_record(reason.record) == reason.record[: len("sha256:") + 12]
