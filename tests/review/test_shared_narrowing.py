"""A PR whose shared-file change is limited to some hardware profiles of ``taxonomy.yaml``
or to some ``strategies/`` audits the recipes it does not touch on those only
(:func:`provenance.review.pr_audit.shared_change`). The claim that no other combination
can change is checked here on real merged recipes PRs: the narrowed diff must be the
diff of two whole audits, change for change, claim for claim, gate for gate.

Needs a clone of vllm-project/recipes with its history: ``$PROVENANCE_RECIPES_GIT``
(bare or not), else ``../.mirror/vllm-project+recipes/repo`` beside the checkout."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from recipes_repo import EMBEDDED
from recipes_support import recipes_git

from provenance.audit.pipeline import AuditFilters
from provenance.review import pr_audit
from provenance.review.pr_audit import (
    PrAuditRequest,
    SharedChange,
    documentation_only,
    run_pr_audit,
    shared_change,
)

#: real merged recipes PRs (first-parent commits of 8959cf6) changing shared files only
#: in the way named, with the recipes each touches
REAL = [
    ("d10bdb28b", "hardware", "Fix DGX station memory (#488): one profile, no recipe"),
    ("654e011ab", "hardware", "Add RTX Pro 6000 recipes (#648): two profiles, 3 recipes"),
    ("31e22ed86", "strategies", "Remove --no-async-scheduling from pd_cluster (#483)"),
    ("141e8fb7e", "strategies", "Default socket iface env for multi-node (4 strategies)"),
    ("be27f916b", "KV offload", "Fix Simple CPU offload boolean (#746): one KV option"),
    ("7d3c39fcc", "KV offload", "Add OffloadingConnector options (#704): options and groups"),
    ("5e93cbed6", "prose only", "Sort latest recipes by catalog date (#686): 151 recipes"),
    ("2040085ba", "strategies", "Opt-in grants (#759): one strategy listed, 3 recipes"),
]


def _same(narrowed: pr_audit.PrAuditResult, whole: pr_audit.PrAuditResult) -> None:
    def changes(result: pr_audit.PrAuditResult) -> dict[object, object]:
        return {(c.recipe, c.selection): c for c in result.diff.iter_changes()}

    assert changes(narrowed) == changes(whole)
    assert narrowed.diff.claims == whole.diff.claims
    assert narrowed.diff.claims_reported == whole.diff.claims_reported
    assert narrowed.diff.gate.model_dump() == whole.diff.gate.model_dump()
    assert narrowed.diff.lens == whole.diff.lens
    assert narrowed.diff.tuning == whole.diff.tuning
    assert narrowed.diff.errors == whole.diff.errors


@pytest.mark.slow
@pytest.mark.parametrize(("commit", "kind", "what"), REAL, ids=[c for c, _, _ in REAL])
def test_a_narrowed_shared_change_gives_the_diff_of_two_whole_audits(
    monkeypatch: pytest.MonkeyPatch, commit: str, kind: str, what: str
) -> None:
    mirror = recipes_git()
    request = PrAuditRequest(repo=mirror, base=f"{commit}^", head=commit)
    narrowed = run_pr_audit(request)
    assert narrowed.diff.audit_scope is not None and kind in narrowed.diff.audit_scope
    monkeypatch.setattr(pr_audit, "shared_change", lambda *args: None)
    monkeypatch.setattr(pr_audit, "documentation_only", lambda *args: frozenset())
    whole = run_pr_audit(request)
    assert whole.diff.audit_scope is None
    _same(narrowed, whole)
    # the narrowing audited fewer combinations than the whole audit
    assert narrowed.diff.summary.head_combinations < whole.diff.summary.head_combinations


def test_a_prose_only_recipe_change_audits_nothing_and_any_other_does(tmp_path: Path) -> None:
    from recipes_repo import MODEL

    base = _root(tmp_path, "base")
    text = (EMBEDDED / MODEL).read_text(encoding="utf-8")
    assert "\n  title: " in text or "\n  title:" in text
    prose = _root(
        tmp_path, "prose", {MODEL: ("\n  title:", "\n  description: new prose\n  title:")}
    )
    assert documentation_only(base, prose, [MODEL]) == frozenset({MODEL})
    claim = _root(tmp_path, "claim", {MODEL: ("    h200: verified", "    h200: supported")})
    assert documentation_only(base, claim, [MODEL]) == frozenset()


def _root(tmp_path: Path, name: str, edits: dict[str, tuple[str, str]] | None = None) -> Path:
    """A copy of the embedded recipes root with ``edits`` (file -> (old text, new text))."""
    root = tmp_path / name
    shutil.copytree(EMBEDDED, root)
    for rel, (old, new) in (edits or {}).items():
        path = root / rel
        text = path.read_text(encoding="utf-8")
        assert old in text, (rel, old)
        path.write_text(text.replace(old, new, 1), encoding="utf-8")
    return root


H100_RENAMED = {"taxonomy.yaml": ("    display_name: H100\n", "    display_name: H100 SXM\n")}
TP_ARGS = {"strategies/single_node_tp.yaml": ("vllm_args: []", "vllm_args: [--enforce-eager]")}


def test_what_a_shared_change_can_affect(tmp_path: Path) -> None:
    base = _root(tmp_path, "base")
    assert shared_change(base, _root(tmp_path, "same")) == SharedChange(hardware=frozenset())
    found = shared_change(base, _root(tmp_path, "h100", H100_RENAMED))
    assert found == SharedChange(hardware=frozenset({"h100"}))
    assert found.narrow(AuditFilters()).hardware == ("h100",)
    assert found.narrow(AuditFilters(hardware=("b200",))).hardware == ()
    tp = shared_change(base, _root(tmp_path, "tp", TP_ARGS))
    assert tp == SharedChange(strategies=frozenset({"single_node_tp"}))
    assert tp.narrow(AuditFilters()).strategies == ("single_node_tp",)
    # both at once, or any other part of the taxonomy: every combination may change
    assert shared_change(base, _root(tmp_path, "both", H100_RENAMED | TP_ARGS)) is None
    kv = {"taxonomy.yaml": ("    label: Simple\n", "    label: Simpler\n")}
    simple = shared_change(base, _root(tmp_path, "kv", kv))
    assert simple == SharedChange(kv=frozenset({"simple"}))
    # the PR audit enumerates no KV offload unless a recipe declares it: nothing then
    assert simple.narrow(AuditFilters()).kv == "only:"
    assert simple.narrow(AuditFilters(kv="all")).kv == "only:simple"
    assert simple.narrow(AuditFilters(kv="simple,lmcache")).kv == "only:simple"
    # the taxonomy's strategies list: a name added or removed changes that strategy's
    # combinations only; names listed on both sides in another order may change more
    listed = {"taxonomy.yaml": ("- multi_node_tp_dp\n", "")}
    dropped = shared_change(base, _root(tmp_path, "listed", listed))
    assert dropped == SharedChange(strategies=frozenset({"multi_node_tp_dp"}))
    listed_and_tp = shared_change(base, _root(tmp_path, "listed-tp", listed | TP_ARGS))
    assert listed_and_tp == SharedChange(
        strategies=frozenset({"multi_node_tp_dp", "single_node_tp"})
    )
    swapped = {
        "taxonomy.yaml": (
            "- single_node_tp\n- single_node_tep\n",
            "- single_node_tep\n- single_node_tp\n",
        )
    }
    assert shared_change(base, _root(tmp_path, "swapped", swapped)) is None
    tasks = {"taxonomy.yaml": ("  display_name: Text\n", "  display_name: Texts\n")}
    assert shared_change(base, _root(tmp_path, "tasks", tasks)) is None
