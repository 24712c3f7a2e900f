"""Synthetic inputs scaled k times: a recipes root with k copies of a variant, an evidence
store with k copies of every record.

Recipe: the embedded MiniMax-M3 with ``nvfp4`` cloned into ``nvfp4``, ``nvfp4_s2`` …
``nvfp4_s<k>``; each clone adds ``--seed <n>`` so every clone renders distinct
commands. Auditing ``--variant <the clones> --hardware b300`` then has exactly k
times the combinations of the 1x root.

Evidence: copy i > 1 of a record sets the major flag ``seed`` to a distinct value
in every role; copies stay in scope (same checkpoint, hardware and kind), so the
judge compares every combination against k times the in-scope points.
"""

from __future__ import annotations

import copy
import shutil
from pathlib import Path
from typing import Any

import yaml

from provenance.model.flags import FlagSet
from provenance.store.evidence import EvidenceStore

MODEL = Path("models/MiniMaxAI/MiniMax-M3.yaml")
BASE_VARIANT = "nvfp4"
HARDWARE = "b300"


def clone_names(scale: int) -> list[str]:
    return [BASE_VARIANT] + [f"{BASE_VARIANT}_s{i}" for i in range(2, scale + 1)]


def scaled_recipes_root(source: Path, target: Path, scale: int) -> list[str]:
    """Write a recipes root with ``scale`` copies of the nvfp4 variant; return their keys."""
    shutil.copytree(source, target)
    path = target / MODEL
    data: dict[str, Any] = yaml.safe_load(path.read_text(encoding="utf-8"))
    variants: dict[str, Any] = data["variants"]
    base = variants[BASE_VARIANT]
    names = clone_names(scale)
    for index, name in enumerate(names[1:], start=2):
        clone = copy.deepcopy(base)
        clone["extra_args"] = [*clone.get("extra_args", []), "--seed", str(index)]
        variants[name] = clone
    path.write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True), encoding="utf-8")
    return names


def scaled_evidence(source: Path, target: Path, scale: int) -> int:
    """Copy every record of ``source`` ``scale`` times into a new store; return the count."""
    original = EvidenceStore(source)
    store = EvidenceStore(target)
    count = 0
    for record in original.iter_records():
        for index in range(1, scale + 1):
            if index == 1:
                copy_ = record
            else:
                roles = {
                    role: FlagSet({**dict(flags), "seed": str(1000 + index)})
                    for role, flags in record.roles.items()
                }
                copy_ = record.model_copy(
                    update={"roles": roles, "config_key": f"{record.config_key}-s{index}"}
                )
                copy_ = type(record).model_validate(copy_.model_dump(by_alias=True))
                copy_ = copy_.with_id()
            store.put(copy_)
            count += 1
    return count
