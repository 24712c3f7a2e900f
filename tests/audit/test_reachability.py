"""``unreachable``: a guide-only combination whose in-scope evidence has no shape the recipe
schema can express, on hand-made pd_cluster evidence."""

from __future__ import annotations

from audit_builders import NVFP4, StandInNormaliser, entry, graph_of, pd_record

from provenance.audit.judge import Judge
from provenance.audit.keys import CombinationKey
from provenance.model.flags import FlagSet
from provenance.model.reasons import ReasonCode
from provenance.model.record import RoleTopology


def _key(prefill: str, decode: str) -> CombinationKey:
    def flags(text: str) -> FlagSet:
        return FlagSet(dict(item.split("=") for item in text.split()))

    return CombinationKey(
        model_id=NVFP4,
        hardware="b300",
        kind="disaggregated",
        node_count=None,
        roles=(("prefill", (flags(prefill),)), ("decode", (flags(decode),))),
    )


def _judge(*records: object) -> Judge:
    normaliser = StandInNormaliser()
    graph = graph_of(records, [entry(100, *records)], normaliser)  # type: ignore[arg-type]
    return Judge(graph, normaliser.classify, {"b300": 8})


ONE_GPU = RoleTopology(gpus_per_worker=1, tp=1)


def test_every_point_on_a_fraction_of_a_node_is_unreachable() -> None:
    judge = _judge(
        pd_record("p1", "a=1", "b=1", prefill_topology=ONE_GPU),
        pd_record("p2", "a=2", "b=1", prefill_topology=ONE_GPU, colocated=True),
    )
    outcome = judge.outcome(_key("a=3", "b=1"))
    first = outcome.reasons[0]
    assert first.code is ReasonCode.UNREACHABLE
    assert first.role is None
    assert "none of the 2 in-scope disaggregated evidence point(s)" in first.detail
    assert "every point: a prefill engine on 1 GPU(s); a pool uses 1-16 whole nodes" in (
        first.detail
    )
    assert "1 of 2: prefill and decode share a node" in first.detail
    assert first.detail.endswith("its flag reasons are secondary: no flag edit reaches evidence")
    # the flag reasons are kept, after it
    assert ReasonCode.VALUE_MISMATCH in {r.code for r in outcome.reasons[1:]}


def test_one_whole_node_point_makes_the_scope_reachable() -> None:
    judge = _judge(
        pd_record("p1", "a=1", "b=1", prefill_topology=ONE_GPU),
        pd_record("p2", "a=2", "b=1"),  # a whole node per role
    )
    codes = {r.code for r in judge.outcome(_key("a=3", "b=1")).reasons}
    assert ReasonCode.UNREACHABLE not in codes
    assert ReasonCode.VALUE_MISMATCH in codes


def test_the_taxonomy_node_size_decides() -> None:
    """4 GPUs a prefill engine: a whole node of a 4-GPU machine, half of an 8-GPU one."""
    four = RoleTopology(gpus_per_worker=4, tp=4)
    record = pd_record("p1", "a=1", "b=1", prefill_topology=four)
    normaliser = StandInNormaliser()
    graph = graph_of([record], [entry(100, record)], normaliser)
    key = _key("a=3", "b=1")
    eight = Judge(graph, normaliser.classify, {"b300": 8}).outcome(key)
    quad = Judge(graph, normaliser.classify, {"b300": 4}).outcome(key)
    assert eight.reasons[0].code is ReasonCode.UNREACHABLE
    assert ReasonCode.UNREACHABLE not in {r.code for r in quad.reasons}
