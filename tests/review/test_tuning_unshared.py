"""A shared strategy change compared by the arguments the two commands do not share:
the counts and examples equal those of every process normalised whole."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import yaml
from recipes_repo import EMBEDDED
from tuning_oracle import whole_changes

from provenance.audit.normaliser import PolicyNormaliser
from provenance.audit.pipeline import AuditFilters, enumeration_options
from provenance.review.tuning import recipe_pairs, tuning_changes

MODEL = "models/MiniMaxAI/MiniMax-M3.yaml"
STRATEGY = "strategies/pd_cluster.yaml"


def _edit_strategy(root: Path, edit: Any) -> None:
    data = yaml.safe_load((root / STRATEGY).read_text())
    edit(data)
    (root / STRATEGY).write_text(yaml.safe_dump(data, sort_keys=False))


def _head(data: dict[str, Any]) -> None:
    # prefill: a flag no other argument names (compared alone) and the KV transfer
    # config's policy set by a dotted option, which merges into the JSON value the base
    # and the head share (compared whole)
    data["prefill"]["vllm_args"] += [
        "--disable-log-requests",
        "--kv-transfer-config.kv_load_failure_policy",
        "recompute",
    ]
    # decode: a changed JSON value of a flag set once
    args = data["decode"]["vllm_args"]
    args[args.index("--compilation-config") + 1] = '{"cudagraph_mode":"FULL"}'


def test_a_strategy_change_counts_as_when_normalised_whole(tmp_path: Path) -> None:
    filters = AuditFilters(hardware=("b200",), features="default")
    base_root, head_root = tmp_path / "base", tmp_path / "head"
    for root in (base_root, head_root):
        shutil.copytree(EMBEDDED, root)
    _edit_strategy(head_root, _head)
    found = tuning_changes(
        recipe_pairs(base_root, head_root, [MODEL]),
        enumeration_options(filters),
        PolicyNormaliser(),
    )
    counts, pairs = whole_changes(base_root, head_root, MODEL, filters)
    assert {c.key: c.combinations for c in found} == dict(counts)
    for change in found:
        assert set(change.examples) <= pairs[change.key]
        assert len(change.examples) == min(3, len(pairs[change.key]))
    assert counts["disable_log_requests"] > 0
    assert any(key.startswith("compilation_config") for key in counts)
