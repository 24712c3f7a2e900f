"""A KV connector changes what is served: it must be benchmarked before a combination
is recommended, and ``explain`` names every key it did not compare.

A copy of the embedded recipes root whose MiniMax-M3 recipe declares
``kv_offload_support: offloading_cpu: verified`` is audited with the KV choice
enumerated (``--kv offloading_cpu``, as the PR audit enumerates a declared option)
against one hand-made, validated evidence record of nvfp4 · b200 · single_node_tp.
Until 2026-12 ``kv_transfer_config`` was harness, so the offloading combination
was recommended from a record that ran no connector.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml
from audit_builders import entry, single_record
from click.testing import CliRunner

from provenance.audit.pipeline import AuditFilters, AuditInputs, run_audit
from provenance.audit.verdicts import AuditReport
from provenance.cli.main import cli
from provenance.model.combination import Selection
from provenance.model.flags import FlagSet
from provenance.model.reasons import VerdictKind
from provenance.normalise.canonical import normalise_argv
from provenance.normalise.policy import default_policy
from provenance.recipes.load.loader import load_recipe, load_recipes_root
from provenance.recipes.render.synthesis import render
from provenance.store.evidence import EvidenceStore
from provenance.store.ledger import Ledger

EMBEDDED = Path(__file__).resolve().parents[2] / "recipes"
RECIPE = "MiniMaxAI/MiniMax-M3"
RECIPE_FILE = "models/MiniMaxAI/MiniMax-M3.yaml"
KV = "offloading_cpu"
FILTERS = AuditFilters(
    variants=("nvfp4",), hardware=("b200",), strategies=("single_node_tp",), features="none", kv=KV
)
CONNECTOR = "kv_transfer_config.kv_connector"


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The embedded recipes root, its MiniMax-M3 recipe declaring CPU KV offload verified."""
    root = tmp_path_factory.mktemp("kv") / "recipes"
    shutil.copytree(EMBEDDED, root)
    path = root / RECIPE_FILE
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    data["kv_offload_support"] = {KV: "verified"}
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return root


def _rendered(root: Path, kv: str | None) -> FlagSet:
    recipes = load_recipes_root(root)
    selection = Selection(
        variant="nvfp4", hardware="b200", strategy="single_node_tp", node_count=1, kv_offload=kv
    )
    serve = render(load_recipe(recipes, RECIPE), recipes, selection).roles[0]
    return normalise_argv(list(serve.argv or ()), serve.env).flags


def _store(tmp_path: Path, *served: FlagSet) -> tuple[Path, Path]:
    """A ledger and evidence store of validated records, one per FlagSet."""
    ledger, evidence = tmp_path / "ledger", tmp_path / "evidence"
    ledger.mkdir()
    evidence.mkdir()
    template = single_record("minimaxm3-fp4-b200-vllm", "")
    records = [
        template.model_copy(update={"roles": {"serve": flags}}).with_id() for flags in served
    ]
    for record in records:
        EvidenceStore(evidence).put(record)
    Ledger(ledger).write_entry(entry(2120, *records))
    return ledger, evidence


def _audit(root: Path, ledger: Path, evidence: Path) -> AuditReport:
    inputs = AuditInputs(recipes=(RECIPE,), recipes_root=root, ledger=ledger, evidence=evidence)
    return run_audit(inputs, FILTERS)


def _by_kv(report: AuditReport) -> dict[str | None, VerdictKind]:
    verdicts: dict[str | None, VerdictKind] = {}
    for verdict in report.verdicts:
        for selection_set in verdict.selections:
            assert selection_set.kv_offload not in verdicts
            verdicts[selection_set.kv_offload] = verdict.verdict
    return verdicts


def test_the_recipe_renders_a_kv_connector(root: Path) -> None:
    """The premise: the offloading combination differs from the plain one only by the
    connector's configuration."""
    plain, offload = _rendered(root, None), _rendered(root, KV)
    added = {k for k in offload if k not in plain}
    assert CONNECTOR in added
    assert added <= {k for k in offload if k.startswith("kv_transfer_config")}
    assert offload.without(added) == plain


def test_no_combination_with_a_connector_is_recommended_without_a_connector_run(
    root: Path, tmp_path: Path
) -> None:
    ledger, evidence = _store(tmp_path, _rendered(root, None))
    report = _audit(root, ledger, evidence)
    verdicts = _by_kv(report)
    assert verdicts == {None: VerdictKind.RECOMMENDED, KV: VerdictKind.GUIDE_ONLY}
    offload = next(v for v in report.verdicts if v.verdict is VerdictKind.GUIDE_ONLY)
    assert CONNECTOR in {reason.flag for reason in offload.reasons}
    assert not next(v for v in report.verdicts if v.verdict is VerdictKind.RECOMMENDED).reasons


def test_a_run_with_the_same_connector_recommends_it(root: Path, tmp_path: Path) -> None:
    """The same connector, sizes and tiers: recommended, even with other plumbing (the
    transfer direction, an LMCache-style port) — which is why the key list is fine."""
    ran = dict(_rendered(root, KV))
    ran["kv_transfer_config.kv_role"] = "kv_producer"
    ran["kv_transfer_config.kv_port"] = "14579"
    ledger, evidence = _store(tmp_path, FlagSet(ran))
    assert _by_kv(_audit(root, ledger, evidence))[KV] is VerdictKind.RECOMMENDED


def test_another_offload_size_is_not_the_same_run(root: Path, tmp_path: Path) -> None:
    ran = dict(_rendered(root, KV))
    ran["kv_transfer_config.kv_connector_extra_config.cpu_bytes_to_use"] = "1099511627776"
    ledger, evidence = _store(tmp_path, FlagSet(ran))
    assert _by_kv(_audit(root, ledger, evidence))[KV] is VerdictKind.GUIDE_ONLY


def test_explain_names_every_key_it_did_not_compare(root: Path, tmp_path: Path) -> None:
    ran = dict(_rendered(root, None))
    ran["max_num_seqs"] = "64"  # tuning
    ran["env:VLLM_ENGINE_READY_TIMEOUT_S"] = "3600"  # harness
    ran["kv_transfer_config.kv_role"] = "kv_both"  # harness, though its connector is absent
    ledger, evidence = _store(tmp_path, FlagSet(ran))
    args = [
        *("explain", RECIPE, "--recipes-root", str(root), "--ledger", str(ledger)),
        *("--evidence", str(evidence), "--variant", "nvfp4", "--hardware", "b200"),
        *("--strategy", "single_node_tp", "--kv", KV),
    ]
    result = CliRunner().invoke(cli, [*args, "--format", "json"])
    assert result.exit_code == 0, result.output
    explained = json.loads(result.output)
    assert explained["verdict"] == "guide-only"
    ignored = {(item["key"], item["class"]): item for item in explained["not_compared"]}
    assert ignored[("max_num_seqs", "tuning")]["evidence"] == ["64"]
    assert ignored[("max_num_seqs", "tuning")]["recipe"] == []
    assert ignored[("env:VLLM_ENGINE_READY_TIMEOUT_S", "harness")]["evidence_points"] == 1
    role = ignored[("kv_transfer_config.kv_role", "harness")]
    assert role["recipe"] == ["kv_both"] and role["evidence"] == ["kv_both"]
    # every not-major key of the rendered command is named, on the recipe side
    offload = _rendered(root, KV)
    not_major = {k for k in offload if default_policy().classify(k).value != "major"}
    assert not_major <= {key for key, _ in ignored}
    assert CONNECTOR not in {key for key, _ in ignored}  # the connector was compared
    text = CliRunner().invoke(cli, args)
    assert text.exit_code == 0, text.output
    assert "max_num_seqs (tuning): recipe unset; evidence 1 of 1 point(s): 64" in text.output
    assert "kv_transfer_config.kv_role (harness): recipe kv_both;" in text.output
