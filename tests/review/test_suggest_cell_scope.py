"""``provenance suggest`` scopes a flag by the evidence of each combination's own scope.

Issue #29: the review of recipes #682 asked to scope NVFP4's FP8 indexer cache to where
InferenceX ran it. A hardware counts as backing a variant's flag only where the
evidence of the combinations' own scope (hardware × deployment kind × role) sets it:
a disaggregated run on GB300 says nothing about GB300 single-node or multi-node
combinations. Here the recipe is the embedded MiniMax-M3 one, audited against a small
hand-made evidence store: one validated single-node NVFP4 run on B200 that runs the
recipe's own flags (FP8 indexer included), and one disaggregated NVFP4 run on GB300
that sets the FP8 indexer too. Audited for single_node_tp and multi_node_tp only, the
GB300 combinations have no evidence at all, so the indexer is scoped to B200; B200's
multi-node combinations, with no evidence either, keep it, and the output says that no
recipe layer can express that split.
"""

from __future__ import annotations

import io
import shutil
from collections import Counter
from pathlib import Path

import pytest
from audit_builders import entry, pd_record, single_record

from provenance.audit.pipeline import AuditFilters, AuditInputs, run_audit
from provenance.model.combination import Selection
from provenance.model.flags import FlagSet
from provenance.normalise.canonical import normalise_argv
from provenance.recipes.load.loader import load_recipe, load_recipes_root
from provenance.recipes.render.synthesis import render
from provenance.report.suggest import write
from provenance.review.suggest.edits import AddFlag, Edit, RemoveFlag, apply_edit
from provenance.review.suggest.model import SuggestReport
from provenance.review.suggest.run import SuggestRequest, run_suggest
from provenance.store.evidence import EvidenceStore
from provenance.store.ledger import Ledger

EMBEDDED = Path(__file__).resolve().parents[2] / "recipes"
RECIPE = "MiniMaxAI/MiniMax-M3"
RECIPE_FILE = "models/MiniMaxAI/MiniMax-M3.yaml"
NVFP4 = "nvidia/MiniMax-M3-NVFP4"
INDEXER = "attention_config.indexer_kv_dtype"
FILTERS = AuditFilters(
    variants=("nvfp4",),
    hardware=("b200", "gb300"),
    strategies=("single_node_tp", "multi_node_tp"),
    features="none",
)


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    """A copy of the embedded recipes root and a ledger + evidence store of two runs."""
    tmp = tmp_path_factory.mktemp("cell-scope")
    root = tmp / "recipes"
    shutil.copytree(EMBEDDED, root)
    recipes = load_recipes_root(root)
    selection = Selection(variant="nvfp4", hardware="b200", strategy="single_node_tp", node_count=1)
    serve = render(load_recipe(recipes, RECIPE), recipes, selection).roles[0]
    served: FlagSet = normalise_argv(list(serve.argv or ()), serve.env).flags
    assert served.get(INDEXER) == "fp8"  # the premise: the recipe writes it for NVFP4
    template = single_record("minimaxm3-fp4-b200-vllm", "", hardware="b200", checkpoint=NVFP4)
    single = template.model_copy(update={"roles": {"serve": served}}).with_id()
    disaggregated = pd_record(
        "minimaxm3-fp4-gb300-dynamo-vllm",
        f"{INDEXER}=fp8 tensor_parallel_size=4",
        f"{INDEXER}=fp8 tensor_parallel_size=4",
        hardware="gb300",
        checkpoint=NVFP4,
    )
    ledger, evidence = tmp / "ledger", tmp / "evidence"
    ledger.mkdir()
    evidence.mkdir()
    for record in (single, disaggregated):
        EvidenceStore(evidence).put(record)
    Ledger(ledger).write_entry(entry(2120, single, disaggregated))
    return root, ledger, evidence


@pytest.fixture(scope="module")
def report(inputs: tuple[Path, Path, Path]) -> SuggestReport:
    root, ledger, evidence = inputs
    return run_suggest(
        SuggestRequest(
            recipe=RECIPE, recipes_root=root, ledger=ledger, evidence=evidence, filters=FILTERS
        )
    )


def test_the_indexer_is_scoped_to_the_hardware_whose_own_evidence_sets_it(
    report: SuggestReport, inputs: tuple[Path, Path, Path]
) -> None:
    """GB300's disaggregated run does not back GB300's single- and multi-node
    combinations: the flag moves to B200, is dropped from every GB300 combination (none
    had evidence for it), stays on every B200 one, and no combination is worse."""
    found = [
        s for s in report.suggestions if s.kind == "scope" and s.group == f"nvfp4 · {INDEXER}=fp8"
    ]
    assert len(found) == 1, [s.title for s in report.suggestions]
    (scope,) = found
    assert scope.ops == (
        RemoveFlag(path=("variants", "nvfp4", "extra_args"), flag=f"--{INDEXER}"),
        AddFlag(
            path=("variants", "nvfp4", "hardware_overrides", "b200", "extra_args"),
            tokens=(f"--{INDEXER}", "fp8"),
        ),
    )
    assert scope.proof.free and scope.proof.lost == 0 and scope.proof.worse == 0
    # the proposal carries it
    proposal = report.combined or next(s for s in report.suggestions if s.proof.free)
    assert set(scope.ops) <= set(proposal.ops)

    # applied for real: every GB300 combination loses the flag, every B200 one keeps it
    # and keeps the evidence that sets it
    root, ledger, evidence = inputs

    def indexer() -> Counter[tuple[str, bool | None]]:
        """Per hardware, combinations without the flag (None) or with it (evidenced?)."""
        audit = run_audit(
            AuditInputs(recipes=(RECIPE,), recipes_root=root, ledger=ledger, evidence=evidence),
            FILTERS,
        )
        found: Counter[tuple[str, bool | None]] = Counter()
        for verdict in audit.verdicts:
            flags = [f for r in verdict.roles for f in r.flags if f.key == INDEXER]
            state = any(f.evidence for f in flags) if flags else None
            for selections in verdict.selections:
                found[(selections.hardware, state)] += selections.count
        return found

    model = root / RECIPE_FILE
    original = model.read_text(encoding="utf-8")
    before = indexer()
    try:
        model.write_text(apply_edit(original, Edit(ops=scope.ops)), encoding="utf-8")
        after = indexer()
    finally:
        model.write_text(original, encoding="utf-8")
    gb300 = before[("gb300", False)]
    assert gb300 > 0 and before[("gb300", True)] == 0 and before[("gb300", None)] == 0
    assert after[("gb300", None)] == gb300 and after[("gb300", False)] == 0
    assert before[("b200", True)] > 0
    for state in (True, False, None):
        assert after[("b200", state)] == before[("b200", state)]
    (scoped,) = [s for s in scope.proof.scoped if s.flag == INDEXER]
    assert scoped.combinations == gb300
    assert scoped.written_at == "variants.nvfp4.extra_args"


def test_what_no_layer_can_express_is_said(report: SuggestReport) -> None:
    """On B200 only the single-node combinations have evidence that sets the flag; a
    variant's hardware override reaches multi-node too, so that part is named."""
    (gap,) = [g for g in report.inexpressible if g.variant == "nvfp4" and g.flag == INDEXER]
    assert gap.backed == ("b200 · single_node_tp",)
    assert gap.unbacked == ("b200 · multi_node_tp",)
    assert "on b200 the evidence of single_node_tp sets it" in gap.why
    assert "multi_node_tp has no evidence" in gap.why
    assert "drops it from gb300 and keeps it for every strategy of b200" in gap.why
    out = io.StringIO()
    write(report, "text", out)
    assert f"nvfp4 {INDEXER}=fp8: on b200 the evidence of single_node_tp sets it" in (
        out.getvalue()
    )
