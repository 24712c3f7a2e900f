"""Verdicts and reason codes on hand-made recipes and evidence."""

from __future__ import annotations

from collections.abc import Sequence

from audit_builders import (
    NVFP4,
    StandInNormaliser,
    entry,
    graph_of,
    pd_combo,
    pd_record,
    single_combo,
    single_record,
)
from hypothesis import given, settings
from hypothesis import strategies as st

from provenance.audit.keys import evidence_roles, joined_roles
from provenance.audit.normaliser import PolicyNormaliser
from provenance.audit.pipeline import RecipeInput, audit
from provenance.audit.verdicts import AuditReport, VerdictEntry
from provenance.model.combination import RenderResult, Selection
from provenance.model.flags import FlagSet
from provenance.model.ledger import LedgerEntry
from provenance.model.reasons import ReasonCode, VerdictKind
from provenance.model.record import EvidenceRecord, RoleTopology

RECIPE = "MiniMaxAI/MiniMax-M3"
INDEXER = "--kv-cache-dtype fp8 --attention_config.indexer_kv_dtype fp8 --tensor-parallel-size 8"


def run(
    combos: Sequence[tuple[Selection, RenderResult]],
    records: Sequence[EvidenceRecord],
    entries: Sequence[LedgerEntry],
    **kwargs: object,
) -> AuditReport:
    normaliser = StandInNormaliser()
    graph = graph_of(records, entries, normaliser)
    recipe = RecipeInput(ref=RECIPE, combinations=list(combos), **kwargs)  # type: ignore[arg-type]
    return audit([recipe], graph, normaliser)


def only(report: AuditReport) -> VerdictEntry:
    assert len(report.verdicts) == 1, report.verdicts
    return report.verdicts[0]


def codes(verdict: VerdictEntry) -> list[str]:
    return [str(r.code) for r in verdict.reasons]


def test_exact_validated_match_is_recommended() -> None:
    record = single_record(
        "fp4-b200-vllm",
        "kv_cache_dtype=fp8 attention_config.indexer_kv_dtype=fp8 tensor_parallel_size=8",
    )
    report = run([single_combo(INDEXER + " --port 8000")], [record], [entry(2120, record)])
    verdict = only(report)
    assert verdict.verdict is VerdictKind.RECOMMENDED
    assert verdict.reasons == ()
    assert [e.record for e in verdict.evidence] == [record.id]
    assert verdict.evidence[0].prs == ("SemiAnalysisAI/InferenceX#2120",)
    assert report.summary.recommended == 1 and report.summary.guide_only == 0


def test_flag_provenance_names_records_and_prs() -> None:
    indexer = single_record(
        "fp4-b200-vllm",
        "kv_cache_dtype=fp8 attention_config.indexer_kv_dtype=fp8 tensor_parallel_size=8",
    )
    mtp = single_record(
        "fp4-b200-vllm-mtp", "speculative_config.method=eagle3 tensor_parallel_size=8"
    )
    report = run([single_combo(INDEXER)], [indexer, mtp], [entry(2120, indexer, mtp)])
    role = only(report).roles[0]
    by_key = {f.key: f for f in role.flags}
    assert [e.record for e in by_key["attention_config.indexer_kv_dtype"].evidence] == [indexer.id]
    assert by_key["attention_config.indexer_kv_dtype"].evidence[0].prs == (
        "SemiAnalysisAI/InferenceX#2120",
    )
    assert {e.record for e in by_key["tensor_parallel_size"].evidence} == {indexer.id, mtp.id}
    assert by_key["tensor_parallel_size"].cls == "major"
    assert "port" not in by_key


def test_empty_evidence_is_never_recommended() -> None:
    report = run([single_combo(INDEXER)], [], [])
    verdict = only(report)
    assert verdict.verdict is VerdictKind.GUIDE_ONLY
    assert codes(verdict) == ["no-evidence"]
    assert verdict.nearest == ()


def test_empty_cross_product_recommends_nothing() -> None:
    report = run([], [], [])
    assert report.summary.combinations == 0
    assert report.summary.recommended == 0
    assert report.verdicts == ()


def test_combination_without_commands_is_guide_only() -> None:
    record = single_record("k", "tensor_parallel_size=8")
    selection, _ = single_combo(INDEXER)
    empty = RenderResult(deploy_type="single_node", model_id=NVFP4, roles=())
    verdict = only(run([(selection, empty)], [record], [entry(1, record)]))
    assert verdict.verdict is VerdictKind.GUIDE_ONLY
    assert codes(verdict) == ["no-evidence"]


def test_scope_hardware_and_checkpoint() -> None:
    record = single_record(
        "k",
        "kv_cache_dtype=fp8 attention_config.indexer_kv_dtype=fp8 tensor_parallel_size=8",
        hardware="b300",
    )
    verdict = only(run([single_combo(INDEXER, hardware="b200")], [record], [entry(1, record)]))
    assert codes(verdict) == ["no-evidence"]
    other = single_record(
        "k",
        "kv_cache_dtype=fp8 attention_config.indexer_kv_dtype=fp8 tensor_parallel_size=8",
        checkpoint="MiniMaxAI/MiniMax-M3-MXFP8",
    )
    verdict = only(run([single_combo(INDEXER)], [other], [entry(1, other)]))
    assert codes(verdict) == ["no-evidence"]


def test_checkpoint_alias_is_in_scope() -> None:
    record = single_record(
        "k",
        "kv_cache_dtype=fp8 attention_config.indexer_kv_dtype=fp8 tensor_parallel_size=8",
        checkpoint="minimax-m3-nvfp4",
    )
    verdict = only(run([single_combo(INDEXER)], [record], [entry(1, record)]))
    assert verdict.verdict is VerdictKind.RECOMMENDED


def test_flag_unevidenced() -> None:
    record = single_record("k", "kv_cache_dtype=fp8 tensor_parallel_size=8")
    verdict = only(run([single_combo(INDEXER)], [record], [entry(1, record)]))
    assert verdict.verdict is VerdictKind.GUIDE_ONLY
    reason = verdict.reasons[0]
    assert reason.code is ReasonCode.FLAG_UNEVIDENCED
    assert (reason.role, reason.flag, reason.recipe_value) == (
        "serve",
        "attention_config.indexer_kv_dtype",
        "fp8",
    )
    assert verdict.nearest[0].record == record.id
    assert verdict.nearest[0].only_recipe == {"attention_config.indexer_kv_dtype": "fp8"}


def test_value_mismatch_prefill_speculative_tokens() -> None:
    evidence = pd_record(
        "fp4-b300-dynamo-vllm-mtp",
        "tensor_parallel_size=8 speculative_config.method=eagle3 "
        "speculative_config.num_speculative_tokens=1",
        "tensor_parallel_size=8 speculative_config.method=eagle3 "
        "speculative_config.num_speculative_tokens=3",
    )
    spec = '{"method":"eagle3","num_speculative_tokens":3}'
    combo = pd_combo(
        f"--tensor-parallel-size 8 --speculative-config {spec}",
        f"--tensor-parallel-size 8 --speculative-config {spec}",
    )
    verdict = only(run([combo], [evidence], [entry(2314, evidence)]))
    assert verdict.verdict is VerdictKind.GUIDE_ONLY
    mismatch = [r for r in verdict.reasons if r.code is ReasonCode.VALUE_MISMATCH]
    assert len(mismatch) == 1
    reason = mismatch[0]
    assert reason.role == "prefill"
    assert reason.flag == "speculative_config.num_speculative_tokens"
    assert (reason.recipe_value, reason.evidence_value) == ("3", "1")
    assert reason.sources == ("SemiAnalysisAI/InferenceX#2314",)
    nearest = {n.role: n for n in verdict.nearest}
    assert nearest["prefill"].changed == {"speculative_config.num_speculative_tokens": ("3", "1")}
    assert nearest["decode"].distance == 0


def test_missing_flag() -> None:
    record = single_record(
        "k",
        "kv_cache_dtype=fp8 attention_config.indexer_kv_dtype=fp8 tensor_parallel_size=8 "
        "block_size=128",
    )
    verdict = only(run([single_combo(INDEXER)], [record], [entry(7, record)]))
    assert codes(verdict) == ["missing-flag"]
    reason = verdict.reasons[0]
    assert (reason.flag, reason.evidence_value, reason.recipe_value) == ("block_size", "128", None)
    assert reason.sources == ("SemiAnalysisAI/InferenceX#7",)


def test_never_jointly_observed() -> None:
    indexer = single_record(
        "fp4-b200-vllm", "attention_config.indexer_kv_dtype=fp8 tensor_parallel_size=8"
    )
    mtp = single_record(
        "fp4-b200-vllm-mtp", "speculative_config.method=eagle3 tensor_parallel_size=8"
    )
    combo = single_combo(
        "--attention_config.indexer_kv_dtype fp8 --tensor-parallel-size 8 "
        '--speculative-config {"method":"eagle3"}'
    )
    verdict = only(run([combo], [indexer, mtp], [entry(2120, indexer, mtp)]))
    assert verdict.verdict is VerdictKind.GUIDE_ONLY
    assert ReasonCode.NEVER_JOINTLY_OBSERVED in [r.code for r in verdict.reasons]
    assert ReasonCode.FLAG_UNEVIDENCED not in [r.code for r in verdict.reasons]
    never = next(r for r in verdict.reasons if r.code is ReasonCode.NEVER_JOINTLY_OBSERVED)
    assert never.sources == ("SemiAnalysisAI/InferenceX#2120",)


def test_pd_roles_from_different_records_are_not_recommended() -> None:
    prefill_flags = "tensor_parallel_size=8 attention_config.backend=FLASHINFER"
    decode_flags = "tensor_parallel_size=8 attention_config.backend=FLASHINFER"
    one = pd_record("a", prefill_flags, "tensor_parallel_size=4")
    two = pd_record("b", "tensor_parallel_size=4", decode_flags)
    combo = pd_combo(
        "--tensor-parallel-size 8 --attention_config.backend FLASHINFER --port 8001",
        "--tensor-parallel-size 8 --attention_config.backend FLASHINFER --port 8002",
    )
    verdict = only(run([combo], [one, two], [entry(1, one), entry(2, two)]))
    assert verdict.verdict is VerdictKind.GUIDE_ONLY
    assert codes(verdict) == ["never-jointly-observed"]
    assert verdict.reasons[0].role is None
    assert verdict.reasons[0].sources == (
        "SemiAnalysisAI/InferenceX#1",
        "SemiAnalysisAI/InferenceX#2",
    )


def test_pd_same_record_is_recommended() -> None:
    record = pd_record("a", "tensor_parallel_size=8", "tensor_parallel_size=8")
    combo = pd_combo("--tensor-parallel-size 8 --port 8001", "--tensor-parallel-size 8 --port 8002")
    verdict = only(run([combo], [record], [entry(2310, record)]))
    assert verdict.verdict is VerdictKind.RECOMMENDED


def test_topology_mismatch_when_flags_match_but_shape_differs() -> None:
    record = pd_record(
        "two-decoders",
        "tensor_parallel_size=8",
        "tensor_parallel_size=8",
        decode_topology=RoleTopology(workers=2, gpus_per_worker=8, tp=8),
    )
    combo = pd_combo("--tensor-parallel-size 8", "--tensor-parallel-size 8")
    verdict = only(run([combo], [record], [entry(5, record)]))
    # Two decode workers is a shape no recipe edit can express (a pd_cluster role has one
    # worker), so the combination is also unreachable, which is named first.
    assert codes(verdict) == ["unreachable", "topology-mismatch"]
    reason = verdict.reasons[1]
    assert reason.role == "decode"
    assert reason.recipe_value == "1 worker"
    assert reason.evidence_value == "2 workers"


def test_topology_mismatch_across_deployment_kinds() -> None:
    single = single_record("single", "tensor_parallel_size=8", hardware="b300")
    verdict = only(run([_multi_node_combo()], [single], [entry(2, single)]))
    assert verdict.verdict is VerdictKind.GUIDE_ONLY
    assert "no-evidence" in codes(verdict)
    mismatch = next(r for r in verdict.reasons if r.code is ReasonCode.TOPOLOGY_MISMATCH)
    assert (mismatch.recipe_value, mismatch.evidence_value) == (
        "aggregated_multi_node",
        "single_node",
    )


def _multi_node_combo() -> tuple[Selection, RenderResult]:
    from provenance.model.combination import RoleCommand

    selection = Selection(variant="nvfp4", hardware="b300", strategy="multi_node_tp", node_count=2)
    result = RenderResult(
        deploy_type="multi_node",
        model_id=NVFP4,
        roles=(
            RoleCommand(
                role="head",
                node_rank=0,
                argv=("vllm", "serve", NVFP4, "--tensor-parallel-size", "8"),
            ),
            RoleCommand(
                role="worker",
                node_rank=1,
                argv=("vllm", "serve", NVFP4, "--tensor-parallel-size", "8"),
            ),
        ),
    )
    return selection, result


def test_evidence_not_validated() -> None:
    record = single_record(
        "k", "kv_cache_dtype=fp8 attention_config.indexer_kv_dtype=fp8 tensor_parallel_size=8"
    )
    verdict = only(run([single_combo(INDEXER)], [record], [entry(1, record, green=False)]))
    assert codes(verdict) == ["evidence-not-validated"]
    assert verdict.reasons[0].sources == ("SemiAnalysisAI/InferenceX#1",)
    unlinked = only(run([single_combo(INDEXER)], [record], []))
    assert codes(unlinked) == ["evidence-not-validated"]


def test_partial_record_is_not_enough() -> None:
    record = single_record(
        "k",
        "kv_cache_dtype=fp8 attention_config.indexer_kv_dtype=fp8 tensor_parallel_size=8",
        partial=True,
    )
    verdict = only(run([single_combo(INDEXER)], [record], [entry(1, record)]))
    assert codes(verdict) == ["evidence-not-validated"]
    assert "partial" in verdict.reasons[0].detail


def test_identical_outcomes_are_grouped() -> None:
    record = single_record(
        "k", "kv_cache_dtype=fp8 attention_config.indexer_kv_dtype=fp8 tensor_parallel_size=8"
    )
    combos = [
        single_combo(INDEXER),
        single_combo(INDEXER + " --tool-call-parser minimax_m3", features=("tool_calling",)),
        single_combo(INDEXER + " --block-size 128"),
    ]
    report = run(combos, [record], [entry(1, record)])
    assert len(report.verdicts) == 2
    grouped = report.verdicts[0]
    assert grouped.combinations == 2 and len(list(grouped.iter_selections())) == 2
    assert report.verdicts[1].combinations == 1
    assert report.summary.combinations == 3
    assert report.summary.recommended == 2
    assert report.summary.by_reason == {"flag-unevidenced": 1}
    assert sum(len(list(v.iter_selections())) for v in report.verdicts) == 3


def test_each_distinct_command_is_normalised_once() -> None:
    normaliser = StandInNormaliser()
    record = single_record("k", "tensor_parallel_size=8")
    graph = graph_of([record], [entry(1, record)], normaliser)
    combos = [single_combo("--tensor-parallel-size 8") for _ in range(50)]
    combos += [single_combo("--tensor-parallel-size 8 --block-size 128") for _ in range(50)]
    report = audit([RecipeInput(ref=RECIPE, combinations=combos)], graph, normaliser)
    assert normaliser.calls == 2
    assert report.summary.combinations == 100


def test_claims_for_verified_hardware_without_recommended() -> None:
    record = single_record("k", "tensor_parallel_size=8")
    combos = [
        single_combo("--tensor-parallel-size 8"),
        single_combo("--tensor-parallel-size 8", hardware="b300"),
    ]
    report = run(combos, [record], [entry(1, record)], verified_hardware=("b200", "b300", "h200"))
    claimed = {c.hardware: c for c in report.claims}
    assert set(claimed) == {"b300", "h200"}
    assert claimed["b300"].recommended == 0
    assert "no audited combination on it is recommended" in claimed["b300"].detail
    assert "was audited" in claimed["h200"].detail
    filtered = run(
        combos, [record], [entry(1, record)], verified_hardware=("h200",), hardware_filter=("b200",)
    )
    assert filtered.claims == ()
    narrowed = run(combos, [record], [entry(1, record)], verified_hardware=("h200",), filtered=True)
    assert narrowed.claims == ()


def test_reverse_reproduced_not_expressible_not_reproduced() -> None:
    reproduced = pd_record("p-tp8", "tensor_parallel_size=8", "tensor_parallel_size=8")
    four_p_one_d = pd_record(
        "fp4-b300-dynamo-vllm-8k1k-tp1-tep4",
        "tensor_parallel_size=1",
        "tensor_parallel_size=4 enable_expert_parallel=true",
        prefill_topology=RoleTopology(workers=4, gpus_per_worker=1, tp=1),
        decode_topology=RoleTopology(
            workers=1, gpus_per_worker=4, tp=4, ep=4, expert_parallel=True
        ),
        colocated=True,
    )
    unreproduced = pd_record(
        "p-tp8-fi",
        "tensor_parallel_size=8 attention_config.backend=FLASHINFER",
        "tensor_parallel_size=8",
    )
    other_hw = pd_record("gb", "tensor_parallel_size=4", "tensor_parallel_size=4", hardware="gb200")
    records = [reproduced, four_p_one_d, unreproduced, other_hw]
    combos = [
        pd_combo("--tensor-parallel-size 8", "--tensor-parallel-size 8"),
        pd_combo("--tensor-parallel-size 8", "--tensor-parallel-size 8", features=("reasoning",)),
    ]
    report = run(combos, records, [entry(2310, *records)], gpus_per_node={"b300": 8})
    by_key = {r.config_key: r for r in report.reverse}
    assert set(by_key) == {"p-tp8", "fp4-b300-dynamo-vllm-8k1k-tp1-tep4", "p-tp8-fi"}
    assert by_key["p-tp8"].status == "reproduced"
    assert by_key["p-tp8"].combinations == 2
    assert by_key["p-tp8"].example is not None
    expr = by_key["fp4-b300-dynamo-vllm-8k1k-tp1-tep4"]
    assert expr.status == "not-expressible"
    assert "share a node" in expr.why
    assert "4 prefill workers" in expr.why
    assert by_key["p-tp8-fi"].status == "not-reproduced"
    assert "attention_config.backend" in by_key["p-tp8-fi"].why


def test_report_round_trips_through_json() -> None:
    record = single_record("k", "tensor_parallel_size=8")
    report = run(
        [single_combo("--tensor-parallel-size 8 --block-size 128")], [record], [entry(1, record)]
    )
    data = report.model_dump_json(by_alias=True)
    again = AuditReport.model_validate_json(data)
    assert again == report
    assert '"schema":"provenance.audit/v3"' in data
    assert '"class":"major"' in data


_RECIPE_ROLES = ("serve", "head", "worker", "prefill", "decode", "instance", "other")


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.tuples(st.sampled_from(_RECIPE_ROLES), st.sampled_from(range(4))), max_size=5),
    st.lists(st.tuples(st.sampled_from(_RECIPE_ROLES), st.sampled_from(range(4))), max_size=5),
)
def test_joined_roles_is_the_roles_of_the_joined_processes(
    first: list[tuple[str, int]], second: list[tuple[str, int]]
) -> None:
    """A PD pair's key is built from each pool's evidence roles: whenever ``joined_roles``
    answers, it is what the processes of both pools together give."""
    flagsets = [FlagSet({"tensor_parallel_size": str(n)}) for n in range(4)]
    a = tuple((role, flagsets[n]) for role, n in first)
    b = tuple((role, flagsets[n]) for role, n in second)
    context = PolicyNormaliser().in_context
    joined = joined_roles(evidence_roles(a, context), evidence_roles(b, context))
    if joined is not None:
        assert joined == evidence_roles(a + b, context)
    if a and b and {r for r, _ in first} == {"prefill"} and {r for r, _ in second} == {"decode"}:
        assert joined is not None  # the PD case always joins
