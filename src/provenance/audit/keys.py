"""Combination keys: what a verdict depends on, computed from a deployment's processes.

The first step of the audit's flow (keys → judge → tally → walks → pipeline). A
combination's verdict depends only on its scope (checkpoint, hardware, deployment
kind), its node count (aggregated multi-node only) and the distinct major FlagSets
of each *evidence* role (recipe roles ``head``/``worker``/``instance`` compare as
``serve``), *in context*: aliased spellings under their canonical key and the flags
a context rule makes inert for the role dropped (``Policy.in_context``), exactly as
the evidence index reduces each record's roles. :class:`CombinationKey` holds
exactly that, so every combination with the same key shares one judgement.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from provenance.model.flags import FlagSet
from provenance.model.scope import EVIDENCE_ROLE, ROLE_ORDER, DeploymentKind, deployment_kind

#: An evidence role with the distinct major FlagSets of its processes, in process order.
EvidenceRoleFlags = tuple[str, tuple[FlagSet, ...]]

#: Raw role list of a deployment: (recipe role, major FlagSet) per process, in role order.
RawRoles = tuple[tuple[str, FlagSet], ...]

#: A command's major flags in the context of its evidence role (``Policy.in_context``).
ContextFn = Callable[[FlagSet, str], FlagSet]


@dataclass(frozen=True)
class CombinationKey:
    """What a verdict depends on (hash computed once: keys are looked up per combination)."""

    model_id: str
    hardware: str
    kind: DeploymentKind
    node_count: int | None
    roles: tuple[EvidenceRoleFlags, ...]
    _hash: int = field(init=False, repr=False, compare=False, default=0)

    def __post_init__(self) -> None:
        object.__setattr__(
            self,
            "_hash",
            hash((self.model_id, self.hardware, self.kind, self.node_count, self.roles)),
        )

    def __hash__(self) -> int:
        return self._hash


def combination_key(
    model_id: str,
    hardware: str,
    deploy_type: str,
    node_count: int | None,
    raw: RawRoles,
    roles: tuple[EvidenceRoleFlags, ...] | None = None,
    *,
    context: ContextFn,
) -> CombinationKey:
    """The combination key of a deployment from its processes' major flags (no memo: the
    walks memoise it where keys repeat).

    ``roles``, when given, is ``evidence_roles(raw, context)`` computed by the caller."""
    if roles is None:
        roles = evidence_roles(raw, context)
    kind = _KINDS.get(deploy_type) or deployment_kind(
        deploy_type, [r for r, _ in raw] or [name for name, _ in roles]
    )
    return CombinationKey(
        model_id, hardware, kind, node_count if kind == "aggregated_multi_node" else None, roles
    )


def evidence_roles(raw: RawRoles, context: ContextFn) -> tuple[EvidenceRoleFlags, ...]:
    """Each evidence role of ``raw`` with its distinct major FlagSets in ``context`` (in
    process order), roles in :data:`ROLE_ORDER`."""
    per_role: dict[str, list[FlagSet]] = {}
    names: list[str] = []
    for recipe_role, process_major in raw:
        role = EVIDENCE_ROLE.get(recipe_role, recipe_role)
        major = context(process_major, role)
        flagsets = per_role.get(role)
        if flagsets is None:
            per_role[role] = [major]
            names.append(role)
        elif major not in flagsets:
            flagsets.append(major)
    if len(names) > 1:
        names.sort(key=lambda name: ROLE_ORDER.get(name, 9))
    return tuple([(name, tuple(per_role[name])) for name in names])


def joined_roles(
    first: tuple[EvidenceRoleFlags, ...], second: tuple[EvidenceRoleFlags, ...]
) -> tuple[EvidenceRoleFlags, ...] | None:
    """``evidence_roles(a + b, c)`` from ``evidence_roles(a, c)`` and
    ``evidence_roles(b, c)``, when every role of ``a`` comes before every role of ``b``
    (a PD pool pair: prefill, then decode); None otherwise."""
    if not first or not second:
        return None
    if ROLE_ORDER.get(first[-1][0], 9) < ROLE_ORDER.get(second[0][0], 9):
        return first + second
    return None


#: The deployment kind of the deploy types that name it (the others depend on their roles).
_KINDS: dict[str, DeploymentKind] = {
    deploy_type: deployment_kind(deploy_type, ())
    for deploy_type in ("pd_cluster", "multi_node", "single_node")
}
