"""``provenance suggest``: scoping an inherited, unevidenced flag is no cost (issue #29).

The review of recipes #682 asked the author to scope the FP8 indexer cache to where
InferenceX ran it. Dropping a flag from combinations that only inherit it (from a
layer naming no hardware, strategy or feature) and for which no in-scope evidence sets
it takes nothing evidence vouches for: it is measured as ``scoped``, not as a cost, so
the scoping edit can be proposed. A kernel choice, a flag written for the cell by name,
an evidenced flag, a changed value and a forced feature remain costs.
"""

from __future__ import annotations

import io
import shutil
from collections import Counter
from pathlib import Path

from provenance.audit.pipeline import AuditFilters
from provenance.recipes.locate import FlagPlace
from provenance.report.suggest import write
from provenance.review.suggest.cost import (
    SCOPES,
    RecipeChoices,
    ScopedFlag,
    costs_of,
    scoped_of,
)
from provenance.review.suggest.edits import RemoveFlag
from provenance.review.suggest.run import SuggestRequest, run_suggest

REPO = Path(__file__).resolve().parents[2]
MODEL = Path("models") / "MiniMaxAI" / "MiniMax-M3.yaml"
INDEXER = "attention_config.indexer_kv_dtype"
DECODE = "attention_config.minimax_m3_msa_decode_backend"
SERVE: tuple[str, int | None] = ("serve", None)
COMBO: tuple[object, ...] = ("mxfp8", "h200", "single_node_tp", 1, None, None, (), ())

PLACES = {
    INDEXER: [
        FlagPlace(("variants", "mxfp8", "extra_args"), 0, (f"--{INDEXER}", "fp8"), "fp8"),
    ],
    DECODE: [
        FlagPlace(("variants", "mxfp8", "extra_args"), 2, (f"--{DECODE}", "cutlass"), "cutlass"),
    ],
    "max_model_len": [
        FlagPlace(
            ("variants", "mxfp8", "hardware_overrides", "h200", "extra_args"),
            0,
            ("--max-model-len", "131072"),
            "131072",
        ),
    ],
    "block_size": [FlagPlace(("model", "base_args"), 0, ("--block-size", "128"), "128")],
    "kv_cache_dtype": [
        FlagPlace(("variants", "mxfp8", "extra_args"), 4, ("--kv-cache-dtype", "fp8"), "fp8"),
        FlagPlace(
            ("variants", "mxfp8", "hardware_overrides", "h200", "extra_args"),
            2,
            ("--kv-cache-dtype", "fp8"),
            "fp8",
        ),
    ],
}
BEFORE = {
    SERVE: {
        INDEXER: "fp8",
        DECODE: "cutlass",
        "max_model_len": "131072",
        "block_size": "128",
        "kv_cache_dtype": "fp8",
    }
}
ALL_UNBACKED = {SERVE: frozenset(BEFORE[SERVE])}


def _kinds(found: set[tuple[str, str, str, str]]) -> dict[str, str]:
    return {key: kind for kind, key, _, _ in found}


def test_an_inherited_unevidenced_flag_is_scoped_not_a_cost() -> None:
    choices = RecipeChoices(PLACES, ())
    after = {SERVE: {DECODE: "cutlass", "max_model_len": "131072", "kv_cache_dtype": "fp8"}}
    found = choices.classify(BEFORE, after, frozenset(), COMBO, ALL_UNBACKED)
    assert found == {
        (SCOPES, INDEXER, "fp8", "variants.mxfp8.extra_args"),
        (SCOPES, "block_size", "128", "model.base_args"),
    }
    # scoping is counted, shown, and no cost
    indexer = (SCOPES, INDEXER, "fp8", "variants.mxfp8.extra_args")
    block = (SCOPES, "block_size", "128", "model.base_args")
    counts = Counter({block: 1, indexer: 3})
    assert costs_of(counts) == ()
    assert [(s.flag, s.combinations) for s in scoped_of(counts)] == [
        (INDEXER, 3),
        ("block_size", 1),
    ]
    assert ScopedFlag(
        flag=INDEXER, value="fp8", combinations=2, written_at="variants.mxfp8.extra_args"
    ).describe() == (
        f"drops {INDEXER}=fp8 from 2 combinations that inherit it from "
        "variants.mxfp8.extra_args and that no in-scope evidence runs it for"
    )


def test_what_is_still_a_cost_when_dropped() -> None:
    choices = RecipeChoices(PLACES, ())
    nothing: dict[tuple[str, int | None], dict[str, str]] = {SERVE: {}}
    found = choices.classify(BEFORE, nothing, frozenset(), COMBO, ALL_UNBACKED)
    kinds = _kinds(found)
    # a kernel choice, even inherited and unevidenced
    assert kinds[DECODE] == "overrides-choice"
    # a flag written for the combination's hardware by name
    assert kinds["max_model_len"] == "overrides-choice"
    # inherited, but also written for the cell by name (both places reach it)
    assert kinds["kv_cache_dtype"] == "overrides-choice"
    assert kinds[INDEXER] == SCOPES and kinds["block_size"] == SCOPES
    (kernel,) = [c for c in costs_of(Counter(found)) if c.flag == DECODE]
    assert kernel.kernel
    # a flag some in-scope evidence sets with that value
    backed = {SERVE: frozenset({DECODE, "max_model_len", "kv_cache_dtype"})}
    assert _kinds(choices.classify(BEFORE, nothing, frozenset(), COMBO, backed))[INDEXER] == (
        "overrides-choice"
    )
    # a changed value is replaced, not scoped away
    changed = {SERVE: {**BEFORE[SERVE], INDEXER: "auto"}}
    assert choices.classify(BEFORE, changed, frozenset(), COMBO, ALL_UNBACKED) == {
        ("overrides-choice", INDEXER, "fp8", "variants.mxfp8.extra_args")
    }
    # without the baseline's provenance nothing is known to be unbacked
    assert _kinds(choices.classify(BEFORE, nothing, frozenset(), COMBO))[INDEXER] == (
        "overrides-choice"
    )


def test_a_feature_forced_on_a_combination_is_never_scoping() -> None:
    lmo = FlagPlace(("features", "text_only", "args"), 0, ("--language-model-only",), "true")
    choices = RecipeChoices({**PLACES, "language_model_only": [lmo]}, ["text_only"])
    after = {SERVE: {**BEFORE[SERVE], "language_model_only": "true"}}
    found = choices.classify(BEFORE, after, frozenset(), COMBO, ALL_UNBACKED)
    assert found == {("removes-capability", "language_model_only", "true", "text_only")}


# --------------------------------------------------------------------------- end to end


def test_a_recipe_with_an_unevidenced_kernel_choice_keeps_it(tmp_path: Path) -> None:
    """The MXFP8 variant with a kernel choice added to its ``extra_args`` beside the FP8
    indexer: no single-node MXFP8 evidence sets either. The indexer is scoped to
    Blackwell for free and proposed; the kernel choice, just as unevidenced and
    inherited, is never dropped without a cost, and never in the proposal."""
    root = tmp_path / "recipes"
    shutil.copytree(REPO / "recipes", root)
    model = root / MODEL
    text = model.read_text(encoding="utf-8")
    anchor = "    - --attention_config.indexer_kv_dtype\n    - fp8\n"
    assert text.count(anchor) == 2  # mxfp8's, then nvfp4's
    kernel = f"    - --{DECODE}\n    - cutlass\n"
    model.write_text(text.replace(anchor, anchor + kernel, 1), encoding="utf-8")
    report = run_suggest(
        SuggestRequest(
            recipe="MiniMaxAI/MiniMax-M3",
            recipes_root=root,
            filters=AuditFilters(variants=("mxfp8",)),
        )
    )
    out = io.StringIO()
    write(report, "text", out)
    shown = out.getvalue()
    proposal = report.combined or next(s for s in report.suggestions if s.proof.free)
    assert proposal.proof.free and proposal.proof.clean
    assert RemoveFlag(path=("variants", "mxfp8", "extra_args"), flag=f"--{INDEXER}") in (
        proposal.ops
    )
    assert [(s.flag, s.written_at) for s in proposal.proof.scoped] == [
        (INDEXER, "variants.mxfp8.extra_args")
    ]
    assert not any(isinstance(op, RemoveFlag) and DECODE in op.flag for op in proposal.ops)
    dropping = [
        s
        for s in report.suggestions
        if any(isinstance(op, RemoveFlag) and DECODE in op.flag for op in s.ops)
    ]
    assert dropping, shown
    for item in dropping:
        assert not item.proof.free
        assert all(s.flag != DECODE for s in item.proof.scoped)
        (cost,) = [c for c in item.proof.cost if c.flag == DECODE]
        assert cost.kernel and cost.written_at == "variants.mxfp8.extra_args"
    assert "scoping, no cost: drops attention_config.indexer_kv_dtype=fp8 from" in shown
