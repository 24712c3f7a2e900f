"""An explicit flag at the default of the vLLM version the evidence ran equals its absence.

Issue #29: the record's own explicit defaults are dropped when the evidence index is built
(``EvidenceIndex.build`` with the policy's ``VersionDefaults``); a recipe's explicit value
equal to a record's version default matches the record without it (the judge reads the
record at its version). Where the record's version is unknown, the reason says so.
``disable_cascade_attn`` (false to 0.17.0, true from 0.18.0) is the case throughout; the
Kimi-K2.5 records at v0.22.0 of the embedded evidence, which write vLLM 0.22.0's default
``--kv-offloading-backend native``, are the real one.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from audit_builders import NVFP4, entry, pd_record, single_record

from provenance.audit.index import EvidenceIndex
from provenance.audit.judge import Judge, Outcome
from provenance.audit.keys import combination_key
from provenance.audit.normaliser import PolicyNormaliser
from provenance.audit.pipeline import load_graph
from provenance.audit.verdicts import Reason
from provenance.model.flags import FlagSet
from provenance.model.reasons import ReasonCode, VerdictKind
from provenance.model.record import EvidenceRecord

REPO_ROOT = Path(__file__).resolve().parents[2]
NORMALISER = PolicyNormaliser()
OLD = "vllm/vllm-openai-rocm:v0.17.0"  # disable_cascade_attn defaults to false
NEW = "vllm/vllm-openai:v0.18.0"  # … to true
NIGHTLY = "vllm/vllm-openai:nightly-04c2a8deac44fdb1ca3e2b5ec3e6bf16f3f6a914"
CASCADE_NOTE = (
    "vLLM's default of disable_cascade_attn depends on the version (false ≤0.17.0, "
    f"true ≥0.18.0); the evidence's vLLM version is unknown (image {NIGHTLY})"
)


def at(image: str | None, record: EvidenceRecord) -> EvidenceRecord:
    return record.model_copy(update={"image": image}).with_id()


def judged(
    records: Sequence[EvidenceRecord], *roles: tuple[str, str], kind: str = "single_node"
) -> Outcome:
    """The outcome of one deployment (``(role, args)`` per process) against ``records``,
    indexed as the audit indexes them (the policy's version defaults)."""
    graph = EvidenceIndex.build(
        records, [entry(100, *records)], NORMALISER.role_major, NORMALISER.versions
    )
    raw = tuple(
        (role, NORMALISER.command_major(("vllm", "serve", NVFP4, *args.split()), {}))
        for role, args in roles
    )
    hardware = "b300" if kind == "pd_cluster" else "b200"
    key = combination_key(NVFP4, hardware, kind, None, raw, context=NORMALISER.in_context)
    return Judge(graph, NORMALISER.classify).outcome(key)


def about(outcome: Outcome, flag: str) -> list[Reason]:
    return [r for r in outcome.reasons if r.flag == flag]


# --- the record writes the default, the recipe leaves it out ---------------------------


def test_a_record_explicit_at_its_version_default_matches_a_recipe_without_it() -> None:
    record = at(NEW, single_record("new", "tensor_parallel_size=8 disable_cascade_attn=true"))
    outcome = judged([record], ("serve", "-tp 8"))
    assert outcome.verdict is VerdictKind.RECOMMENDED
    assert outcome.reasons == ()


def test_the_same_value_at_a_version_with_another_default_is_a_missing_flag() -> None:
    record = at(OLD, single_record("old", "tensor_parallel_size=8 disable_cascade_attn=true"))
    outcome = judged([record], ("serve", "-tp 8"))
    assert outcome.verdict is VerdictKind.GUIDE_ONLY
    (reason,) = about(outcome, "disable_cascade_attn")
    assert reason.code is ReasonCode.MISSING_FLAG
    assert reason.evidence_value == "true"
    assert "vLLM version is unknown" not in reason.detail


def test_the_old_default_written_explicitly_at_the_old_version_is_dropped_too() -> None:
    record = at(OLD, single_record("old", "tensor_parallel_size=8 disable_cascade_attn=false"))
    assert judged([record], ("serve", "-tp 8")).verdict is VerdictKind.RECOMMENDED


# --- the recipe writes the default, the record leaves it out ---------------------------


def test_a_recipe_explicit_at_the_record_version_default_matches_the_record() -> None:
    record = at(NEW, single_record("new", "tensor_parallel_size=8"))
    outcome = judged([record], ("serve", "-tp 8 --disable-cascade-attn"))
    assert outcome.verdict is VerdictKind.RECOMMENDED
    assert outcome.reasons == ()
    (flag,) = [f for f in outcome.roles[0].flags if f.key == "disable_cascade_attn"]
    assert [ref.record for ref in flag.evidence] == [record.id]


def test_a_recipe_default_of_another_version_is_unevidenced() -> None:
    record = at(OLD, single_record("old", "tensor_parallel_size=8"))
    outcome = judged([record], ("serve", "-tp 8 --disable-cascade-attn"))
    assert outcome.verdict is VerdictKind.GUIDE_ONLY
    (reason,) = about(outcome, "disable_cascade_attn")
    assert reason.code is ReasonCode.FLAG_UNEVIDENCED
    assert reason.detail == "no in-scope evidence point sets this flag"


def test_both_sides_explicit_still_match() -> None:
    record = at(NEW, single_record("new", "tensor_parallel_size=8 disable_cascade_attn=true"))
    outcome = judged([record], ("serve", "-tp 8 --disable-cascade-attn"))
    assert outcome.verdict is VerdictKind.RECOMMENDED


def test_the_nearest_point_is_read_at_its_version() -> None:
    """Only the real difference shows: not the recipe's explicit default."""
    near = at(NEW, single_record("near", "tensor_parallel_size=8"))
    far = at(OLD, single_record("far", "tensor_parallel_size=4"))
    outcome = judged([near, far], ("serve", "-tp 8 --disable-cascade-attn --block-size 64"))
    assert outcome.verdict is VerdictKind.GUIDE_ONLY
    assert [r.code for r in outcome.reasons] == [ReasonCode.FLAG_UNEVIDENCED]
    (nearest,) = outcome.nearest
    assert nearest.record == near.id
    assert nearest.only_recipe == {"block_size": "64"}
    assert nearest.only_evidence == {}
    assert nearest.changed == {}
    assert nearest.distance == 1


def test_pd_roles_are_read_at_the_version_of_one_deployment() -> None:
    """Each role's view applies to its own role; both roles match the same record."""
    record = at(
        NEW, pd_record("pd", "tensor_parallel_size=8", "tensor_parallel_size=8 block_size=64")
    )
    outcome = judged(
        [record],
        ("prefill", "-tp 8 --disable-cascade-attn"),
        ("decode", "-tp 8 --block-size 64 --no-disable-cascade-attn"),
        kind="pd_cluster",
    )
    assert outcome.verdict is VerdictKind.GUIDE_ONLY
    (reason,) = outcome.reasons
    assert (reason.role, reason.flag, reason.code) == (
        "decode",
        "disable_cascade_attn",
        ReasonCode.FLAG_UNEVIDENCED,
    )
    by_role = {n.role: n for n in outcome.nearest}
    assert by_role["prefill"].distance == 0
    assert by_role["decode"].only_recipe == {"disable_cascade_attn": "false"}


def test_a_matching_point_of_another_kind_is_read_at_its_version() -> None:
    """A multi-node recipe whose flags a single-node record runs (at its version)."""
    record = at(NEW, single_record("single", "tensor_parallel_size=8"))
    outcome = judged([record], ("serve", "-tp 8 --disable-cascade-attn"), kind="multi_node")
    (reason,) = [r for r in outcome.reasons if r.code is ReasonCode.TOPOLOGY_MISMATCH]
    assert (reason.recipe_value, reason.evidence_value) == ("aggregated_multi_node", "single_node")
    old = at(OLD, single_record("single", "tensor_parallel_size=8"))
    outcome = judged([old], ("serve", "-tp 8 --disable-cascade-attn"), kind="multi_node")
    assert ReasonCode.TOPOLOGY_MISMATCH not in {r.code for r in outcome.reasons}


# --- unknown version: the reason says so ----------------------------------------------


def test_a_missing_flag_of_unknown_version_says_the_default_depends_on_it() -> None:
    record = at(
        NIGHTLY, single_record("nightly", "tensor_parallel_size=8 disable_cascade_attn=true")
    )
    outcome = judged([record], ("serve", "-tp 8"))
    assert outcome.verdict is VerdictKind.GUIDE_ONLY
    (reason,) = about(outcome, "disable_cascade_attn")
    assert reason.code is ReasonCode.MISSING_FLAG
    assert reason.detail == (
        "set by the nearest evidence point (nightly), not by the recipe; " + CASCADE_NOTE
    )


def test_an_unevidenced_flag_of_unknown_version_says_the_default_depends_on_it() -> None:
    record = at(NIGHTLY, single_record("nightly", "tensor_parallel_size=8"))
    outcome = judged([record], ("serve", "-tp 8 --disable-cascade-attn"))
    (reason,) = about(outcome, "disable_cascade_attn")
    assert reason.code is ReasonCode.FLAG_UNEVIDENCED
    assert reason.detail == "no in-scope evidence point sets this flag; " + CASCADE_NOTE


def test_a_value_mismatch_with_points_of_unknown_version_says_so() -> None:
    setter = at(NEW, single_record("setter", "tensor_parallel_size=8 disable_cascade_attn=false"))
    unset = at(None, single_record("unset", "tensor_parallel_size=8"))
    outcome = judged([setter, unset], ("serve", "-tp 8 --disable-cascade-attn"))
    (reason,) = about(outcome, "disable_cascade_attn")
    assert reason.code is ReasonCode.VALUE_MISMATCH
    assert reason.detail.endswith("the evidence's vLLM version is unknown (image none)")


def test_a_value_no_version_has_as_default_needs_no_note() -> None:
    record = at(NIGHTLY, single_record("nightly", "tensor_parallel_size=8 block_size=64"))
    (reason,) = about(judged([record], ("serve", "-tp 8")), "block_size")
    assert reason.detail == "set by the nearest evidence point (nightly), not by the recipe"


def test_an_index_without_version_defaults_compares_as_written() -> None:
    record = at(NEW, single_record("new", "tensor_parallel_size=8 disable_cascade_attn=true"))
    graph = EvidenceIndex.build([record], [entry(100, record)], NORMALISER.role_major)
    assert graph.versions is None
    assert graph.records[record.id].major["serve"]["disable_cascade_attn"] == "true"


# --- the embedded evidence ------------------------------------------------------------


def test_embedded_kimi_records_at_0_22_0_drop_kv_offloading_backend_native() -> None:
    """vLLM 0.22.0 defaults --kv-offloading-backend to native; a nightly image's record
    (version unknown) keeps its explicit native."""
    graph, _ = load_graph(
        REPO_ROOT / "ledger",
        REPO_ROOT / "evidence",
        NORMALISER,
        {"moonshotai/Kimi-K2.5", "amd/MiniMax-M3-MXFP4"},
    )
    assert graph.versions is not None
    kimi = [r for r in graph.records.values() if r.record.image == "vllm/vllm-openai:v0.22.0"]
    written = [r for r in kimi if "kv_offloading_backend" in r.record.roles["serve"]]
    assert written
    assert all("kv_offloading_backend" not in r.major["serve"] for r in written)
    assert all("kv_offloading_size" in r.major["serve"] for r in written)
    nightly = [
        r
        for r in graph.records.values()
        if r.record.image is not None
        and "nightly" in r.record.image
        and r.record.roles.get("serve", FlagSet()).get("kv_offloading_backend") == "native"
    ]
    assert nightly
    assert all(r.major["serve"]["kv_offloading_backend"] == "native" for r in nightly)
