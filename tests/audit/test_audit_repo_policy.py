"""The audit, explain and suggest judge under the recipes root's own policy.

A copy of the embedded recipes root is audited against one hand-made evidence record
of nvfp4 · b200 · single_node_tp; a ``provenance.toml`` (or ``pyproject.toml``) in the
copy overriding a class, an alias or a context rule changes the verdict, and a bad
policy file stops the audit naming its file and line (exit 3).
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from provenance.audit.pipeline import AuditFilters, AuditInputs, EvidenceCache, run_audit
from provenance.cli.main import cli
from provenance.errors import EXIT_INPUT
from provenance.model.combination import Selection
from provenance.model.flags import FlagSet
from provenance.model.ledger import LedgerEntry, PrRef, SweepRun
from provenance.model.reasons import VerdictKind
from provenance.model.record import (
    EvidenceRecord,
    EvidenceSource,
    RoleTopology,
    SourceFile,
    Topology,
    WorkloadPoint,
)
from provenance.normalise.canonical import normalise_argv
from provenance.normalise.policy import default_policy, load_policy
from provenance.recipes.load.loader import load_recipe, load_recipes_root
from provenance.recipes.render.synthesis import render
from provenance.store.evidence import EvidenceStore
from provenance.store.ledger import Ledger

EMBEDDED = Path(__file__).resolve().parents[2] / "recipes"
RECIPE = "MiniMaxAI/MiniMax-M3"
RECIPE_FILE = "models/MiniMaxAI/MiniMax-M3.yaml"
TRTLLM = "attention_config.use_trtllm_attention"
DECODE_KEY = "attention_config.minimax_m3_msa_decode_backend"
DECODE_ENV = "env:VLLM_MINIMAX_M3_MSA_DECODE_BACKEND"
FILTERS = AuditFilters(
    variants=("nvfp4",), hardware=("b200",), strategies=("single_node_tp",), features="none"
)
SELECTION = ["--variant", "nvfp4", "--hardware", "b200", "--strategy", "single_node_tp"]
SELECT = [*SELECTION, "--features", "none"]


def _rendered_flags() -> FlagSet:
    root = load_recipes_root(EMBEDDED)
    recipe = load_recipe(root, RECIPE)
    selection = Selection(variant="nvfp4", hardware="b200", strategy="single_node_tp", node_count=1)
    serve = render(recipe, root, selection).roles[0]
    return normalise_argv(list(serve.argv or ()), serve.env).flags


def _record(flags: FlagSet) -> EvidenceRecord:
    return EvidenceRecord(
        source=EvidenceSource(
            commit="7a428f813f26fb3db96c4746f8ab72bd6a7b3a16",
            files=(SourceFile(path="benchmarks/x.sh", blob_sha="1" * 40, kind="launcher"),),
        ),
        config_key="minimaxm3-fp4-b200-vllm",
        checkpoint="nvidia/MiniMax-M3-NVFP4",
        hardware="b200",
        framework="vllm",
        topology=Topology(
            kind="single_node",
            roles={"serve": RoleTopology(gpus_per_worker=8, tp=8)},
            gpus_per_node=8,
            total_gpus=8,
        ),
        workloads=(WorkloadPoint(isl=8192, osl=1024, conc=64),),
        roles={"serve": flags},
    ).with_id()


Setup = Callable[[Callable[[FlagSet], FlagSet]], tuple[Path, Path, Path]]


@pytest.fixture
def setup(tmp_path: Path) -> Setup:
    """A recipes root copy and a ledger/evidence pair holding one record: the rendered
    command's flags, edited by the given function."""

    def make(edit: Callable[[FlagSet], FlagSet]) -> tuple[Path, Path, Path]:
        root = tmp_path / "recipes"
        shutil.copytree(EMBEDDED, root, ignore=shutil.ignore_patterns("models"))
        (root / RECIPE_FILE).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(EMBEDDED / RECIPE_FILE, root / RECIPE_FILE)
        ledger, evidence = tmp_path / "ledger", tmp_path / "evidence"
        ledger.mkdir()
        evidence.mkdir()
        record = _record(edit(_rendered_flags()))
        EvidenceStore(evidence).put(record)
        Ledger(ledger).write_entry(
            LedgerEntry(
                pr=PrRef(repo="SemiAnalysisAI/InferenceX", number=2120),
                title="hand-made",
                records=(record.id,),
                sweeps=(
                    SweepRun(
                        run_id=29984401390,
                        head_sha="0b896e92f975d0ef8e374fdc284b06444fc95242",
                        conclusion="success",
                        source="review-thread",
                    ),
                ),
            )
        )
        return root, ledger, evidence

    return make


def _verdict(root: Path, ledger: Path, evidence: Path) -> VerdictKind:
    report = run_audit(
        AuditInputs(recipes=(RECIPE,), recipes_root=root, ledger=ledger, evidence=evidence),
        FILTERS,
    )
    assert report.summary.combinations == 1
    return report.verdicts[0].verdict


def _without_trtllm(flags: FlagSet) -> FlagSet:
    return flags.without([TRTLLM])


def _env_spelling(flags: FlagSet) -> FlagSet:
    """The decode backend spelled as its environment variable, as some launchers do."""
    items = {k: v for k, v in flags.items() if k != DECODE_KEY}
    items[DECODE_ENV] = flags[DECODE_KEY]
    return FlagSet(items)


def test_a_class_override_changes_the_verdict(setup: Setup) -> None:
    root, ledger, evidence = setup(_without_trtllm)
    assert _verdict(root, ledger, evidence) is VerdictKind.GUIDE_ONLY
    (root / "provenance.toml").write_text(f'[policy]\n"{TRTLLM}" = "tuning"\n')
    assert _verdict(root, ledger, evidence) is VerdictKind.RECOMMENDED


def test_a_class_override_in_pyproject_changes_the_verdict(setup: Setup) -> None:
    root, ledger, evidence = setup(_without_trtllm)
    (root / "pyproject.toml").write_text(f'[tool.provenance.policy]\n"{TRTLLM}" = "tuning"\n')
    assert _verdict(root, ledger, evidence) is VerdictKind.RECOMMENDED


def test_a_context_rule_of_the_repository_changes_the_verdict(setup: Setup) -> None:
    root, ledger, evidence = setup(_without_trtllm)
    (root / "provenance.toml").write_text(
        f'[context.trtllm-inert]\nkeys = "{TRTLLM}"\nroles = ["serve"]\n'
        'basis = "hand-made: the test says so"\n'
    )
    assert _verdict(root, ledger, evidence) is VerdictKind.RECOMMENDED


def test_dropping_an_alias_changes_the_verdict(setup: Setup) -> None:
    root, ledger, evidence = setup(_env_spelling)
    assert _verdict(root, ledger, evidence) is VerdictKind.RECOMMENDED
    (root / "provenance.toml").write_text(f'[aliases]\n"{DECODE_KEY}" = []\n')
    assert _verdict(root, ledger, evidence) is VerdictKind.GUIDE_ONLY


def test_one_cache_keeps_the_graphs_of_two_policies_apart(setup: Setup) -> None:
    """A shared cache (a PR audit's two sides) reloads under another policy."""
    root, ledger, evidence = setup(_without_trtllm)
    (root / "provenance.toml").write_text(f'[policy]\n"{TRTLLM}" = "tuning"\n')
    policy = load_policy(root)
    assert policy.digest != default_policy().digest
    assert load_policy(root).digest == policy.digest
    cache = EvidenceCache()
    first = cache.load(ledger, evidence, {"nvidia/MiniMax-M3-NVFP4"}, policy)
    assert cache.load(ledger, evidence, {"nvidia/MiniMax-M3-NVFP4"}, policy) is first
    other = cache.load(ledger, evidence, {"nvidia/MiniMax-M3-NVFP4"})
    assert other is not first
    assert other.normaliser.policy is default_policy()


def test_explain_uses_the_policy_of_the_recipes_root(setup: Setup) -> None:
    root, ledger, evidence = setup(_without_trtllm)
    args = [
        *("explain", RECIPE, "--recipes-root", str(root)),
        *("--ledger", str(ledger), "--evidence", str(evidence), *SELECTION, "--format", "json"),
    ]
    before = CliRunner().invoke(cli, args)
    assert before.exit_code == 0, before.output
    assert json.loads(before.output)["verdict"] == "guide-only"
    (root / "provenance.toml").write_text(f'[policy]\n"{TRTLLM}" = "tuning"\n')
    after = CliRunner().invoke(cli, args)
    assert after.exit_code == 0, after.output
    assert json.loads(after.output)["verdict"] == "recommended"


@pytest.mark.parametrize(
    ("text", "line"),
    [
        (f'# the repository policy\n[policy]\n"{TRTLLM}" = "tuning"\n"x" = "bogus"\n', 4),
        ('[context.mine]\nkeys = "x"\n\nroles = "decode"\n', 4),
        ("[policy]\nx = = 1\n", 2),
    ],
)
def test_a_bad_policy_file_stops_the_audit_naming_file_and_line(
    setup: Setup, text: str, line: int
) -> None:
    root, ledger, evidence = setup(_without_trtllm)
    (root / "provenance.toml").write_text(text)
    result = CliRunner().invoke(
        cli,
        [
            *("audit", RECIPE, "--recipes-root", str(root)),
            *("--ledger", str(ledger), "--evidence", str(evidence), *SELECT),
        ],
    )
    assert result.exit_code == EXIT_INPUT, result.output
    assert f"provenance.toml:{line}" in result.output
    assert "Traceback" not in result.output


def test_suggest_proves_its_edits_under_the_policy_of_the_recipes_root(setup: Setup) -> None:
    """``Prover`` re-audits an edited copy of the root: the copy keeps the root's policy."""
    from provenance.review.suggest.proof import Prover

    root, ledger, evidence = setup(_without_trtllm)
    (root / "provenance.toml").write_text(f'[policy]\n"{TRTLLM}" = "tuning"\n')
    inputs = AuditInputs(recipes=(RECIPE,), recipes_root=root, ledger=ledger, evidence=evidence)
    shared = EvidenceCache()
    baseline = run_audit(inputs, FILTERS, shared)
    assert baseline.verdicts[0].verdict is VerdictKind.RECOMMENDED
    text = (root / RECIPE_FILE).read_text()
    with Prover(root, root / RECIPE_FILE, ledger, evidence, FILTERS, shared, baseline) as prover:
        assert (prover.root / "provenance.toml").is_file()
        proof, report = prover.prove(text, None)
    assert report.verdicts[0].verdict is VerdictKind.RECOMMENDED
    assert proof.lost == 0
