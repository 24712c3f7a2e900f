"""Reverse direction: each in-scope evidence point → the combinations that reproduce it.

An evidence point is *in scope* of a recipe audit when its checkpoint is one a
variant serves and its hardware was audited with that variant. It is

* ``reproduced`` when audited combinations have exactly its per-role major
  flags and role shape (``combinations`` counts them, ``example`` shows one);
* ``not-expressible`` when the recipe schema cannot render its deployment
  shape at all (:func:`expressibility_problems`);
* ``not-reproduced`` otherwise (``why`` names the nearest audited combination
  and its flag difference).

Expressibility rule (recipes builder spec §2.4, §3.3):

* **disaggregated** → ``pd_cluster``: each role is ONE engine on a pool of
  N whole nodes (1 ≤ N ≤ 16; the 0-node co-located pool is never rendered by
  the UI), with pool GPUs = N × gpus-per-node, in mode ``tp`` (TP over the
  pool, no EP), ``tep`` (TP over the pool + EP) or ``dep`` (DP × TP over the
  pool + EP), and the mode must be one the recipe offers. So more than one
  worker per role, co-located roles, a worker on a fraction of a node, or a
  parallelism layout that is none of tp/tep/dep is not expressible.
* **single node**: one ``serve`` engine on at most one node; expert
  parallelism only as ``single_node_tep`` (TP = all GPUs) or
  ``single_node_dep`` (DP = all GPUs).
* **aggregated multi-node**: one engine over whole nodes.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from provenance.audit.judge import CombinationKey, RoleKey
from provenance.audit.model import ReverseEntry
from provenance.audit.scope import (
    ROLE_ORDER,
    recipe_role_shape,
    record_role_shape,
    same_checkpoint,
    shape_matches,
)
from provenance.evidence.record import RoleTopology, Topology
from provenance.flags.model import FlagSet
from provenance.graph import EvidenceGraph, IndexedRecord

if TYPE_CHECKING:
    from provenance.audit.validator import RecipeAuditor, _Seen

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


def _record_roles(record: IndexedRecord) -> tuple[RoleKey, ...]:
    return tuple(
        (role, (flags,))
        for role, flags in sorted(record.major.items(), key=lambda kv: ROLE_ORDER.get(kv[0], 9))
    )


def _describe_diff(roles: Sequence[tuple[str, FlagSet]], key: CombinationKey) -> tuple[int, str]:
    recipe = {role: flagsets[0] for role, flagsets in key.roles}
    total = 0
    parts = []
    for role, evidence_flags in roles:
        mine = recipe.get(role)
        if mine is None:
            total += len(evidence_flags) + 1
            parts.append(f"{role}: role not rendered")
            continue
        diff = evidence_flags.diff(mine)
        total += diff.size
        bits = [f"-{k}={v}" for k, v in diff.only_left.items()]
        bits += [f"+{k}={v}" for k, v in diff.only_right.items()]
        bits += [f"{k}: evidence {a}, recipe {b}" for k, (a, b) in diff.changed.items()]
        if bits:
            parts.append(f"{role}: {' '.join(bits)}")
    return total, "; ".join(parts)


def reverse_entries(
    auditor: RecipeAuditor, graph: EvidenceGraph, gpus_per_node: Mapping[str, int]
) -> list[ReverseEntry]:
    by_flags: dict[tuple[str, str, str, tuple[RoleKey, ...]], list[tuple[CombinationKey, _Seen]]]
    by_flags = defaultdict(list)
    by_scope: dict[tuple[str, str, str], list[tuple[CombinationKey, _Seen]]] = defaultdict(list)
    pool_modes: dict[tuple[str, str], set[str]] = defaultdict(set)
    for key, seen in auditor.seen.items():
        by_flags[(key.model_id, key.hardware, key.kind, key.roles)].append((key, seen))
        by_scope[(key.model_id, key.hardware, key.kind)].append((key, seen))
        pool_modes[(key.model_id, key.hardware)] |= seen.pd_modes
    entries: list[ReverseEntry] = []
    for indexed in graph.records.values():
        record = indexed.record
        for model_id, hardware_set in sorted(auditor.model_ids.items()):
            hardware = record.hardware.lower()
            if hardware not in hardware_set or not same_checkpoint(model_id, record.checkpoint):
                continue
            kind = record.topology.kind
            roles = _record_roles(indexed)
            matches = [
                (key, seen)
                for key, seen in by_flags.get((model_id, hardware, kind, roles), [])
                if all(
                    shape_matches(
                        recipe_role_shape(kind, key.node_count),
                        record_role_shape(record.topology, role),
                    )
                    for role, _ in roles
                )
            ]
            common = {"record": indexed.id, "config_key": indexed.config_key, "prs": indexed.prs}
            if matches:
                entries.append(
                    ReverseEntry(
                        **common,
                        status="reproduced",
                        combinations=sum(seen.count for _, seen in matches),
                        example=matches[0][1].example,
                    )
                )
                break
            problems = expressibility_problems(
                record.topology,
                gpus_per_node.get(hardware),
                pool_modes.get((model_id, hardware), set()) if kind == "disaggregated" else (),
            )
            if problems:
                entries.append(
                    ReverseEntry(**common, status="not-expressible", why="; ".join(problems))
                )
                break
            flat = [(role, flagsets[0]) for role, flagsets in roles]
            candidates = by_scope.get((model_id, hardware, kind), [])
            if not candidates:
                why = f"no audited {kind} combination on {hardware}"
                example = None
            else:
                scored = [(_describe_diff(flat, key), seen) for key, seen in candidates]
                (distance, text), seen = min(scored, key=lambda item: item[0][0])
                example = seen.example
                why = (
                    f"nearest audited combination differs by {distance} flag(s) "
                    f"(+ recipe only, - evidence only): {text}"
                )
            entries.append(
                ReverseEntry(**common, status="not-reproduced", example=example, why=why)
            )
            break
    return entries
