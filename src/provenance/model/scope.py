"""Scope of evidence: which evidence points may stand behind a recipe combination.

An evidence point is *in scope* for a combination when it ran

* the same **checkpoint** (:func:`same_checkpoint`),
* on the same **hardware** (taxonomy id, e.g. ``b300``),
* in the same **deployment kind** (:func:`deployment_kind`): single-node
  ``serve``; aggregated multi-node (head + workers); or disaggregated
  prefill/decode.

Parallelism sizes are themselves major flags, so the rest of the deployment
shape is compared flag by flag. What flags cannot say — how many workers a
role has and whether prefill and decode share a node — is the *role shape*
(:class:`RoleShape`); an exact flag match with a different role shape is a
``topology-mismatch``.

Checkpoint matching
-------------------
InferenceX names a checkpoint in several ways: a Hugging Face id
(``nvidia/MiniMax-M3-NVFP4``), an srt-slurm model alias (``minimax-m3-mxfp8``)
or a local path. The rule, in order:

1. an explicit alias from :data:`CHECKPOINT_ALIASES` (lower-cased) is replaced
   by the Hugging Face id it stands for;
2. two ids that both name an organisation (``org/name``) match when they are
   equal ignoring case;
3. an id without an organisation (an alias or a path's last component) matches
   any id whose repository name is equal ignoring case.

Rule 3 cannot tell two organisations' checkpoints of the same name apart;
add an explicit alias when that matters.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Literal

from provenance.model.record import EvidenceRecord, Topology

DeploymentKind = Literal["single_node", "aggregated_multi_node", "disaggregated"]

#: srt-slurm model aliases and other spellings → the Hugging Face id they stand for.
CHECKPOINT_ALIASES: Mapping[str, str] = {
    "minimax-m3-mxfp8": "MiniMaxAI/MiniMax-M3-MXFP8",
    "minimax-m3-nvfp4": "nvidia/MiniMax-M3-NVFP4",
    "minimax-m3-fp8": "MiniMaxAI/MiniMax-M3-MXFP8",
    "minimax-m3-fp4": "nvidia/MiniMax-M3-NVFP4",
}

#: Recipe role → the evidence role it is compared with.
EVIDENCE_ROLE: Mapping[str, str] = {
    "serve": "serve",
    "head": "serve",
    "worker": "serve",
    "instance": "serve",
    "instance_worker": "serve",
    "prefill": "prefill",
    "decode": "decode",
}

#: Order in which evidence roles are reported.
ROLE_ORDER: Mapping[str, int] = {"serve": 0, "prefill": 1, "decode": 2}


def _resolve_alias(name: str) -> str:
    text = name.strip().rstrip("/")
    return CHECKPOINT_ALIASES.get(text.lower(), text)


def checkpoint_key(name: str) -> str:
    """The index key of a checkpoint: its lower-cased repository name after alias resolution.

    ``nvidia/MiniMax-M3-NVFP4``, ``minimax-m3-nvfp4`` and ``/models/MiniMax-M3-NVFP4``
    share the key ``minimax-m3-nvfp4``. Use :func:`same_checkpoint` to confirm a match.
    """
    return _resolve_alias(name).rsplit("/", 1)[-1].lower()


def _has_org(name: str) -> bool:
    return "/" in name and not name.startswith(("/", "."))


def same_checkpoint(recipe_model: str, evidence_checkpoint: str) -> bool:
    """Whether an evidence checkpoint is the recipe's model (rules in the module docstring)."""
    left = _resolve_alias(recipe_model)
    right = _resolve_alias(evidence_checkpoint)
    if _has_org(left) and _has_org(right):
        return left.lower() == right.lower()
    return checkpoint_key(left) == checkpoint_key(right)


def deployment_kind(deploy_type: str, roles: Iterable[str]) -> DeploymentKind:
    """The evidence deployment kind a rendered combination is compared with."""
    if deploy_type == "pd_cluster":
        return "disaggregated"
    if deploy_type == "multi_node":
        return "aggregated_multi_node"
    if deploy_type == "single_node":
        return "single_node"
    # kv_store_lb (Mooncake instances) and omni: decided by the processes rendered.
    names = set(roles)
    if names & {"prefill", "decode"}:
        return "disaggregated"
    if names & {"head", "worker", "instance_worker"}:
        return "aggregated_multi_node"
    return "single_node"


@dataclass(frozen=True, slots=True)
class Scope:
    """Checkpoint (index key), hardware and deployment kind."""

    checkpoint: str
    hardware: str
    kind: DeploymentKind

    def label(self) -> str:
        return f"{self.checkpoint} · {self.hardware} · {self.kind}"


@dataclass(frozen=True, slots=True)
class RoleShape:
    """What flags cannot express about a role: its worker count and co-location."""

    workers: int = 1
    colocated: bool = False
    nodes: int | None = None

    def describe(self) -> str:
        text = f"{self.workers} worker{'s' if self.workers != 1 else ''}"
        if self.colocated:
            text += ", prefill and decode co-located on one node"
        if self.nodes is not None:
            text += f", {self.nodes} node{'s' if self.nodes != 1 else ''}"
        return text


def record_scope(record: EvidenceRecord) -> Scope:
    return Scope(checkpoint_key(record.checkpoint), record.hardware.lower(), record.topology.kind)


def record_role_shape(topology: Topology, role: str) -> RoleShape:
    """The shape of one role of an evidence record."""
    role_topology = topology.roles.get(role)
    workers = role_topology.workers if role_topology is not None else 1
    nodes = topology.nodes if topology.kind == "aggregated_multi_node" else None
    return RoleShape(workers=workers, colocated=topology.colocated, nodes=nodes)


def recipe_role_shape(kind: DeploymentKind, node_count: int | None) -> RoleShape:
    """The shape of every role a recipe renders.

    The recipes builder renders exactly one engine per role: a single ``serve``;
    one multi-node engine (head + followers); or, for ``pd_cluster``, one
    prefill and one decode engine, each on its own pool of >= 1 whole nodes
    (spec §2.4/§3.3.3: the UI never renders the co-located 0-node pool).
    """
    nodes = node_count if kind == "aggregated_multi_node" else None
    return RoleShape(workers=1, colocated=False, nodes=nodes)


def shape_matches(recipe: RoleShape, evidence: RoleShape) -> bool:
    if recipe.workers != evidence.workers or recipe.colocated != evidence.colocated:
        return False
    return recipe.nodes is None or evidence.nodes is None or recipe.nodes == evidence.nodes
