"""The audit compares by the policy in context: aliases, context rules, compared defaults.

``Policy.effective`` is exercised alone in ``tests/flags/test_policy_context.py``;
here each rule, each alias and the ``--tensor-parallel-size 1`` case go through the
audit's own path (the production normaliser, the evidence index, combination keys,
the judge) on hand-made commands and on the embedded MiniMax-M3 recipe and evidence.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from functools import cache
from pathlib import Path

import pytest
from audit_builders import NVFP4, entry, pd_record, single_record

from provenance.audit.index import EvidenceIndex
from provenance.audit.judge import Judge, Outcome
from provenance.audit.keys import combination_key
from provenance.audit.normaliser import PolicyNormaliser
from provenance.audit.pipeline import AuditFilters, ResolvedInputs, audit, load_graph, recipe_inputs
from provenance.audit.verdicts import AuditReport, Reason, VerdictEntry
from provenance.model.reasons import ReasonCode, VerdictKind
from provenance.model.record import EvidenceRecord
from provenance.normalise.aliases import DEFAULT_ALIASES
from provenance.normalise.policy import Policy

REPO_ROOT = Path(__file__).resolve().parents[2]
DECODE_KEY = "attention_config.minimax_m3_msa_decode_backend"
DECODE_ENV = "env:VLLM_MINIMAX_M3_MSA_DECODE_BACKEND"
NORMALISER = PolicyNormaliser()


def judged(
    records: Sequence[EvidenceRecord],
    roles: Iterable[tuple[str, str, dict[str, str]]],
    *,
    deploy_type: str = "single_node",
    hardware: str = "b200",
    normaliser: PolicyNormaliser = NORMALISER,
) -> Outcome:
    """The judge's outcome for one deployment: ``(role, args, env)`` per process."""
    graph = EvidenceIndex.build(records, [entry(100, *records)], normaliser.role_major)
    raw = tuple(
        (role, normaliser.command_major(("vllm", "serve", NVFP4, *args.split()), env))
        for role, args, env in roles
    )
    key = combination_key(NVFP4, hardware, deploy_type, None, raw, context=normaliser.in_context)
    return Judge(graph, normaliser.classify).outcome(key)


def about(outcome: Outcome, flag: str) -> list[Reason]:
    return [r for r in outcome.reasons if r.flag == flag]


# --- context rules, hand-made -------------------------------------------------------

ENCODER_ARGS = "--mm-encoder-tp-mode data --mm-encoder-attn-backend FLASHINFER"


def test_encoder_flags_need_no_evidence_under_language_model_only() -> None:
    record = single_record("lmo", "tensor_parallel_size=8 language_model_only=true")
    outcome = judged([record], [("serve", f"-tp 8 --language-model-only {ENCODER_ARGS}", {})])
    assert outcome.verdict is VerdictKind.RECOMMENDED
    assert outcome.reasons == ()


def test_encoder_flags_count_when_the_encoder_is_loaded() -> None:
    record = single_record("tp8", "tensor_parallel_size=8")
    outcome = judged([record], [("serve", f"-tp 8 {ENCODER_ARGS}", {})])
    assert outcome.verdict is VerdictKind.GUIDE_ONLY
    assert {r.code for r in about(outcome, "mm_encoder_tp_mode")} == {ReasonCode.FLAG_UNEVIDENCED}


def test_encoder_flags_of_evidence_under_language_model_only_are_dropped_too() -> None:
    """Evidence side: a record's inert encoder flags do not make the recipe miss them."""
    record = single_record(
        "lmo-enc", "tensor_parallel_size=8 language_model_only=true mm_encoder_tp_mode=data"
    )
    outcome = judged([record], [("serve", "-tp 8 --language-model-only", {})])
    assert outcome.verdict is VerdictKind.RECOMMENDED


def _pd(prefill: str, decode: str) -> EvidenceRecord:
    return pd_record("pd", prefill, decode)


def test_decode_kernel_is_inert_on_prefill_on_both_sides() -> None:
    record = _pd("tensor_parallel_size=8", f"tensor_parallel_size=8 {DECODE_KEY}=cutlass")
    backend = '--attention-config {"minimax_m3_msa_decode_backend":"cutlass"}'
    outcome = judged(
        [record],
        [("prefill", f"-tp 8 {backend}", {}), ("decode", f"-tp 8 {backend}", {})],
        deploy_type="pd_cluster",
        hardware="b300",
    )
    assert outcome.verdict is VerdictKind.RECOMMENDED, outcome.reasons
    # the recipe setting it on prefill is no reason, and evidence setting it on prefill
    # (not on decode) is no missing flag there
    record = _pd(f"tensor_parallel_size=8 {DECODE_KEY}=cutlass", "tensor_parallel_size=8")
    outcome = judged(
        [record],
        [("prefill", "-tp 8", {}), ("decode", "-tp 8", {})],
        deploy_type="pd_cluster",
        hardware="b300",
    )
    assert outcome.verdict is VerdictKind.RECOMMENDED, outcome.reasons


def test_decode_kernel_counts_on_decode() -> None:
    record = _pd("tensor_parallel_size=8", "tensor_parallel_size=8")
    backend = '--attention-config {"minimax_m3_msa_decode_backend":"cutlass"}'
    outcome = judged(
        [record],
        [("prefill", "-tp 8", {}), ("decode", f"-tp 8 {backend}", {})],
        deploy_type="pd_cluster",
        hardware="b300",
    )
    assert [(r.code, r.role) for r in about(outcome, DECODE_KEY)] == [
        (ReasonCode.FLAG_UNEVIDENCED, "decode")
    ]


def test_a_disabled_context_rule_makes_the_flag_count_again() -> None:
    normaliser = PolicyNormaliser(Policy(context=()))
    record = single_record("lmo", "tensor_parallel_size=8 language_model_only=true")
    outcome = judged(
        [record],
        [("serve", f"-tp 8 --language-model-only {ENCODER_ARGS}", {})],
        normaliser=normaliser,
    )
    assert outcome.verdict is VerdictKind.GUIDE_ONLY
    assert about(outcome, "mm_encoder_tp_mode")


# --- aliases, hand-made ---------------------------------------------------------------


def test_decode_backend_env_and_config_key_are_one_flag() -> None:
    """The recipe writes the config key, the evidence the env variable (and vice versa)."""
    backend = '--attention-config {"minimax_m3_msa_decode_backend":"cutlass"}'
    by_env = _pd("tensor_parallel_size=8", f"tensor_parallel_size=8 {DECODE_ENV}=cutlass")
    outcome = judged(
        [by_env],
        [("prefill", "-tp 8", {}), ("decode", f"-tp 8 {backend}", {})],
        deploy_type="pd_cluster",
        hardware="b300",
    )
    assert outcome.verdict is VerdictKind.RECOMMENDED, outcome.reasons
    by_key = _pd("tensor_parallel_size=8", f"tensor_parallel_size=8 {DECODE_KEY}=cutlass")
    env = {"VLLM_MINIMAX_M3_MSA_DECODE_BACKEND": "cutlass"}
    outcome = judged(
        [by_key],
        [("prefill", "-tp 8", {}), ("decode", "-tp 8", env)],
        deploy_type="pd_cluster",
        hardware="b300",
    )
    assert outcome.verdict is VerdictKind.RECOMMENDED, outcome.reasons


def test_without_the_alias_the_two_spellings_differ() -> None:
    aliases = [a for a in DEFAULT_ALIASES if a.canonical != DECODE_KEY]
    normaliser = PolicyNormaliser(Policy(aliases=aliases))
    by_env = _pd("tensor_parallel_size=8", f"tensor_parallel_size=8 {DECODE_ENV}=cutlass")
    backend = '--attention-config {"minimax_m3_msa_decode_backend":"cutlass"}'
    outcome = judged(
        [by_env],
        [("prefill", "-tp 8", {}), ("decode", f"-tp 8 {backend}", {})],
        deploy_type="pd_cluster",
        hardware="b300",
        normaliser=normaliser,
    )
    assert outcome.verdict is VerdictKind.GUIDE_ONLY
    assert {r.flag for r in outcome.reasons} >= {DECODE_KEY, DECODE_ENV}


def test_attention_backend_shorthand_and_config_key_are_one_flag() -> None:
    record = single_record("ab", "tensor_parallel_size=8 attention_config.backend=TRITON_ATTN")
    outcome = judged([record], [("serve", "-tp 8 --attention-backend TRITON_ATTN", {})])
    assert outcome.verdict is VerdictKind.RECOMMENDED, outcome.reasons
    record = single_record("ab2", "tensor_parallel_size=8 attention_backend=TRITON_ATTN")
    outcome = judged([record], [("serve", "-tp 8 --attention-config.backend TRITON_ATTN", {})])
    assert outcome.verdict is VerdictKind.RECOMMENDED, outcome.reasons


def test_two_spellings_with_different_values_stay_apart() -> None:
    record = single_record("ab", "tensor_parallel_size=8 attention_config.backend=TRITON_ATTN")
    outcome = judged(
        [record],
        [
            (
                "serve",
                "-tp 8 --attention-backend FLASH_ATTN --attention-config.backend TRITON_ATTN",
                {},
            )
        ],
    )
    assert outcome.verdict is VerdictKind.GUIDE_ONLY
    assert [r.flag for r in outcome.reasons] == ["attention_backend"]


# --- compared defaults: TP=1, hand-made -------------------------------------------------


@pytest.mark.parametrize("args", ["--tensor-parallel-size 1", "-tp 1", ""])
def test_tp1_against_evidence_at_8_is_a_value_mismatch(args: str) -> None:
    records = [single_record(f"tp{n}", f"tensor_parallel_size={n}") for n in (2, 4, 8)]
    outcome = judged(records, [("serve", args, {})])
    reasons = about(outcome, "tensor_parallel_size")
    assert [(r.code, r.recipe_value) for r in reasons] == [(ReasonCode.VALUE_MISMATCH, "1")]
    assert not [r for r in outcome.reasons if r.code is ReasonCode.MISSING_FLAG]
    (nearest,) = outcome.nearest  # ties between 2, 4 and 8 go to the lowest record id
    value = reasons[0].evidence_value
    assert value in {"2", "4", "8"}
    assert nearest.changed == {"tensor_parallel_size": ("1", value)}
    assert nearest.only_evidence == {}


def test_tp8_against_evidence_at_the_default_is_a_value_mismatch() -> None:
    record = single_record("tp1", "language_model_only=true")
    outcome = judged([record], [("serve", "-tp 8 --language-model-only", {})])
    (reason,) = about(outcome, "tensor_parallel_size")
    assert (reason.code, reason.recipe_value, reason.evidence_value) == (
        ReasonCode.VALUE_MISMATCH,
        "8",
        "1",
    )
    assert outcome.nearest[0].changed == {"tensor_parallel_size": ("8", "1")}


def test_tp1_matches_evidence_at_the_default() -> None:
    record = single_record("tp1", "language_model_only=true")
    outcome = judged([record], [("serve", "--tensor-parallel-size 1 --language-model-only", {})])
    assert outcome.verdict is VerdictKind.RECOMMENDED


def test_evidence_values_include_the_default_of_records_that_leave_it_unset() -> None:
    records = [
        single_record("tp1", "language_model_only=true"),
        single_record("tp4", "tensor_parallel_size=4"),
    ]
    outcome = judged(records, [("serve", "-tp 8 --language-model-only", {})])
    (reason,) = about(outcome, "tensor_parallel_size")
    assert reason.code is ReasonCode.VALUE_MISMATCH
    assert reason.evidence_value == "1, 4"


# --- real MiniMax-M3 cells: embedded recipe, ledger and evidence ------------------------


@cache
def minimax(policy: Policy | None = None) -> AuditReport:
    normaliser = PolicyNormaliser(policy)
    graph, declarations = load_graph(REPO_ROOT / "ledger", REPO_ROOT / "evidence", normaliser)
    resolved = ResolvedInputs(
        recipes=("MiniMaxAI/MiniMax-M3",),
        recipes_root=REPO_ROOT / "recipes",
        ledger=REPO_ROOT / "ledger",
        evidence=REPO_ROOT / "evidence",
    )
    return audit(recipe_inputs(resolved, AuditFilters()), graph, normaliser, declarations)


def combinations_with(report: AuditReport, test: object) -> int:
    assert callable(test)
    return sum(e.combinations for e in report.verdicts if any(test(r, e) for r in e.reasons))


def _pd_entries(report: AuditReport) -> list[VerdictEntry]:
    return [e for e in report.verdicts if {r.role for r in e.roles} == {"prefill", "decode"}]


@pytest.mark.slow
def test_minimax_prefill_never_needs_evidence_for_the_decode_kernel() -> None:
    report = minimax()
    assert _pd_entries(report)
    for entry_ in _pd_entries(report):
        prefill = [r for r in entry_.roles if r.role == "prefill"]
        assert all(f.key != DECODE_KEY for role in prefill for f in role.flags)
        assert not [r for r in entry_.reasons if r.role == "prefill" and r.flag == DECODE_KEY]
    without = minimax(Policy(context=()))
    assert combinations_with(without, lambda r, e: r.role == "prefill" and r.flag == DECODE_KEY) > 0


@pytest.mark.slow
def test_minimax_decode_backend_alias_removes_the_spurious_reason() -> None:
    """Without the alias, PD evidence writing the env variable shows as a flag the recipe
    lacks although it writes the config key: 1,152 combinations (issue 18)."""
    spurious = lambda r, e: r.flag == DECODE_ENV  # noqa: E731
    assert combinations_with(minimax(), spurious) == 0
    aliases = tuple(a for a in DEFAULT_ALIASES if a.canonical != DECODE_KEY)
    assert combinations_with(minimax(Policy(aliases=aliases)), spurious) == 1152


@pytest.mark.slow
def test_minimax_tp1_reads_as_a_value_mismatch() -> None:
    report = minimax()
    tp1 = [
        r
        for e in report.verdicts
        for r in e.reasons
        if r.flag == "tensor_parallel_size" and r.recipe_value == "1"
    ]
    assert tp1
    assert {r.code for r in tp1} == {ReasonCode.VALUE_MISMATCH}
    assert {r.evidence_value for r in tp1} <= {"2", "4", "8", "2, 4", "2, 8", "4, 8", "2, 4, 8"}
    assert not [
        r
        for e in report.verdicts
        for r in e.reasons
        if r.flag == "tensor_parallel_size" and r.code is ReasonCode.MISSING_FLAG
    ]


@pytest.mark.slow
def test_minimax_language_model_only_cells_need_no_encoder_evidence() -> None:
    report = minimax()
    checked = 0
    for entry_ in report.verdicts:
        for role in entry_.roles:
            keys = {f.key for f in role.flags}
            if "language_model_only" in keys:
                checked += 1
                assert not {k for k in keys if k.startswith("mm_encoder_")}
    assert checked
