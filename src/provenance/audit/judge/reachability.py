"""Reachability: which evidence shapes the recipe schema can express, and the guide-only
combinations no schema edit can bring to any in-scope evidence point (``unreachable``).

Expressibility rule (recipes builder spec §2.4, §3.3):

* **disaggregated** → ``pd_cluster``: each role is ONE engine on a pool of
  N whole nodes (1 ≤ N ≤ 16; the 0-node co-located pool is never rendered by
  the UI), with pool GPUs = N × gpus-per-node, in mode ``tp`` (TP over the
  pool, no EP), ``tep`` (TP over the pool + EP) or ``dep`` (DP × TP over the
  pool + EP), and (for the reverse direction) the mode must be one the recipe
  offers. So more than one worker per role, co-located roles, a worker on a
  fraction of a node, or a parallelism layout that is none of tp/tep/dep is not
  expressible.
* **single node**: one ``serve`` engine on at most one node; expert
  parallelism only as ``single_node_tep`` (TP = all GPUs) or
  ``single_node_dep`` (DP = all GPUs).
* **aggregated multi-node**: one engine over whole nodes.

A guide-only combination is *unreachable* when its scope (checkpoint, hardware,
deployment kind) has evidence points and none of them has an expressible shape: flags,
values and where they are written can all be edited, but no edit gives a pd_cluster pool
a fraction of a node or a role a second engine. Pool modes are not held against a point
here: which modes a recipe offers is itself an edit (its strategies,
``strategy_overrides.pd_cluster.pool_modes``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from provenance.audit.index import IndexedRecord
from provenance.audit.judge.reasons import prs_of
from provenance.audit.verdicts import Reason
from provenance.model.reasons import ReasonCode
from provenance.model.record import RoleTopology, Topology
from provenance.model.scope import ROLE_ORDER

MAX_POOL_NODES = 16


def pool_mode(role: RoleTopology) -> str | None:
    """The pd_cluster pool mode (tp, tep, dep) a role's parallelism corresponds to, if any."""
    gpus = role.gpus_per_worker
    expert = role.expert_parallel or role.ep > 1
    if expert:
        if role.dp > 1 and role.dp * role.tp == gpus:
            return "dep"
        if role.dp == 1 and role.tp == gpus:
            return "tep"
        return None
    if role.dp == 1 and role.tp == gpus:
        return "tp"
    return None


def expressibility_problems(
    topology: Topology, gpus_per_node: int | None, pool_modes: Sequence[str] | set[str] = ()
) -> list[str]:
    """Why a recipe cannot render this deployment shape (empty when it can)."""
    per_node = gpus_per_node or topology.gpus_per_node
    problems: list[str] = []
    if topology.kind == "disaggregated":
        if topology.colocated:
            problems.append(
                "prefill and decode share a node; a pd_cluster pool is one or more whole "
                "nodes per role"
            )
        for role in sorted(topology.roles, key=lambda r: ROLE_ORDER.get(r, 9)):
            shape = topology.roles[role]
            if shape.workers != 1:
                problems.append(
                    f"{shape.workers} {role} workers; a pd_cluster pool runs one {role} engine"
                )
            mode = pool_mode(shape)
            if mode is None:
                problems.append(
                    f"{role} parallelism tp={shape.tp} ep={shape.ep} dp={shape.dp} on "
                    f"{shape.gpus_per_worker} GPU(s) is none of the pool modes tp, tep, dep"
                )
            elif pool_modes and mode not in pool_modes:
                problems.append(f"{role} pool mode {mode} is not offered by the recipe")
            if per_node and (
                shape.gpus_per_worker % per_node
                or not 1 <= shape.gpus_per_worker // per_node <= MAX_POOL_NODES
            ):
                problems.append(
                    f"a {role} engine on {shape.gpus_per_worker} GPU(s); a pool uses 1-"
                    f"{MAX_POOL_NODES} whole nodes of {per_node} GPUs"
                )
    elif topology.kind == "single_node":
        for role, shape in sorted(topology.roles.items()):
            if shape.workers != 1:
                problems.append(f"{shape.workers} {role} engines; a recipe renders one")
            if per_node and shape.gpus_per_worker > per_node:
                problems.append(f"{shape.gpus_per_worker} GPUs exceed one node of {per_node}")
            expert = shape.expert_parallel or shape.ep > 1
            if expert and per_node and per_node not in (shape.tp, shape.dp):
                problems.append(
                    f"expert parallelism with tp={shape.tp} dp={shape.dp}; single_node_tep and "
                    f"single_node_dep span all {per_node} GPUs"
                )
    else:
        for role, shape in sorted(topology.roles.items()):
            if shape.workers != 1:
                problems.append(f"{shape.workers} {role} engines; a recipe renders one")
        if per_node and topology.total_gpus % per_node:
            problems.append(f"{topology.total_gpus} GPUs are not whole nodes of {per_node}")
    return problems


#: Most distinct shape problems an ``unreachable`` detail names.
MAX_PROBLEMS = 2
#: What an ``unreachable`` detail ends with: the other reasons are not a fix.
SECONDARY = "its flag reasons are secondary: no flag edit reaches evidence"


def unreachable_reason(
    records: Sequence[IndexedRecord], kind: str, gpus_per_node: int | None
) -> Reason | None:
    """The ``unreachable`` reason of a guide-only combination whose in-scope evidence is
    ``records``, or None when one of them has a shape the schema can express (or there is
    none: that is ``no-evidence``).

    The detail names the most frequent shape problems, each with how many of the points
    have it (``every point`` when all do), then :data:`SECONDARY`.
    """
    if not records:
        return None
    counts: Counter[str] = Counter()
    for record in records:
        problems = expressibility_problems(record.record.topology, gpus_per_node)
        if not problems:
            return None
        counts.update(set(problems))
    total = len(records)
    ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    shown = [
        f"{'every point' if count == total else f'{count} of {total}'}: {problem}"
        for problem, count in ranked[:MAX_PROBLEMS]
    ]
    if len(ranked) > MAX_PROBLEMS:
        shown.append(f"{len(ranked) - MAX_PROBLEMS} more shape problem(s)")
    return Reason(
        code=ReasonCode.UNREACHABLE,
        sources=prs_of(records),
        detail=f"none of the {total} in-scope {kind} evidence point(s) has a shape the recipe "
        f"schema can express ({' | '.join(shown)}); {SECONDARY}",
    )
