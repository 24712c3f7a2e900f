"""The reverse direction on several graphs in turn: each audit's reverse entries are those of
its own graph's records on the audited hardware, whatever graph was read before."""

from __future__ import annotations

from collections.abc import Sequence

from audit_builders import StandInNormaliser, entry, graph_of, pd_combo, pd_record

from provenance.audit.pipeline import RecipeInput, audit
from provenance.audit.verdicts import ReverseEntry
from provenance.model.record import EvidenceRecord

RECIPE = "MiniMaxAI/MiniMax-M3"
TP8 = "tensor_parallel_size=8"
FI = "tensor_parallel_size=8 attention_config.backend=FLASHINFER"

#: records on the two audited hardware interleaved with one on hardware not audited
RECORDS = [
    pd_record("b300-tp8", TP8, TP8),
    pd_record("h200-fi", FI, TP8, hardware="h200"),
    pd_record("gb200-tp8", TP8, TP8, hardware="gb200"),
    pd_record("b300-fi", FI, TP8),
    pd_record("h200-tp8", TP8, TP8, hardware="h200"),
    pd_record("b300-fi-decode", TP8, FI),
]
COMBOS = [
    pd_combo("--tensor-parallel-size 8", "--tensor-parallel-size 8"),
    pd_combo("--tensor-parallel-size 8", "--tensor-parallel-size 8", hardware="h200"),
]


def reverse_of(records: Sequence[EvidenceRecord]) -> tuple[ReverseEntry, ...]:
    normaliser = StandInNormaliser()
    graph = graph_of(records, [entry(7, *records)], normaliser)
    report = audit([RecipeInput(ref=RECIPE, combinations=list(COMBOS))], graph, normaliser)
    # one entry per record on an audited hardware
    audited = {i.record.config_key for i in graph.records.values() if i.record.hardware != "gb200"}
    assert sorted(e.config_key for e in report.reverse) == sorted(audited)
    return tuple(report.reverse)


def test_reverse_entries_follow_each_graph() -> None:
    full = reverse_of(RECORDS)
    assert {e.config_key for e in full} == {
        "b300-tp8",
        "h200-fi",
        "b300-fi",
        "h200-tp8",
        "b300-fi-decode",
    }
    by_key = {e.config_key: e.status for e in full}
    assert by_key["b300-tp8"] == "reproduced"
    assert by_key["h200-tp8"] == "reproduced"
    assert by_key["b300-fi"] == "not-reproduced"
    # a record's entry depends on the record and the audit only: a smaller graph read
    # next gives the same entries for its records, and the full graph again the same
    subset = [RECORDS[4], RECORDS[0], RECORDS[2]]
    assert {e.config_key for e in reverse_of(subset)} == {"h200-tp8", "b300-tp8"}
    assert reverse_of(subset) == tuple(e for e in full if e.config_key in {"b300-tp8", "h200-tp8"})
    assert reverse_of(RECORDS) == full
    assert reverse_of(RECORDS[:1]) == tuple(e for e in full if e.config_key == "b300-tp8")


def test_on_hardware_keeps_record_order_across_hardware() -> None:
    records = [*RECORDS, pd_record("B300-upper", TP8, TP8, hardware="B300")]
    graph = graph_of(records, [entry(7, *records)], StandInNormaliser())
    # oracle: a plain scan of the records in their order, hardware compared lowercased
    for wanted in ({"b300"}, {"h200", "b300"}, {"gb200"}, {"mi355x"}, set()):
        expected = [
            (i.record.hardware.lower(), i.config_key)
            for i in graph.records.values()
            if i.record.hardware.lower() in wanted
        ]
        for _ in range(2):  # the grouping built on the first call serves the second
            found = [(hw, i.config_key) for hw, i in graph.on_hardware(sorted(wanted))]
            assert found == expected
    assert [i.config_key for _, i in graph.on_hardware(["b300", "b300"])].count("b300-tp8") == 1
