"""Reverse direction: each in-scope evidence point → the combinations that reproduce it.

An evidence point is *in scope* of a recipe audit when its checkpoint is one a
variant serves and its hardware was audited with that variant. It is

* ``reproduced`` when audited combinations have exactly its per-role major
  flags and role shape (``combinations`` counts them, ``example`` shows one);
* ``not-expressible`` when the recipe schema cannot render its deployment
  shape at all (:func:`~provenance.audit.judge.reachability.expressibility_problems`);
* ``not-reproduced`` otherwise (``why`` names the nearest audited combination
  and its flag difference).

The expressibility rule lives with the judge, which also uses it to call a guide-only
combination ``unreachable`` (:mod:`provenance.audit.judge.reachability`).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from provenance.audit.index import EvidenceIndex, IndexedRecord
from provenance.audit.judge.reachability import expressibility_problems
from provenance.audit.keys import CombinationKey, EvidenceRoleFlags
from provenance.audit.tally import KeyTally, Tally
from provenance.audit.verdicts import ReverseEntry, ReverseStatus
from provenance.model.combination import Selection
from provenance.model.flags import FlagSet
from provenance.model.scope import (
    ROLE_ORDER,
    recipe_role_shape,
    record_role_shape,
    same_checkpoint,
    shape_matches,
)


def _record_roles(record: IndexedRecord) -> tuple[EvidenceRoleFlags, ...]:
    return tuple(
        (role, (flags,))
        for role, flags in sorted(record.major.items(), key=lambda kv: ROLE_ORDER.get(kv[0], 9))
    )


#: (evidence role, its major FlagSet) per role, in report order
FlatRoles = tuple[tuple[str, FlagSet], ...]


def _describe_diff(roles: FlatRoles, recipe: Mapping[str, FlagSet]) -> str:
    """The difference :func:`nearest_combination` counts, role by role (``-`` evidence
    only, ``+`` recipe only)."""
    parts = []
    for role, evidence_flags in roles:
        mine = recipe.get(role)
        if mine is None:
            parts.append(f"{role}: role not rendered")
            continue
        diff = evidence_flags.diff(mine)
        bits = [f"-{k}={v}" for k, v in diff.only_left.items()]
        bits += [f"+{k}={v}" for k, v in diff.only_right.items()]
        bits += [f"{k}: evidence {a}, recipe {b}" for k, (a, b) in diff.changed.items()]
        if bits:
            parts.append(f"{role}: {' '.join(bits)}")
    return "; ".join(parts)


#: (model id, hardware, deployment kind) of audited combinations
_Scope = tuple[str, str, str]
_Pair = tuple[CombinationKey, KeyTally]


@dataclass(frozen=True, slots=True)
class Compared:
    """A scope's distinct audited combinations as the nearest search compares them (each
    role by its first major FlagSet): per role, the distinct FlagSets (``flagsets``), and
    per combination the position of each of its roles' FlagSet there, with its tallies."""

    flagsets: dict[str, list[FlagSet]]
    rows: list[tuple[dict[str, int], KeyTally]]


def distinct_combinations(candidates: Sequence[_Pair]) -> Compared:
    """The first of ``candidates`` for each distinct comparison (role → first major FlagSet),
    in order: the others are at the same distance from any evidence point."""
    positions: dict[str, dict[FlagSet, int]] = {}
    signatures: set[tuple[tuple[str, FlagSet], ...]] = set()
    rows: list[tuple[dict[str, int], KeyTally]] = []
    for key, seen in candidates:
        signature = tuple((role, flagsets[0]) for role, flagsets in key.roles)
        if signature in signatures:
            continue
        signatures.add(signature)
        row: dict[str, int] = {}
        for role, flags in signature:
            known = positions.setdefault(role, {})
            row[role] = known.setdefault(flags, len(known))
        rows.append((row, seen))
    return Compared({role: list(known) for role, known in positions.items()}, rows)


def nearest_combination(roles: FlatRoles, compared: Compared) -> tuple[int, str, KeyTally]:
    """The first combination of ``compared`` at the smallest distance from ``roles``, that
    distance and its description.

    The distance counts the flags that differ between the evidence point's roles and the
    combination's (role → its first major FlagSet); a role the combination does not
    render counts as all its flags plus one. Each distinct FlagSet is compared once."""
    sizes = [
        (role, len(evidence_flags) + 1, [evidence_flags.diff_size(f) for f in found])
        for role, evidence_flags in roles
        for found in [compared.flagsets.get(role, [])]
    ]
    distances = []
    for row, _ in compared.rows:
        total = 0
        for role, absent, role_sizes in sizes:
            position = row.get(role)
            total += absent if position is None else role_sizes[position]
        distances.append(total)
    best = min(distances)
    row, seen = compared.rows[distances.index(best)]
    recipe = {role: compared.flagsets[role][position] for role, position in row.items()}
    return best, _describe_diff(roles, recipe), seen


def reverse_entries(
    tally: Tally, graph: EvidenceIndex, gpus_per_node: Mapping[str, int]
) -> list[ReverseEntry]:
    by_scope: dict[_Scope, list[_Pair]] = defaultdict(list)
    pool_modes: dict[tuple[str, str], set[str]] = defaultdict(set)
    for pair in tally.seen.items():
        key, seen = pair
        by_scope[(key.model_id, key.hardware, key.kind)].append(pair)
        if seen.pd_modes:
            pool_modes[(key.model_id, key.hardware)] |= seen.pd_modes
    # per scope (built for scopes that have evidence only): per-role flags → combinations
    by_flags: dict[_Scope, dict[tuple[EvidenceRoleFlags, ...], list[_Pair]]] = {}
    model_ids = sorted(tally.model_ids.items())
    checkpoints: dict[tuple[str, str], bool] = {}
    # memos: per scope, the distinct combinations; per scope and evidence roles, the nearest
    distinct: dict[_Scope, Compared] = {}
    nearest: dict[tuple[_Scope, FlatRoles], tuple[int, str, KeyTally]] = {}
    entries: list[ReverseEntry] = []
    audited = {name for _, hardware_set in model_ids for name in hardware_set}
    for hardware, indexed in graph.on_hardware(audited):
        record = indexed.record
        for model_id, hardware_set in model_ids:
            if hardware not in hardware_set:
                continue
            same = checkpoints.get((model_id, record.checkpoint))
            if same is None:
                same = checkpoints[(model_id, record.checkpoint)] = same_checkpoint(
                    model_id, record.checkpoint
                )
            if not same:
                continue
            kind = record.topology.kind
            roles = _record_roles(indexed)
            scope = (model_id, hardware, kind)
            exact = by_flags.get(scope)
            if exact is None:
                exact = by_flags[scope] = defaultdict(list)
                for pair in by_scope.get(scope, ()):
                    exact[pair[0].roles].append(pair)
            matches = [
                (key, seen)
                for key, seen in exact.get(roles, ())
                if all(
                    shape_matches(
                        recipe_role_shape(kind, key.node_count),
                        record_role_shape(record.topology, role),
                    )
                    for role, _ in roles
                )
            ]
            common = (indexed.id, indexed.config_key, indexed.prs)
            if matches:
                entries.append(
                    _entry(
                        common,
                        "reproduced",
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
                entries.append(_entry(common, "not-expressible", why="; ".join(problems)))
                break
            flat = tuple((role, flagsets[0]) for role, flagsets in roles)
            candidates = by_scope.get(scope, [])
            if not candidates:
                why = f"no audited {kind} combination on {hardware}"
                example = None
            else:
                found = nearest.get((scope, flat))
                if found is None:
                    compared = distinct.get(scope)
                    if compared is None:
                        compared = distinct[scope] = distinct_combinations(candidates)
                    found = nearest[(scope, flat)] = nearest_combination(flat, compared)
                distance, text, seen = found
                example = seen.example
                why = (
                    f"nearest audited combination differs by {distance} flag(s) "
                    f"(+ recipe only, - evidence only): {text}"
                )
            entries.append(_entry(common, "not-reproduced", example=example, why=why))
            break
    return entries


def _entry(
    common: tuple[str, str, tuple[str, ...]],
    status: ReverseStatus,
    *,
    combinations: int = 0,
    example: Selection | None = None,
    why: str = "",
) -> ReverseEntry:
    """The reverse entry of one evidence point (``common``: its id, config key and PRs)."""
    record, config_key, prs = common
    return ReverseEntry(
        record=record,
        config_key=config_key,
        prs=prs,
        status=status,
        combinations=combinations,
        example=example,
        why=why,
    )
