"""The evidence index, and its graph export: networkx nodes/edges, JSON/GraphML/DOT."""

from __future__ import annotations

import io
import json
from pathlib import Path

import networkx as nx
from audit_builders import (
    NVFP4,
    StandInNormaliser,
    entry,
    flags,
    graph_of,
    pd_record,
    single_record,
)

from provenance.audit.index import EvidenceIndex
from provenance.model.flags import FlagSet
from provenance.model.record import EvidenceRecord
from provenance.model.scope import Scope
from provenance.report.graph_export import (
    Combination,
    evidence_graph,
    to_dot,
    to_node_link_json,
    write_graphml,
)


def build() -> tuple[EvidenceIndex, EvidenceRecord, EvidenceRecord]:
    normaliser = StandInNormaliser()
    single = single_record("fp4-b200-vllm", "tensor_parallel_size=8 port=8000 block_size=128")
    pd = pd_record("fp4-b300-dynamo-vllm", "tensor_parallel_size=8", "tensor_parallel_size=8")
    graph = graph_of([single, pd], [entry(2120, single), entry(2310, pd, green=False)], normaliser)
    return graph, single, pd


def test_exact_index_and_scope() -> None:
    graph, single, pd = build()
    scope = Scope("minimax-m3-nvfp4", "b200", "single_node")
    hits = graph.exact(scope, "serve", flags("tensor_parallel_size=8 block_size=128"))
    assert [h.id for h in hits] == [single.id]
    assert graph.exact(scope, "serve", flags("tensor_parallel_size=8")) == []
    assert [r.id for r in graph.in_scope(scope, NVFP4)] == [single.id]
    assert graph.in_scope(scope, "MiniMaxAI/MiniMax-M3-MXFP8") == []
    indexed = graph.records[single.id]
    assert indexed.validated and indexed.prs == ("SemiAnalysisAI/InferenceX#2120",)
    assert "port" not in indexed.major["serve"]
    assert not graph.records[pd.id].validated


def test_networkx_nodes_and_edges() -> None:
    graph, single, pd = build()
    combination = Combination(
        "MiniMaxAI/MiniMax-M3",
        "nvfp4 · b200 · single_node_tp",
        3,
        "recommended",
        {"serve": flags("tensor_parallel_size=8 block_size=128")},
    )
    g = evidence_graph(graph, [combination])
    kinds = {data["kind"] for _, data in g.nodes(data=True)}
    assert kinds == {"flag", "evidence", "config", "pr", "sweep", "commit", "combination"}
    edge_kinds = {data["kind"] for _, _, data in g.edges(data=True)}
    assert {"sets", "introduced-by", "validated-by", "renders", "at-commit", "config"} <= edge_kinds
    sets = [
        (u, v, d["role"])
        for u, v, d in g.edges(data=True)
        if d["kind"] == "sets" and u == f"evidence:{pd.id}"
    ]
    assert {r for _, _, r in sets} == {"prefill", "decode"}
    assert g.has_edge(f"evidence:{single.id}", "pr:SemiAnalysisAI/InferenceX#2120")
    assert g.has_edge("pr:SemiAnalysisAI/InferenceX#2120", "sweep:3120/1")
    renders = [(u, v) for u, v, d in g.edges(data=True) if d["kind"] == "renders"]
    assert ("combination:MiniMaxAI/MiniMax-M3#0", "flag:tensor_parallel_size=8") in renders


def test_exports_round_trip() -> None:
    graph, _, _ = build()
    g = evidence_graph(graph)
    data = json.loads(json.dumps(to_node_link_json(g)))
    again = nx.node_link_graph(data, edges="edges")
    assert again.number_of_nodes() == g.number_of_nodes()
    assert again.number_of_edges() == g.number_of_edges()
    buffer = io.BytesIO()
    write_graphml(g, buffer)
    buffer.seek(0)
    parsed = nx.read_graphml(buffer)
    assert parsed.number_of_nodes() == g.number_of_nodes()


def test_dot_escapes_values() -> None:
    graph, _, _ = build()
    evil = Combination("R", 'evil" label\n]; x -> y', 1, "guide-only", {})
    dot = to_dot(evidence_graph(graph, [evil]))
    assert dot.startswith("digraph provenance {")
    assert dot.rstrip().endswith("}")
    assert 'evil\\" label\\n]; x -> y' in dot
    assert '"x" -> "y"' not in dot


def test_build_reduces_each_distinct_flagset_once_with_the_same_result() -> None:
    """The build memoises ``major`` per distinct FlagSet; the index must be what calling
    it for every role gives, on the embedded evidence (5,427 records)."""
    from provenance.audit.index import EvidenceIndex
    from provenance.audit.normaliser import PolicyNormaliser
    from provenance.store.evidence import EvidenceStore

    root = Path(__file__).resolve().parents[2] / "evidence"
    records = EvidenceStore(root).load_all()
    normaliser = PolicyNormaliser()
    calls: list[object] = []

    def counted(flag_set: FlagSet, role: str) -> FlagSet:
        calls.append((flag_set, role))
        return normaliser.role_major(flag_set, role)

    graph = EvidenceIndex.build(records.values(), [], counted)
    # a record with conditional values is matched on each alternative (docs/evidence.md)
    distinct = {
        (flag_set, role)
        for record in records.values()
        for roles in [record.roles, *record.alternatives()]
        for role, flag_set in roles.items()
    }
    assert any(record.conditional for record in records.values())
    assert len(calls) == len(distinct) < sum(len(r.roles) for r in records.values())
    for record_id, record in records.items():
        indexed = graph.records[record_id]
        expected = {
            role: normaliser.role_major(f, role) for role, f in sorted(record.roles.items())
        }
        assert indexed.major == expected
        for role, major in expected.items():
            assert indexed in graph.exact(indexed.scope, role, major)
