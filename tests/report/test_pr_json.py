"""The PR audit's JSON (``provenance.diff/v4``) says what v3 said, each shared part once.

The oracle here is written from docs/json-output.md alone: it expands every change group
and lens occurrence of a v4 document through its ``tables`` into the object v3 wrote for
it (``ChangeGroup.model_dump``: every reason, nearest point, flag change and selection
set in full, fields left out at their default written back) and compares the two; the
selection sets are also expanded into combinations and counted against
``combinations``. It runs on a synthetic PR the size of the largest of the recipes
history and, when the recipes mirror is beside the checkout, on recipes #730 itself.
"""

from __future__ import annotations

import io
import json
import os
from collections.abc import Iterator
from itertools import product
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from provenance.audit.verdicts import (
    EvidenceRef,
    FeatureChoice,
    NearestEvidence,
    PdPools,
    Reason,
    SelectionSet,
)
from provenance.model.combination import PdPool
from provenance.model.reasons import ReasonCode, VerdictKind
from provenance.report.diff import write_json
from provenance.report.pr_json import read_pr
from provenance.review.diff import (
    ChangeGroup,
    DiffReport,
    DiffSummary,
    FlagChanges,
    GateResult,
    LensEntry,
    LensOccurrence,
    LensRole,
)
from provenance.schemas import generate, published

REPO = Path(__file__).resolve().parents[2]
MIRROR = Path(
    os.environ.get(
        "PROVENANCE_RECIPES_GIT", REPO.parent / ".mirror" / "vllm-project+recipes" / "repo"
    )
)
#: the bound issue #31 sets on the PR JSON of every PR of the recipes history
MAX_BYTES = 10_000_000


# --- the oracle: docs/json-output.md, "provenance.diff/v4" ------------------------------

#: the fields of a change group and their value when the document leaves them out
GROUP_DEFAULTS: dict[str, Any] = {
    "base_verdict": None,
    "head_verdict": None,
    "flags": {},
    "block_reason": None,
    "unbenchmarked": False,
    "reasons": [],
    "nearest": [],
    "declared_by": None,
}


def expand_set(tables: dict[str, Any], index: int) -> dict[str, Any]:
    """``sets[index]`` as v3 wrote it: the shape's fields, the feature choices, pd."""
    written = tables["sets"][index]
    pd = written.get("pd")
    if pd is not None:
        pd = {side: [tables["pools"][i] for i in pd[side]] for side in ("prefill", "decode")}
    return {
        **tables["shapes"][written["shape"]],
        "features": [tables["features"][i] for i in written["features"]],
        "pd": pd,
    }


def combinations_of(selection_set: dict[str, Any]) -> Iterator[tuple[Any, ...]]:
    """Every combination a v3 selection set stands for (features × prefill × decode)."""
    head = tuple(v for k, v in selection_set.items() if k not in ("features", "pd"))
    pd = selection_set["pd"]
    pairs = [None] if pd is None else list(product(pd["prefill"], pd["decode"]))
    for choice, pair in product(selection_set["features"], pairs):
        yield (*head, json.dumps(choice, sort_keys=True), json.dumps(pair, sort_keys=True))


def expand_flags(tables: dict[str, Any], written: dict[str, Any]) -> dict[str, Any]:
    flags = tables["flags"]
    out: dict[str, dict[str, dict[str, Any]]] = {"added": {}, "changed": {}, "removed": {}}
    for side in ("added", "removed"):
        for i in written.get(side, []):
            out[side].setdefault(flags[i]["role"], {})[flags[i]["key"]] = flags[i]["value"]
    for before, after in written.get("changed", []):
        old, new = flags[before], flags[after]
        assert (old["role"], old["key"]) == (new["role"], new["key"])
        out["changed"].setdefault(old["role"], {})[old["key"]] = [old["value"], new["value"]]
    return out


def expand_group(tables: dict[str, Any], written: dict[str, Any]) -> dict[str, Any]:
    group = {**GROUP_DEFAULTS, **written}
    group["flags"] = expand_flags(tables, group["flags"])
    group["reasons"] = [tables["reasons"][i] for i in group["reasons"]]
    group["nearest"] = [tables["nearest"][i] for i in group["nearest"]]
    group["selections"] = [expand_set(tables, s) for s in group["selections"]]
    return group


def expand_lens(tables: dict[str, Any], entry: dict[str, Any]) -> dict[str, Any]:
    return {
        **entry,
        "occurrences": [
            {
                **occ,
                "selections": [expand_set(tables, s) for s in occ["selections"]],
                "roles": [
                    {"role": r["role"], "evidence": [tables["evidence"][i] for i in r["evidence"]]}
                    for r in occ["roles"]
                ],
            }
            for occ in entry["occurrences"]
        ],
    }


def check_round_trip(diff: DiffReport) -> dict[str, Any]:
    """Write ``diff`` as v4, check every fact against v3's, and return the document."""
    out = io.StringIO()
    write_json(diff, out)
    text = out.getvalue()
    document: dict[str, Any] = json.loads(text)
    assert document["schema"] == "provenance.diff/v4"
    jsonschema.validate(document, json.loads(published("diff")))
    v3 = json.loads(diff.model_dump_json(by_alias=True))
    tables = document["tables"]
    assert len(document["changes"]) == len(v3["changes"])
    for written, before in zip(document["changes"], v3["changes"], strict=True):
        expanded = expand_group(tables, written)
        assert expanded == before
        combinations = [c for s in expanded["selections"] for c in combinations_of(s)]
        assert len(combinations) == len(set(combinations)) == written["combinations"]
    assert [expand_lens(tables, e) for e in document["lens"]] == v3["lens"]
    rest = {k: v for k, v in v3.items() if k not in ("schema", "changes", "lens")}
    assert {k: document[k] for k in rest} == rest
    assert set(document) == {*rest, "schema", "tables", "changes", "lens"}
    assert read_pr(text) == diff
    return document


# --- a synthetic PR: thousands of new guide-only combinations ---------------------------

HARDWARE = tuple(f"hw{i}" for i in range(12))
VARIANTS = ("fp8", "nvfp4", "mxfp8", "bf16")
STRATEGIES = ("single_node_tp", "single_node_dep", "multi_node_tep", "pd_cluster")
CHOICES = tuple(
    FeatureChoice(features=tuple(f), feature_modes={"spec_decoding": "eagle3"} if f else {})
    for f in ((), ("spec_decoding",), ("tool_calling", "spec_decoding"), ("reasoning",))
)
POOLS = PdPools(
    prefill=(PdPool(nodes=1, parallelism="tp"), PdPool(nodes=2, parallelism="tep")),
    decode=(PdPool(nodes=1, parallelism="dep"),),
)


def _reason(hardware: str, flag: str) -> Reason:
    return Reason(
        code=ReasonCode.FLAG_UNEVIDENCED,
        role="serve",
        flag=flag,
        recipe_value="fp8",
        sources=("SemiAnalysisAI/InferenceX#2609",),
        detail=f"no in-scope evidence on {hardware} sets {flag}=fp8 " + "(why) " * 20,
    )


def _nearest(hardware: str, distance: int) -> NearestEvidence:
    return NearestEvidence(
        record=f"sha256:{hardware}{distance:02d}" + "0" * 50,
        config_key=f"minimaxm3-fp8-{hardware}-vllm",
        prs=("SemiAnalysisAI/InferenceX#2609",),
        role="serve",
        distance=distance,
        only_recipe={"kv_cache_dtype": "fp8", "attention_config.backend": "FLASHINFER"},
        only_evidence={"max_num_seqs": "256"},
        changed={"tensor_parallel_size": ("8", "4")},
    )


def synthetic_diff(groups_per_cell: int) -> DiffReport:
    """A PR adding ``kv_cache_dtype=fp8`` to a model: per (hardware, variant, strategy)
    cell ``groups_per_cell`` change groups, half new guide-only and blocking, half with
    flags changed; the reasons and nearest points are shared per hardware, the feature
    choices by every group."""
    changes: list[ChangeGroup] = []
    occurrences: list[LensOccurrence] = []
    evidence = EvidenceRef(record="sha256:" + "e" * 64, prs=("SemiAnalysisAI/InferenceX#2609",))
    for hardware, variant, strategy in product(HARDWARE, VARIANTS, STRATEGIES):
        reasons = (_reason(hardware, "kv_cache_dtype"), _reason(hardware, "attention_config"))
        nearest = (_nearest(hardware, 2), _nearest(hardware, 3))
        for n in range(groups_per_cell):
            pd = POOLS if strategy == "pd_cluster" else None
            selection_set = SelectionSet(
                variant=variant,
                hardware=hardware,
                strategy=strategy,
                node_count=1 + n % 2,
                kv_offload="lmcache" if n % 3 == 0 else None,
                features=CHOICES[: 1 + n % len(CHOICES)],
                pd=pd,
            )
            new = n % 2 == 0
            changes.append(
                ChangeGroup(
                    recipe=f"org/Model-{variant}",
                    kind="new" if new else "flags-changed",
                    base_verdict=None if new else VerdictKind.GUIDE_ONLY,
                    head_verdict=VerdictKind.GUIDE_ONLY,
                    flags=FlagChanges(
                        added={"serve": {"kv_cache_dtype": "fp8"}},
                        changed={} if new else {"serve": {"max_num_seqs": (str(n), "256")}},
                        removed={} if n % 5 else {"serve": {"enforce_eager": "true"}},
                    ),
                    reasons=reasons,
                    nearest=nearest if n % 4 else (),
                    declared_by="decl-1" if n % 7 == 0 else None,
                    blocking=n % 7 != 0,
                    block_reason=("new-guide-only" if new else "new-unevidenced-flag")
                    if n % 7
                    else None,
                    unbenchmarked=False,
                    combinations=selection_set.count,
                    selections=(selection_set,),
                )
            )
            roles = (LensRole(role="prefill", evidence=(evidence,)), LensRole(role="decode"))
            occurrences.append(
                LensOccurrence(
                    recipe=f"org/Model-{variant}",
                    verdict=VerdictKind.GUIDE_ONLY,
                    combinations=selection_set.count,
                    selections=(selection_set,),
                    roles=roles if pd is not None else (LensRole(role="serve"),),
                )
            )
    blocking = sum(c.combinations for c in changes if c.blocking)
    total = sum(c.combinations for c in changes)
    return DiffReport(
        base="aaaaaaa",
        head="bbbbbbb",
        recipes=tuple(f"org/Model-{v}" for v in VARIANTS),
        summary=DiffSummary(
            base_combinations=total,
            head_combinations=total,
            new=total // 2,
            removed=0,
            verdict_changed=0,
            flags_changed=total // 2,
        ),
        changes=tuple(changes),
        lens=(
            LensEntry(
                key="kv_cache_dtype",
                value="fp8",
                evidenced=1,
                unevidenced=total,
                occurrences=tuple(occurrences),
            ),
        ),
        gate=GateResult(passed=False, blocking=blocking, declared=total - blocking),
    )


def test_the_published_schema_is_the_v4_document() -> None:
    schema = json.loads(published("diff"))
    assert schema == generate("diff")
    assert schema["properties"]["schema"]["const"] == "provenance.diff/v4"
    assert {"tables", "changes", "lens"} <= set(schema["required"]) | set(schema["properties"])


def test_a_large_synthetic_pr_says_every_fact_of_v3_each_shared_part_once() -> None:
    diff = synthetic_diff(groups_per_cell=24)
    assert len(diff.changes) == 4_608
    document = check_round_trip(diff)
    text = json.dumps(document, separators=(",", ":"))
    v3 = diff.model_dump_json(by_alias=True)
    # each reason, nearest point and feature choice is written once, in its table
    for hardware in HARDWARE:
        detail = _reason(hardware, "kv_cache_dtype").detail
        assert v3.count(detail) > 100
        assert text.count(detail) == 1
    assert len(document["tables"]["reasons"]) == 2 * len(HARDWARE)
    assert len(document["tables"]["nearest"]) == 2 * len(HARDWARE)
    assert len(document["tables"]["features"]) == len(CHOICES)
    # what is left per group (and its lens occurrence) is mostly indexes: v3 wrote
    # about 2,400 bytes per group here, v4 about 520
    assert len(text) * 4 < len(v3)
    assert len(text) < 600 * len(diff.changes)


def test_a_pr_with_nothing_changed_and_every_optional_field_empty() -> None:
    diff = synthetic_diff(groups_per_cell=0)
    document = check_round_trip(diff)
    assert document["changes"] == [] and document["tables"]["reasons"] == []


def test_an_index_outside_its_table_is_refused() -> None:
    out = io.StringIO()
    write_json(synthetic_diff(groups_per_cell=1), out)
    document = json.loads(out.getvalue())
    document["changes"][0]["reasons"] = [len(document["tables"]["reasons"])]
    with pytest.raises(IndexError):
        read_pr(json.dumps(document))


@pytest.mark.skipif(not (MIRROR / "HEAD").is_file(), reason="no recipes mirror beside the checkout")
def test_recipes_730_the_largest_pr_of_the_history_is_under_10_mb(tmp_path: Path) -> None:
    """MiniMax-M3 #730 (3306ace, thousands of new guide-only combinations) wrote 46 MB
    as v3; v4 says the same facts within the bound."""
    from provenance.review.pr_audit import PrAuditRequest, run_pr_audit

    try:
        diff = run_pr_audit(PrAuditRequest(repo=MIRROR, base="3306ace^", head="3306ace")).diff
    except Exception as error:  # a mirror without the commit
        pytest.skip(f"recipes #730 is not in the mirror: {error}")
    assert len(diff.changes) > 1_000
    document = check_round_trip(diff)
    assert len(json.dumps(document, separators=(",", ":"), ensure_ascii=False)) <= MAX_BYTES
