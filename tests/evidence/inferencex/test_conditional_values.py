"""Conditional values end to end: ingest of a launcher with a firmware probe, the record's
``conditional`` field (round trip, ids of records without it unchanged) and the audit.

The launcher is InferenceX's ``gptoss_fp4_mi325x.sh`` form: ``HSA_NO_SCRATCH_RECLAIM=1``
is exported only when ``rocm-smi`` reports a MEC firmware older than 177.
"""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest
from audit_builders import StandInNormaliser, entry, single_record
from inferencex_fixtures import TOY_SCRIPT, RepoBuilder, toy_base_files

from provenance.audit.index import EvidenceIndex
from provenance.audit.judge import Judge
from provenance.audit.keys import combination_key
from provenance.evidence.inferencex.ingest import extract
from provenance.model.flags import FlagSet
from provenance.model.reasons import ReasonCode, VerdictKind
from provenance.model.record import (
    ConditionalValue,
    EvidenceRecord,
    RuntimeCondition,
    split_conditional,
)

KEY = "env:HSA_NO_SCRATCH_RECLAIM"
GPTOSS_FORM = """\
#!/usr/bin/env bash
source "$(dirname "$0")/../../benchmark_lib.sh"
check_env_vars MODEL TP CONC ISL OSL MAX_MODEL_LEN
version=`rocm-smi --showfw | grep MEC | head -n 1 |  awk '{print $NF}'`
if [[ "$version" == "" || $version -lt 177 ]]; then
  export HSA_NO_SCRATCH_RECLAIM=1
fi
export VLLM_ROCM_USE_AITER=1
vllm serve $MODEL --port $PORT --tensor-parallel-size=$TP --block-size=64 \\
  --max-model-len $MAX_MODEL_LEN > server.log 2>&1 &
"""
CONDITION = RuntimeCondition(
    text='[[ "$version" == "" || $version -lt 177 ]]', path=TOY_SCRIPT, line=5
)


@pytest.fixture
def records(make_repo: Callable[[], RepoBuilder]) -> list[EvidenceRecord]:
    builder = make_repo()
    builder.commit("Add toy configs (#1)", {**toy_base_files(), TOY_SCRIPT: GPTOSS_FORM})
    result = extract(builder.root, "HEAD", None, None, [])
    return [r for r in result.records if r.config_key == "toy-fp4-b300-vllm-mtp"]


def test_ingest_keeps_the_values_the_probe_chooses_between(
    records: list[EvidenceRecord],
) -> None:
    assert records
    for record in records:
        assert record.partial == ()
        assert KEY not in record.roles["serve"]
        assert record.roles["serve"]["env:VLLM_ROCM_USE_AITER"] == "1"
        assert record.conditional == {
            "serve": {KEY: ConditionalValue(values=(None, "1"), conditions=(CONDITION,))}
        }
        assert [dict(a["serve"]).get(KEY) for a in record.alternatives()] == [None, "1"]
        assert record.id == record.compute_id()


def test_the_record_round_trips_and_a_record_without_it_keeps_its_bytes(
    records: list[EvidenceRecord],
) -> None:
    record = records[0]
    data = json.loads(json.dumps(record.model_dump(mode="json", by_alias=True)))
    assert data["conditional"]["serve"][KEY]["values"] == [None, "1"]
    again = EvidenceRecord.model_validate(data)
    assert again == record and again.compute_id() == record.id
    plain = single_record("plain", "tensor_parallel_size=8")
    assert "conditional" not in plain.model_dump(mode="json", by_alias=True)
    stored = plain.model_dump(mode="json", by_alias=True)
    assert EvidenceRecord.model_validate(stored).compute_id() == plain.id


def test_misaligned_or_duplicated_conditional_values_are_refused() -> None:
    plain = single_record("plain", "tensor_parallel_size=8")
    one = ConditionalValue(values=("1", None), conditions=(CONDITION,))
    for conditional in (
        {"serve": {KEY: one, "env:X": ConditionalValue(values=("1",), conditions=())}},
        {"serve": {"tensor_parallel_size": one}},
    ):
        data = {**plain.model_dump(mode="json", by_alias=True), "conditional": conditional}
        with pytest.raises(ValueError):
            EvidenceRecord.model_validate(data)


def test_split_keeps_correlated_keys_aligned_and_names_their_conditions() -> None:
    other = RuntimeCondition(text="[[ $x ]]", path="a.sh", line=9)
    runs = [
        ((True, True), FlagSet({"a": "1", "b": "1", "c": "x", "k": "v"})),
        ((True, False), FlagSet({"a": "1", "b": "1", "k": "v"})),
        ((False, True), FlagSet({"c": "x", "k": "v"})),
        ((False, False), FlagSet({"k": "v"})),
    ]
    common, conditional = split_conditional(runs, [CONDITION, other])
    assert common == FlagSet({"k": "v"})
    assert conditional["a"].conditions == (CONDITION,)
    assert conditional["c"].conditions == (other,)
    rows = set(zip(*(conditional[k].values for k in "abc"), strict=True))
    assert rows == {(None, None, None), (None, None, "x"), ("1", "1", None), ("1", "1", "x")}


class _HsaIsMajor(StandInNormaliser):
    """The stand-in normaliser with the firmware variable judged (the production policy
    classes it tuning: only major flags are judged)."""

    def classify(self, key: str) -> str:
        return "major" if key == KEY else super().classify(key)


def _judge(records: list[EvidenceRecord], recipe: FlagSet) -> tuple[VerdictKind, list[str]]:
    normaliser = _HsaIsMajor()
    graph = EvidenceIndex.build(records, [entry(1, *records)], normaliser.role_major)
    record = records[0]
    raw = (("serve", normaliser.major(recipe)),)
    key = combination_key(
        record.checkpoint, record.hardware, "single_node", None, raw, context=normaliser.in_context
    )
    outcome = Judge(graph, normaliser.classify).outcome(key)
    return outcome.verdict, [f"{r.code}: {r.detail}" for r in outcome.reasons]


def test_a_recipe_value_inside_the_set_matches_and_outside_names_the_condition(
    records: list[EvidenceRecord],
) -> None:
    record = next(r for r in records if any(w.tp == 4 for w in r.workloads))
    served = dict(record.roles["serve"].items())
    assert _judge([record], FlagSet({**served, KEY: "1"})) == (VerdictKind.RECOMMENDED, [])
    assert _judge([record], FlagSet(served)) == (VerdictKind.RECOMMENDED, [])
    verdict, reasons = _judge([record], FlagSet({**served, KEY: "0"}))
    assert verdict is VerdictKind.GUIDE_ONLY
    assert reasons == [
        f"{ReasonCode.VALUE_MISMATCH}: toy-fp4-b300-vllm-mtp's value depends on "
        f'[[ "$version" == "" || $version -lt 177 ]] ({TOY_SCRIPT}:5): 1 or unset'
    ]
