"""The gate on real merged vllm-project/recipes PRs: the real catches still block, with the
category a maintainer acts on, and the false blocks the replay found pass.

The replay of the whole history (``benchmarks/replay.py``, figures in
``docs/performance.md``) is the measure; these are the cases it was judged on, kept as
tests. Needs a clone of vllm-project/recipes with its history: ``$PROVENANCE_RECIPES_GIT``
(bare or not), else ``../.mirror/vllm-project+recipes/repo`` beside the checkout."""

from __future__ import annotations

import pytest
from recipes_support import recipes_git

from provenance.review.pr_audit import PrAuditRequest, PrAuditResult, run_pr_audit

pytestmark = pytest.mark.slow

#: (first-parent commit, what it is, the categories that must block)
CATCHES = [
    (
        "83ff280",
        "#682 MiniMax-M3: the FP8 indexer on EAGLE3 and non-Blackwell cells; b200 verified",
        {"regressed-verdict", "new-unevidenced-flag", "new-claim"},
    ),
    (
        "7262606",
        "#709 Kimi-K3: the deep_gemm_mega_moe MoE backend pushed onto multi_node_dep",
        {"new-unevidenced-flag"},
    ),
    ("21317bb", "#707 Kimi-K3: a Hopper config change on H200 cells", {"new-unevidenced-flag"}),
    ("a2b3386", "#627 GLM-5.2: a feature with both args and modes (the site refuses it)", set()),
]

#: (first-parent commit, what the old gate blocked it for)
PASSES = [
    ("a4e2620", "#785 RTX 5090 verified: InferenceX never ran the model there"),
    ("dedc3f4", "#793 Ascend 950PR verified on MiniMax-H3: outside InferenceX coverage"),
    ("39ce0c1", "#351 fixes the flag #350 left without a value: the base cannot be compared"),
    ("654e011", "#648 two hardware profiles and their recipes, claims outside coverage"),
]


def _audit(commit: str) -> PrAuditResult:
    mirror = recipes_git()
    return run_pr_audit(PrAuditRequest(repo=mirror, base=f"{commit}^", head=commit))


@pytest.mark.parametrize(("commit", "what", "categories"), CATCHES, ids=[c[0] for c in CATCHES])
def test_real_catches_still_block(commit: str, what: str, categories: set[str]) -> None:
    diff = _audit(commit).diff
    assert not diff.gate.passed, what
    found: set[str | None] = {g.block_reason for g in diff.changes if g.blocking}
    if diff.claims:
        found.add("new-claim")
    assert categories <= found, (what, found)
    if not categories:  # the invalid recipe: named with its revision, file and line
        assert diff.errors and all(e.line for e in diff.errors)
        assert all(e.path.startswith(diff.head + ":models/") for e in diff.errors)
    assert all(c.coverage == "in-coverage" for c in diff.claims)


@pytest.mark.parametrize(("commit", "what"), PASSES, ids=[c[0] for c in PASSES])
def test_former_false_blocks_pass(commit: str, what: str) -> None:
    diff = _audit(commit).diff
    assert diff.gate.passed, (what, diff.gate)
    assert diff.claims_reported, what  # what the old gate blocked for is still reported
