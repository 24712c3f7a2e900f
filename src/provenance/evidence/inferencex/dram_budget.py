"""``TOTAL_CPU_DRAM_GB``: the DRAM KV-offload budget the sweep generator gives agentic arms.

The sweep generator (``utils/matrix_logic/generate_sweep_configs.py``,
``agentic_dram_offload_gb``) sizes it from facts in the tree, and
``benchmark-tmpl.yml`` passes it to the launcher as ``TOTAL_CPU_DRAM_GB``:

* ``0`` unless the point's ``kv-offloading`` is ``dram``;
* otherwise the runner label's ``available-cpu-dram-mib`` (``hardware:`` in
  ``configs/runners.yaml``), capped at the generator's
  ``MAX_AGENTIC_AVAILABLE_CPU_DRAM_MIB`` when the generator at the commit has
  one, × the scenario's ``dram-utilization`` × the point's GPUs (tp·pp·pcp) /
  the label's ``gpus-per-node``, in bytes (MiB = 2²⁰ B), truncated to decimal GB
  (10⁹ B); computed with :class:`~decimal.Decimal` as the generator does.

A fact that is missing from the tree leaves the budget unknown, with a
reason; the launcher is then evaluated without it.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from provenance.evidence.inferencex.master import MasterEntry, SingleNodePoint
from provenance.evidence.inferencex.snapshot import Snapshot
from provenance.safe_yaml import load_yaml_bytes

GENERATOR_PATH = "utils/matrix_logic/generate_sweep_configs.py"
RUNNERS_PATHS = ("configs/runners.yaml", ".github/configs/runners.yaml")
_CAP = re.compile(r"^MAX_AGENTIC_AVAILABLE_CPU_DRAM_MIB\s*=\s*([0-9][0-9_]*)\s*$", re.MULTILINE)
BYTES_PER_MIB = 1024 * 1024
BYTES_PER_GB = 1_000_000_000


def _hardware(snapshot: Snapshot) -> tuple[str, Mapping[str, Any]] | None:
    for path in RUNNERS_PATHS:
        raw = snapshot.read(path)
        if raw is None:
            continue
        data = snapshot.memo(
            ("yaml", path), functools.partial(lambda r, p: load_yaml_bytes(r, p).data, raw, path)
        )
        hardware = data.get("hardware") if isinstance(data, Mapping) else None
        return path, hardware if isinstance(hardware, Mapping) else {}
    return None


def _cap_mib(snapshot: Snapshot) -> int | None:
    raw = snapshot.read(GENERATOR_PATH)
    if raw is None:
        return None
    match = _CAP.search(raw.decode("utf-8", "replace"))
    return int(match.group(1).replace("_", "")) if match else None


def dram_offload_gb(snapshot: Snapshot, entry: MasterEntry, point: SingleNodePoint) -> int | str:
    """The ``TOTAL_CPU_DRAM_GB`` of an agentic point, or why it cannot be known from the tree."""
    if point.kv_offloading != "dram":
        return 0
    if point.dram_utilization is None:
        return f"{entry.key}: kv-offloading dram without dram-utilization in its scenario"
    found = _hardware(snapshot)
    if found is None:
        return "no configs/runners.yaml in the tree"
    path, hardware = found
    facts = hardware.get(entry.runner)
    if not isinstance(facts, Mapping):
        return f"runner {entry.runner!r} has no hardware entry in {path}"
    available = facts.get("available-cpu-dram-mib")
    gpus_per_node = facts.get("gpus-per-node")
    if not isinstance(available, int) or not isinstance(gpus_per_node, int) or gpus_per_node < 1:
        return (
            f"runner {entry.runner!r} in {path} lacks an integer available-cpu-dram-mib "
            "or gpus-per-node"
        )
    gpus = point.tp * point.pp * point.pcp_size
    if gpus > gpus_per_node:
        return f"{gpus} GPUs exceed gpus-per-node={gpus_per_node} of runner {entry.runner!r}"
    cap = _cap_mib(snapshot)
    mib = min(available, cap) if cap is not None else available
    budget = (
        Decimal(mib) * BYTES_PER_MIB * Decimal(str(point.dram_utilization)) * gpus / gpus_per_node
    )
    return int(budget / BYTES_PER_GB)
