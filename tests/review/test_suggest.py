"""``provenance suggest``: round-trip edits, git-applicable diffs, proofs by re-audit.

The end-to-end tests run the real command on the embedded MiniMax-M3 recipe and on the
recipes #682 revision (``../shared/corpus``), apply the printed diff with ``git apply``
in a real repository, audit the result again and compare every combination with the
original audit; the site's own builder (the oracle, when node and a recipes checkout
are at hand) renders the edited recipe exactly as the port does.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from pydantic import TypeAdapter

from provenance.audit.pipeline import AuditFilters, AuditInputs, run_audit
from provenance.report.suggest import write
from provenance.review.suggest.edits import AddFlag, Edit, RemoveFlag, SetTp, apply_edit
from provenance.review.suggest.edits import unified_diff as make_diff
from provenance.review.suggest.model import Suggestion, SuggestReport
from provenance.review.suggest.proof import outcomes, reachable_points
from provenance.review.suggest.run import SuggestRequest, run_suggest

REPO = Path(__file__).resolve().parents[2]
EMBEDDED = REPO / "recipes"
MODEL = "models/MiniMaxAI/MiniMax-M3.yaml"
HISTORY = REPO.parent / "shared" / "corpus" / "recipes-history" / "MiniMax-M3"
PR682 = HISTORY / "2026-07-27_83ff280_pr682.yaml"
ORACLE = REPO.parent / "shared" / "tools" / "recipes-oracle"
CHECKOUT = Path("/tmp/recipes-8959cf6")


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=cwd, check=True, capture_output=True, text=True
    ).stdout


def _repo(tmp: Path, model_text: str | None = None) -> Path:
    root = tmp / "recipes"
    shutil.copytree(EMBEDDED, root)
    if model_text is not None:
        (root / MODEL).write_text(model_text, encoding="utf-8")
    _git(root, "init", "-q")
    _git(root, "add", "-A")
    _git(root, "-c", "user.name=t", "-c", "user.email=t@example.invalid", "commit", "-qm", "base")
    return root


# --------------------------------------------------------------------------- edits


EDIT = Edit(
    ops=(
        RemoveFlag(
            path=("variants", "mxfp8", "extra_args"), flag="--attention_config.indexer_kv_dtype"
        ),
        AddFlag(
            path=("variants", "mxfp8", "hardware_overrides", "b200", "extra_args"),
            tokens=("--attention_config.indexer_kv_dtype", "fp8"),
        ),
        AddFlag(
            path=("variants", "nvfp4", "hardware_overrides", "b300", "extra_env"),
            tokens=("VLLM_X", "1"),
            env=True,
        ),
        SetTp(variant="nvfp4", hardware="b300", tp=2),
    )
)


@pytest.mark.parametrize("source", [EMBEDDED / MODEL, PR682], ids=["embedded", "pr682"])
def test_edit_keeps_every_untouched_line(source: Path) -> None:
    if not source.is_file():
        pytest.skip("../shared/corpus is absent")
    text = source.read_text(encoding="utf-8")
    edited = apply_edit(text, EDIT)
    diff = make_diff(text, edited, MODEL)
    lines = diff.splitlines()
    removed = [x for x in lines if x.startswith("-") and not x.startswith("---")]
    added = [x for x in lines if x.startswith("+") and not x.startswith("+++")]
    assert len(removed) == 3 and all(
        "indexer_kv_dtype" in x or "fp8" in x or "extra_args" in x for x in removed
    )
    assert any("VLLM_X" in x for x in added) and any("b300: 2" in x for x in added)
    # every comment of the original survives
    comments = [x for x in text.splitlines() if x.lstrip().startswith("#")]
    assert all(c in edited.splitlines() for c in comments)


def test_edited_text_loads_and_renders_the_edit(tmp_path: Path) -> None:
    from provenance.model.combination import Selection
    from provenance.recipes.load.loader import load_recipe, load_recipes_root
    from provenance.recipes.render.synthesis import render

    root = _repo(tmp_path)
    (root / MODEL).write_text(apply_edit((root / MODEL).read_text(), EDIT), encoding="utf-8")
    recipes = load_recipes_root(root)
    recipe = load_recipe(recipes, "MiniMaxAI/MiniMax-M3")
    nvfp4 = render(
        recipe,
        recipes,
        Selection(variant="nvfp4", hardware="b300", strategy="single_node_tp", node_count=1),
    ).roles[0]
    assert nvfp4.argv is not None and nvfp4.argv[-2:] == ("--tensor-parallel-size", "2")
    assert nvfp4.env["VLLM_X"] == "1"
    h200 = render(
        recipe,
        recipes,
        Selection(variant="mxfp8", hardware="h200", strategy="single_node_tp", node_count=1),
    ).roles[0]
    assert h200.argv is not None and "--attention_config.indexer_kv_dtype" not in h200.argv


def test_diff_applies_with_git(tmp_path: Path) -> None:
    root = _repo(tmp_path)
    text = (root / MODEL).read_text()
    patch = tmp_path / "fix.patch"
    patch.write_text(make_diff(text, apply_edit(text, EDIT), MODEL), encoding="utf-8")
    _git(root, "apply", "--check", str(patch))
    _git(root, "apply", str(patch))
    assert (root / MODEL).read_text() == apply_edit(text, EDIT)


def test_places_are_found_under_the_key_the_audit_compares() -> None:
    """A verdict names an aliased knob by its canonical key (``Policy.effective``); the
    recipe's env spelling of it is found there, so suggest can drop or change it."""
    from provenance.normalise.policy import default_policy
    from provenance.recipes.locate import flag_places
    from provenance.review.suggest.search import by_canonical_key

    data = {
        "variants": {
            "nvfp4": {
                "extra_env": {"VLLM_MINIMAX_M3_MSA_DECODE_BACKEND": "cutlass"},
                "extra_args": ["--attention-backend", "FLASHINFER", "--block-size", "128"],
            }
        }
    }
    places = by_canonical_key(flag_places(data), default_policy().aliases.canonical)
    decode = places["attention_config.minimax_m3_msa_decode_backend"]
    assert [(p.container, p.is_env, p.value) for p in decode] == [
        (("variants", "nvfp4", "extra_env"), True, "cutlass")
    ]
    backend = places["attention_config.backend"]
    assert backend[0].tokens[0] == "--attention-backend" and backend[0].value == "FLASHINFER"
    assert "env:VLLM_MINIMAX_M3_MSA_DECODE_BACKEND" not in places and "block_size" in places


def test_distance_counts_only_towards_evidence_the_recipe_can_render() -> None:
    """A combination whose nearest evidence point has a shape no recipe edit can render
    (``expressibility_problems``) has no distance to grow or shrink."""
    from provenance.audit.verdicts import (
        AuditReport,
        AuditSummary,
        NearestEvidence,
        VerdictEntry,
    )
    from provenance.model.combination import Selection
    from provenance.model.reasons import VerdictKind

    def entry(record: str, distance: int) -> VerdictEntry:
        return VerdictEntry.of_selections(
            recipe="MiniMaxAI/MiniMax-M3",
            selections=[
                Selection(variant="nvfp4", hardware="b300", strategy="single_node_tp", node_count=1)
            ],
            verdict=VerdictKind.GUIDE_ONLY,
            roles=(),
            nearest=(
                NearestEvidence(record=record, config_key="c", role="serve", distance=distance),
            ),
        )

    summary = AuditSummary(
        combinations=1, recommended=0, guide_only=1, declared=0, undeclared_guide_only=1
    )
    report = AuditReport(
        tool_version="t",
        recipes=("MiniMaxAI/MiniMax-M3",),
        summary=summary,
        verdicts=(entry("sha256:reachable", 2),),
    )
    plain = outcomes(report)
    assert [o.distance for o in plain.values()] == [2]
    only = {"sha256:reachable"}
    assert [o.distance for o in outcomes(report, lambda r, hw: r in only).values()] == [2]
    assert [o.distance for o in outcomes(report, lambda r, hw: False).values()] == [None]


# --------------------------------------------------------------------------- end to end


WHOLE = AuditFilters()


@pytest.fixture(scope="module")
def embedded_report() -> SuggestReport:
    return run_suggest(SuggestRequest(recipe="MiniMaxAI/MiniMax-M3"))


def _audit(root: Path, filters: AuditFilters = WHOLE) -> object:
    return run_audit(AuditInputs(recipes=(MODEL,), recipes_root=root), filters)


def test_merged_moves_scope_each_value_to_its_hardware() -> None:
    """Two edits each move the cutlass decode backend out of ``variants.nvfp4.extra_args``
    for the hardware they were built for (B200, B300) and write it back for the rest:
    merged, it is written back for neither, and each keeps its own blocks."""
    from provenance.review.suggest.edits import merge_edits

    base = ("variants", "nvfp4")
    drop = RemoveFlag(path=(*base, "extra_args"), flag="--decode-backend")

    def back(hw: str) -> AddFlag:
        return AddFlag(
            path=(*base, "hardware_overrides", hw, "extra_args"),
            tokens=("--decode-backend", "cutlass"),
        )

    def own(hw: str) -> AddFlag:
        return AddFlag(path=(*base, "hardware_overrides", hw, "extra_args"), tokens=("--lm-only",))

    for_b200 = Edit(ops=(drop, own("b200"), back("b300"), back("gb200")))
    for_b300 = Edit(
        ops=(
            drop,
            own("b300"),
            SetTp(variant="nvfp4", hardware="b300", tp=4),
            back("b200"),
            back("gb200"),
        )
    )
    merged = merge_edits([for_b200, for_b300])
    assert merged.ops == (
        drop,
        own("b200"),
        back("gb200"),
        own("b300"),
        SetTp(variant="nvfp4", hardware="b300", tp=4),
    )
    # edits that share nothing are simply joined
    other = Edit(ops=(AddFlag(path=("variants", "mxfp8", "extra_args"), tokens=("--x",)),))
    assert merge_edits([for_b200, other]).ops == (*for_b200.ops, *other.ops)
    # an edit that adds the flag on purpose (not moving it) keeps its addition
    on_purpose = Edit(ops=(back("b300"),))
    assert back("b300") in merge_edits([for_b200, for_b300, on_purpose]).ops


def _applied(report: SuggestReport) -> Suggestion:
    """The edit the end-to-end tests apply: the proposal (free edits only), else the first
    clean edit that reaches evidence (shown with its cost, proven all the same)."""
    return report.combined or next(
        s for s in report.suggestions if s.kind == "reach" and s.proof.clean and s.proof.gained
    )


def test_suggest_on_embedded_minimax_makes_some_recommended(embedded_report: SuggestReport) -> None:
    report = embedded_report
    assert report.recommended == 0
    reach = [s for s in report.suggestions if s.kind == "reach" and s.proof.clean]
    assert reach and all(s.proof.gained > 0 for s in reach)
    # B200 (#2611) and B300 (#2328, #2610) each reach their agentic MTP run
    gained = {(c.variant, c.hardware, c.strategy) for s in reach for c in s.proof.gained_cells}
    assert {("nvfp4", hw, "single_node_tp") for hw in ("b200", "b300")} <= gained
    # the combination keeps every chosen edit's gain: what each one makes recommended
    # stays recommended together (edits that would cancel one are left out, named)
    chosen = [s for s in report.suggestions if s.proof.free and not s.conflicts_with]
    if report.combined is not None:
        assert report.combined.proof.free
        combined = {
            (c.variant, c.hardware, c.strategy): c.combinations
            for c in report.combined.proof.gained_cells
        }
        for item in chosen:
            for cell in item.proof.gained_cells:
                assert combined[(cell.variant, cell.hardware, cell.strategy)] >= cell.combinations
        assert report.combined.proof.gained >= max(s.proof.gained for s in chosen)
    for item in report.suggestions:
        assert set(item.conflicts_with) <= {s.id for s in chosen}
    # an edit that costs is shown with exactly what it costs
    for item in report.suggestions:
        if not item.proof.clean:
            assert (
                sum(c.combinations for c in item.proof.costs) == item.proof.lost + item.proof.worse
            )


def test_applied_diff_re_audits_as_proven(embedded_report: SuggestReport, tmp_path: Path) -> None:
    """The printed diffs, applied with `git apply`, give the audit what their proofs
    promised: the proposal (free edits only: the two FP8 indexer scopes) exactly the
    combinations it brings closer, and the first clean edit that reaches evidence some
    combinations recommended; none loses its recommendation or moves away from evidence
    the recipe could render."""
    from provenance.audit.pipeline import EvidenceCache, default_inputs, recipe_model_ids
    from provenance.recipes.load.loader import load_recipe, load_recipes_root

    reach = next(
        s
        for s in embedded_report.suggestions
        if s.kind == "reach" and s.proof.clean and s.proof.gained
    )
    proposal = embedded_report.combined
    assert proposal is not None and proposal.proof.free
    for at, applied in enumerate((proposal, reach)):
        root = _repo(tmp_path / str(at))
        resolved = default_inputs(AuditInputs(recipes=(MODEL,), recipes_root=root))
        recipes = load_recipes_root(root)
        model_ids = recipe_model_ids([load_recipe(recipes, "MiniMaxAI/MiniMax-M3")])
        graph = EvidenceCache().load(resolved.ledger, resolved.evidence, model_ids).graph
        profiles = recipes.taxonomy.hardware_profiles or {}
        gpus = {hw: p.gpu_count for hw, p in profiles.items() if p is not None and p.gpu_count}
        reachable = reachable_points(graph, gpus)
        before = outcomes(_audit(root), reachable)  # type: ignore[arg-type]
        (tmp_path / f"fix{at}.patch").write_text(applied.diff, encoding="utf-8")
        _git(root, "apply", str(tmp_path / f"fix{at}.patch"))
        after = outcomes(_audit(root), reachable)  # type: ignore[arg-type]
        assert before.keys() == after.keys()
        gained = [k for k in after if after[k].recommended and not before[k].recommended]
        lost = [k for k in after if before[k].recommended and not after[k].recommended]
        moved = [
            (k, before[k].distance, after[k].distance)
            for k in after
            if not after[k].recommended and not before[k].recommended
        ]
        worse = [k for k, old, new in moved if old is not None and new is not None and new > old]
        closer = [k for k, old, new in moved if old is not None and new is not None and new < old]
        assert len(gained) == applied.proof.gained
        assert len(closer) == applied.proof.better
        assert not lost and not worse
    assert reach.proof.gained > 0 and proposal.proof.better > 0


def test_text_json_markdown(embedded_report: SuggestReport) -> None:
    import io

    for fmt in ("text", "json", "markdown"):
        out = io.StringIO()
        write(embedded_report, fmt, out)
        text = out.getvalue()
        assert "MiniMax-M3" in text
    out = io.StringIO()
    write(embedded_report, "json", out)
    data = json.loads(out.getvalue())
    assert data["schema"] == "provenance.suggest/v1"
    out = io.StringIO()
    write(embedded_report, "markdown", out)
    proposed = embedded_report.combined is not None or any(
        s.proof.free for s in embedded_report.suggestions
    )
    assert ("```diff" in out.getvalue()) == proposed and len(out.getvalue()) < 65_536
    if not proposed:
        assert "No edit reaches validated evidence without a cost" in out.getvalue()


def test_suggest_on_recipes_pr682_scopes_the_fp8_indexer(tmp_path: Path) -> None:
    """At recipes #682 the FP8 indexer was written for every hardware of mxfp8 and
    nvfp4. suggest scopes the mxfp8 one to Blackwell (where InferenceX ran it) and says
    why nvfp4's cannot be scoped: within B200 and B300 the evidence splits by
    spec_decoding, which no recipe layer can follow for one variant."""
    if not PR682.is_file():
        pytest.skip("../shared/corpus is absent")
    root = _repo(tmp_path, PR682.read_text(encoding="utf-8"))
    report = run_suggest(SuggestRequest(recipe="MiniMaxAI/MiniMax-M3", recipes_root=root))
    scoped = [
        s
        for s in report.suggestions
        if s.kind == "scope" and "attention_config.indexer_kv_dtype" in s.title
    ]
    assert scoped and scoped[0].proof.clean and scoped[0].proof.better > 0
    ops = scoped[0].ops
    assert (
        RemoveFlag(
            path=("variants", "mxfp8", "extra_args"), flag="--attention_config.indexer_kv_dtype"
        )
        in ops
    )
    assert any(
        isinstance(op, AddFlag) and op.path[:3] == ("variants", "mxfp8", "hardware_overrides")
        for op in ops
    )
    gap = next(
        g
        for g in report.inexpressible
        if g.variant == "nvfp4" and g.flag == "attention_config.indexer_kv_dtype"
    )
    assert "on b200 the nearest evidence sets it for" in gap.why and "lacks it for" in gap.why
    # and the scoping diff applies
    patch = tmp_path / "scope.patch"
    patch.write_text(scoped[0].diff, encoding="utf-8")
    _git(root, "apply", "--check", str(patch))


@pytest.mark.skipif(
    shutil.which("node") is None
    or not (ORACLE / "node_modules").is_dir()
    or not (CHECKOUT / "src" / "lib" / "command-synthesis.js").is_file(),
    reason="needs node, the recipes oracle and a recipes checkout at 8959cf6",
)
def test_site_builder_renders_the_suggested_recipe_as_the_port_does(
    embedded_report: SuggestReport, tmp_path: Path
) -> None:
    from provenance.model.combination import Selection
    from provenance.recipes.load.loader import load_recipe, load_recipes_root
    from provenance.recipes.render.synthesis import render

    best = _applied(embedded_report)
    root = _repo(tmp_path)
    (tmp_path / "fix.patch").write_text(best.diff, encoding="utf-8")
    _git(root, "apply", str(tmp_path / "fix.patch"))
    edited = (root / MODEL).resolve()
    variants = sorted({op.path[1] for op in best.ops if op.path[0] == "variants"})
    run = subprocess.run(
        [
            "node",
            "enumerate.mjs",
            str(CHECKOUT),
            str(edited),
            "--features",
            "default",
            "--variant",
            ",".join(variants),
            "--pd-nodes",
            "1",
        ],
        cwd=ORACLE,
        check=True,
        capture_output=True,
        text=True,
    )
    recipes = load_recipes_root(root)
    recipe = load_recipe(recipes, "MiniMaxAI/MiniMax-M3")
    records = [json.loads(line) for line in run.stdout.splitlines() if line.strip()]
    assert records
    for record in records:
        selection = TypeAdapter(Selection).validate_python(record["selection"])
        ours = render(recipe, recipes, selection)
        theirs = record["result"]["roles"]
        assert [list(r.argv or ()) for r in ours.roles] == [r["argv"] for r in theirs]
        assert [{k: str(v) for k, v in r.env.items()} for r in ours.roles] == [
            {k: str(v) for k, v in r["env"].items()} for r in theirs
        ]
