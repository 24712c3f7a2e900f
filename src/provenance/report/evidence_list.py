"""``provenance evidence list``: stored evidence records as reviewers read them.

Each view shows where the record came from (commit, files and blob SHAs), the
config key, the workload points it covers, the topology, every role's flags
as ``{key, value, class}`` (class from the flag policy), partial markers and
the ledger PRs that reference the record.
"""

from __future__ import annotations

import fnmatch
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from provenance.escaping import terminal
from provenance.model.ledger import LedgerEntry, PrRef
from provenance.model.record import EvidenceRecord, PartialMarker, SourceFile, Topology
from provenance.normalise.policy import Policy
from provenance.store.evidence import EvidenceStore
from provenance.store.ledger import Ledger


class EvidenceQuery(BaseModel):
    """Filters of ``evidence list`` (all optional) and where to read from."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    key: str | None = None
    pr: PrRef | None = None
    hardware: str | None = None
    ledger: Path
    evidence: Path


class FlagView(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)

    key: str
    value: str
    class_: str = Field(alias="class")


class PointView(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    scenario: str
    isl: int | None
    osl: int | None
    conc: int | None
    tp: int | None
    ep: int | None
    dp_attn: bool | None
    prefill: dict[str, Any] | None = None
    decode: dict[str, Any] | None = None


class LinkedPr(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    pr: str
    title: str
    merge_commit: str | None
    validated: bool


class EvidenceView(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    repo: str
    commit: str
    files: list[SourceFile]
    config_key: str
    checkpoint: str
    hardware: str
    framework: str
    precision: str | None
    image: str | None
    points: list[PointView]
    topology: Topology
    roles: dict[str, list[FlagView]]
    partial: list[PartialMarker]
    prs: list[LinkedPr]


def _view(record: EvidenceRecord, policy: Policy, prs: list[LedgerEntry]) -> EvidenceView:
    roles = {
        role: [
            FlagView(key=key, value=value, class_=str(policy.classify(key)))
            for key, value in flags.items()
        ]
        for role, flags in sorted(record.roles.items())
    }
    points = [
        PointView(
            scenario=w.scenario,
            isl=w.isl,
            osl=w.osl,
            conc=w.conc,
            tp=w.tp,
            ep=w.ep,
            dp_attn=w.dp_attn,
            prefill=w.prefill,
            decode=w.decode,
        )
        for w in record.workloads
    ]
    return EvidenceView(
        id=record.id,
        repo=record.source.repo,
        commit=record.source.commit,
        files=list(record.source.files),
        config_key=record.config_key,
        checkpoint=record.checkpoint,
        hardware=record.hardware,
        framework=record.framework,
        precision=record.precision,
        image=record.image,
        points=points,
        topology=record.topology,
        roles=roles,
        partial=list(record.partial),
        prs=[
            LinkedPr(
                pr=str(e.pr), title=e.title, merge_commit=e.merge_commit, validated=e.validated
            )
            for e in prs
        ],
    )


def list_evidence(query: EvidenceQuery, policy: Policy) -> list[EvidenceView]:
    """Stored records matching the query, in (config key, first point, id) order."""
    entries = Ledger(query.ledger).entries()
    by_record: dict[str, list[LedgerEntry]] = {}
    for entry in entries:
        for record_id in entry.records:
            by_record.setdefault(record_id, []).append(entry)
    wanted: set[str] | None = None
    if query.pr is not None:
        wanted = {rid for e in entries if e.pr == query.pr for rid in e.records}
    store = EvidenceStore(query.evidence)
    ids = store.ids() if wanted is None else sorted(wanted)
    views = []
    for record_id in ids:
        record = store.get(record_id)
        if query.key is not None and not fnmatch.fnmatchcase(record.config_key, query.key):
            continue
        if query.hardware is not None and record.hardware != query.hardware:
            continue
        views.append(_view(record, policy, by_record.get(record.id, [])))
    views.sort(key=_order)
    return views


def _order(view: EvidenceView) -> tuple[Any, ...]:
    first = view.points[0] if view.points else None
    return (
        view.config_key,
        first.isl or 0 if first else 0,
        first.tp or 0 if first else 0,
        first.ep or 0 if first else 0,
        first.conc or 0 if first else 0,
        view.id,
    )


def _point_text(point: PointView) -> str:
    parts = [f"isl={point.isl}", f"osl={point.osl}", f"conc={point.conc}"]
    if point.tp is not None:
        parts += [f"tp={point.tp}", f"ep={point.ep}", f"dp_attn={str(point.dp_attn).lower()}"]
    for role, label in (("prefill", point.prefill), ("decode", point.decode)):
        if label:
            shape = ",".join(f"{k}={v}" for k, v in label.items())
            parts.append(f"{role}({shape})")
    if point.scenario != "fixed-seq-len":
        parts.insert(0, point.scenario)
    return " ".join(parts)


def render_text(views: list[EvidenceView]) -> str:
    """Plain text, one block per record; every untrusted value made terminal-safe."""
    t = terminal
    lines: list[str] = []
    for view in views:
        lines.append(f"{t(view.config_key)}  [{view.id}]")
        lines.append(
            f"  hardware {t(view.hardware)}  framework {t(view.framework)}  "
            f"checkpoint {t(view.checkpoint)}  image {t(view.image or '-')}"
        )
        lines.append(f"  source {t(view.repo)}@{view.commit}")
        for file in view.files:
            lines.append(f"    {t(file.path)}  blob {file.blob_sha}  ({file.kind})")
        topo = view.topology
        shape = "; ".join(
            f"{role}: {r.workers} x {r.gpus_per_worker} GPU (tp={r.tp} dp={r.dp} ep={r.ep}"
            f"{' dp-attention' if r.dp_attention else ''}"
            f"{' expert-parallel' if r.expert_parallel else ''})"
            for role, r in sorted(topo.roles.items())
        )
        nodes = f", {topo.nodes} node(s)" if topo.nodes is not None else ""
        colocated = ", colocated" if topo.colocated else ""
        lines.append(f"  topology {topo.kind}: {shape}; {topo.total_gpus} GPUs{nodes}{colocated}")
        lines.append(f"  points ({len(view.points)}):")
        lines.extend(f"    {t(_point_text(p))}" for p in view.points)
        for role, flags in view.roles.items():
            lines.append(f"  role {role}:")
            lines.extend(f"    {t(f.key)} = {t(f.value)}  [{f.class_}]" for f in flags)
        if view.partial:
            lines.append("  partial:")
            for marker in view.partial:
                where = f"{marker.path}:{marker.line}" if marker.line else marker.path
                lines.append(f"    {t(marker.construct_name)} at {t(where)}: {t(marker.detail)}")
        prs = ", ".join(
            f"{t(p.pr)} ({(p.merge_commit or '-')[:12]}{', validated' if p.validated else ''})"
            for p in view.prs
        )
        lines.append(f"  PRs: {prs or 'none'}")
        lines.append("")
    if not views:
        lines.append("no evidence records match")
    return "\n".join(lines) + "\n"
