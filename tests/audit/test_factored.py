"""The factored audit (shape cells, pools and feature signatures) equals the audit
selection by selection: same verdicts for the same combinations, same reverse
direction, claims, summary and records — on the embedded MiniMax-M3 recipe, on a
toy root built to hit every fallback of the feature reduction, and (slow, when a
vllm-project/recipes checkout is present) on all 173 recipes."""

from __future__ import annotations

import datetime as dt
import io
import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import TypeAdapter

from provenance.audit.index import EvidenceIndex
from provenance.audit.normaliser import PolicyNormaliser
from provenance.audit.pipeline import CellSource, RecipeInput, audit, load_graph
from provenance.audit.verdicts import RECORD_INDEX, AuditReport, SelectionSet, VerdictEntry
from provenance.model.combination import Selection
from provenance.model.ledger import Declaration, Declarations, SelectionPattern
from provenance.model.reasons import VerdictKind
from provenance.recipes.enumerate.selections import EnumerationOptions, enumerate_selections
from provenance.recipes.load.loader import Recipe, RecipesRoot, load_recipe, load_recipes_root
from provenance.recipes.render.synthesis import Renderer
from provenance.report import json_report

ENTRY = TypeAdapter(VerdictEntry)
SELECTION = TypeAdapter(Selection)

REPO = Path(__file__).resolve().parents[2]
TOY_ROOT = REPO / "tests" / "fixtures" / "recipes" / "toy-root"


def _per_selection(recipe: Recipe, root: RecipesRoot, options: EnumerationOptions) -> Iterator[Any]:
    renderer = Renderer(recipe, root)
    for selection in enumerate_selections(recipe, root, options):
        yield selection, renderer.render(selection)


def _both(
    recipes: list[Recipe],
    root: RecipesRoot,
    options: EnumerationOptions,
    graph: EvidenceIndex,
    declarations: Declarations | None = None,
) -> tuple[AuditReport, AuditReport]:
    slow = audit(
        [RecipeInput(ref=r.hf_id, combinations=_per_selection(r, root, options)) for r in recipes],
        graph,
        PolicyNormaliser(),
        declarations,
    )
    fast = audit(
        [
            RecipeInput(ref=r.hf_id, cells=CellSource(recipe=r, root=root, options=options))
            for r in recipes
        ],
        graph,
        PolicyNormaliser(),
        declarations,
    )
    return slow, fast


def _outcomes(report: AuditReport) -> dict[str, list[str]]:
    """Outcome (everything but the selections) -> its combinations, sorted."""
    out: dict[str, list[str]] = {}
    for entry in report.verdicts:
        head = ENTRY.dump_json(entry, exclude={"selections", "combinations"}).decode()
        found = out.setdefault(head, [])
        found.extend(SELECTION.dump_json(s).decode() for s in entry.iter_selections())
        assert entry.combinations == sum(s.count for s in entry.selections)
    for value in out.values():
        value.sort()
    return out


def assert_same_audit(slow: AuditReport, fast: AuditReport) -> None:
    assert fast.summary == slow.summary
    assert fast.records == slow.records
    assert fast.reverse == slow.reverse
    assert fast.claims == slow.claims
    slow_outcomes, fast_outcomes = _outcomes(slow), _outcomes(fast)
    assert fast_outcomes.keys() == slow_outcomes.keys()
    for head, selections in slow_outcomes.items():
        assert fast_outcomes[head] == selections, head[:300]
    # the cross-products are compact: fewer sets than combinations
    sets = sum(len(e.selections) for e in fast.verdicts)
    assert sets < fast.summary.combinations or fast.summary.combinations < 10


@pytest.fixture(scope="module")
def embedded() -> tuple[RecipesRoot, Recipe, EvidenceIndex, Declarations]:
    root = load_recipes_root(REPO / "recipes")
    recipe = load_recipe(root, "MiniMaxAI/MiniMax-M3")
    graph, declarations = load_graph(REPO / "ledger", REPO / "evidence", PolicyNormaliser())
    return root, recipe, graph, declarations


def _assert_writer_is_the_model(report: AuditReport) -> None:
    """The JSON writer's shared fragments equal the model's own serialisation."""
    out = io.StringIO()
    json_report.write(report, out)
    context = {RECORD_INDEX: report.record_index()}
    assert json.loads(out.getvalue()) == json.loads(
        report.model_dump_json(by_alias=True, context=context)
    )


@pytest.mark.slow
def test_minimax_full_cross_product(
    embedded: tuple[RecipesRoot, Recipe, EvidenceIndex, Declarations],
) -> None:
    root, recipe, graph, declarations = embedded
    slow, fast = _both([recipe], root, EnumerationOptions(), graph, declarations)
    assert fast.summary.combinations == 71_208
    assert_same_audit(slow, fast)
    _assert_writer_is_the_model(fast)
    # 8 feature choices differ only by functional flags: one set per pool block
    assert sum(len(e.selections) for e in fast.verdicts) < 71_208 / 4


@pytest.mark.slow
def test_minimax_star_pairing_all_kv_with_declarations(
    embedded: tuple[RecipesRoot, Recipe, EvidenceIndex, Declarations],
) -> None:
    root, recipe, graph, _ = embedded
    declarations = Declarations(
        declarations=(
            Declaration(
                id="pd-tools",
                match=SelectionPattern(
                    recipe="MiniMaxAI/MiniMax-M3", strategy="pd_cluster", features=("tool_calling",)
                ),
                reason="tool calling is not benchmarked",
                date=dt.date(2026, 11, 30),
            ),
            Declaration(
                id="nvfp4-blackwell",
                match=SelectionPattern(recipe="MiniMaxAI/*", hardware="b*", variant="nvfp4"),
                reason="nvfp4 on Blackwell is guide-only for now",
                date=dt.date(2026, 11, 30),
            ),
        )
    )
    options = EnumerationOptions(pd_pairing="star", kv="all", variants=("nvfp4", "bf16"))
    slow, fast = _both([recipe], root, options, graph, declarations)
    assert fast.summary.declared > 0
    assert_same_audit(slow, fast)


EDGE_RECIPE = """\
meta:
  title: Edge
  hardware: {desk1: verified}
model:
  model_id: Toy/Edge
  base_args: ["--block-size", "64", "--compilation-config", '{"mode": 1}']
variants:
  default:
    vram_minimum_gb: 90
features:
  tools:
    args: ["--tool-call-parser", "toy", "--enable-auto-tool-choice"]
  same_as_base:
    args: ["--block-size", "32"]
  config_part:
    args: ["--compilation-config.cudagraph_mode", "FULL"]
  kwargs:
    args: ["--default-chat-template-kwargs", '{"thinking": true}']
  negative:
    args: ["--seed", "-1", "--served-model-name", "x"]
  short:
    args: ["-dpl", "1", "--uvicorn-log-level", "info"]
  twice:
    args: ["--uvicorn-log-level", "warning", "--uvicorn-log-level", "error"]
compatible_strategies: [single_node_tp, multi_node_tp, pd_cluster]
"""


@pytest.fixture(scope="module")
def edge_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("edge") / "root"
    shutil.copytree(TOY_ROOT, root)
    (root / "models" / "Toy" / "Edge.yaml").write_text(EDGE_RECIPE, encoding="utf-8")
    return root


@pytest.mark.parametrize("model", ["Toy/Toy-1", "Toy/Edge"])
@pytest.mark.slow
def test_toy_roots_every_branch(edge_root: Path, model: str) -> None:
    root = load_recipes_root(edge_root)
    recipe = load_recipe(root, model)
    graph = EvidenceIndex.build([], [], PolicyNormaliser().role_major)
    options = EnumerationOptions(kv="all", pd_nodes="1,2,3,default")
    slow, fast = _both([recipe], root, options, graph)
    assert fast.summary.combinations > 100
    assert_same_audit(slow, fast)
    _assert_writer_is_the_model(fast)


def test_selection_set_expands_in_enumeration_order() -> None:
    selection_set = TypeAdapter(SelectionSet).validate_python(
        {
            "variant": "v",
            "hardware": "h",
            "strategy": "pd_cluster",
            "node_count": None,
            "features": [{"features": []}, {"features": ["a"]}],
            "pd": {
                "prefill": [{"nodes": 1, "parallelism": "tp"}],
                "decode": [
                    {"nodes": 1, "parallelism": "tp"},
                    {"nodes": 2, "parallelism": "dep"},
                ],
            },
        }
    )
    entry = VerdictEntry.of_selections(
        recipe="r", verdict=VerdictKind.GUIDE_ONLY, roles=(), selections=(selection_set,)
    )
    assert entry.combinations == 4
    labels = [s.label() for s in entry.iter_selections()]
    assert labels == [
        "v · h · pd_cluster · P1n-tp/D1n-tp",
        "v · h · pd_cluster · P1n-tp/D2n-dep",
        "v · h · pd_cluster · P1n-tp/D1n-tp · +a",
        "v · h · pd_cluster · P1n-tp/D2n-dep · +a",
    ]
    selection = next(entry.iter_selections())
    assert SelectionSet.of(selection).count == 1
    assert json.loads(TypeAdapter(SelectionSet).dump_json(SelectionSet.of(selection)))["pd"][
        "decode"
    ] == [{"nodes": 1, "parallelism": "tp"}]


@pytest.mark.slow
def test_all_recipes_star_pairing() -> None:
    import os

    given = os.environ.get("PROVENANCE_RECIPES_ROOT")
    checkout = Path(given) if given else Path("/tmp/recipes-8959cf6")
    if not (checkout / "taxonomy.yaml").is_file():
        pytest.skip("no vllm-project/recipes checkout (PROVENANCE_RECIPES_ROOT)")
    root = load_recipes_root(checkout)
    recipes = [
        load_recipe(root, str(p.relative_to(checkout)))
        for p in sorted((checkout / "models").glob("*/*.yaml"))
    ]
    graph, declarations = load_graph(REPO / "ledger", REPO / "evidence", PolicyNormaliser())
    slow, fast = _both(recipes, root, EnumerationOptions(pd_pairing="star"), graph, declarations)
    assert fast.summary.combinations > 170_000
    assert_same_audit(slow, fast)


def test_reduction_keeps_feature_args_whose_boundaries_could_move(edge_root: Path) -> None:
    from provenance.audit.declarations import DeclarationMatcher
    from provenance.audit.judge import Judge
    from provenance.audit.tally import Tally
    from provenance.audit.walks.cells import CellWalk
    from provenance.recipes.render.argv import RenderedPart

    root = load_recipes_root(edge_root)
    normaliser = PolicyNormaliser()
    graph = EvidenceIndex.build([], [], normaliser.role_major)
    tally = Tally("Toy/Edge", Judge(graph, normaliser.classify), DeclarationMatcher([]))
    cells = CellWalk(tally, normaliser, load_recipe(root, "Toy/Edge"), root)

    def reduce(tokens: list[str], names: frozenset[str] = frozenset()) -> tuple[str, ...]:
        return cells._reduce(RenderedPart.of(tokens), names)

    tools = ["--tool-call-parser", "toy", "--enable-auto-tool-choice"]
    assert reduce(tools) == ()
    assert reduce(["--speculative-config", '{"method": "a"}', *tools]) == (
        "--speculative-config",
        '{"method": "a"}',
    )
    # a value at the start (it would attach to the previous part's lone flag)
    assert reduce(["auto", *tools]) == ("auto", *tools)
    # a short flag or a negative number: the builder and the normaliser split differently
    assert reduce(["--seed", "-1", *tools]) == ("--seed", "-1", *tools)
    # the flag (or its config) is also set outside the features: dedupe/merge may interact
    assert reduce(tools, frozenset({"--tool-call-parser"})) == ("--tool-call-parser", "toy")
    kwargs = ["--default-chat-template-kwargs", "{}"]
    assert reduce(kwargs) == ()
    assert reduce(kwargs, frozenset({"default_chat_template_kwargs"})) == tuple(kwargs)
    # twice in the features: last wins between them
    twice = ["--uvicorn-log-level", "warning", "--uvicorn-log-level", "error"]
    assert reduce(twice) == tuple(twice)
