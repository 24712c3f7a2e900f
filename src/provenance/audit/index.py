"""The evidence graph (networkx) and the exact-match index the audit uses.

Nodes (``kind`` attribute) and their ids:

==============  ===============================  =========================================
kind            id                               attributes
==============  ===============================  =========================================
``flag``        ``flag:<key>=<value>``           key, value
``evidence``    ``evidence:<record id>``         config_key, checkpoint, hardware, topology
``config``      ``config:<config key>``          —
``pr``          ``pr:<owner/repo#N>``            title, validated
``sweep``       ``sweep:<run id>/<attempt>``     conclusion, head_sha
``commit``      ``commit:<sha>``                 —
``combination`` ``combination:<recipe>#<n>``     recipe, label, selections, verdict
==============  ===============================  =========================================

Edges (``kind`` attribute): ``sets`` evidence → flag (``role``), ``config``
evidence → config, ``introduced-by`` evidence → PR, ``validated-by`` PR → sweep,
``at-commit`` evidence → commit, ``merged-as`` PR → commit, ``renders``
combination → flag (``role``).

The audit does not walk the networkx graph: it uses :class:`EvidenceIndex`'s
exact-match index over (checkpoint, hardware, deployment kind, evidence role,
major FlagSet) and a per-scope candidate list. The networkx form is built on
demand for export (``provenance graph``).
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from provenance.audit.verdicts import EvidenceRef
from provenance.model.flags import FlagSet
from provenance.model.ledger import LedgerEntry
from provenance.model.record import EvidenceRecord
from provenance.model.scope import Scope, record_scope, same_checkpoint

if TYPE_CHECKING:
    import networkx as nx

#: Reduces a full FlagSet to its major flags (``Policy.major``).
MajorFn = Callable[[FlagSet], FlagSet]


@dataclass(frozen=True, eq=False)
class IndexedRecord:
    """An evidence record with what the judge needs precomputed."""

    record: EvidenceRecord
    scope: Scope
    major: Mapping[str, FlagSet]
    prs: tuple[str, ...]
    validated: bool
    ref: EvidenceRef

    @property
    def id(self) -> str:
        return self.record.id

    @property
    def config_key(self) -> str:
        return self.record.config_key


@dataclass
class _Combination:
    node: str
    recipe: str
    label: str
    selections: int
    verdict: str
    roles: Mapping[str, FlagSet]


@dataclass
class EvidenceIndex:
    """Evidence records, ledger entries and an exact-match index over them."""

    records: dict[str, IndexedRecord] = field(default_factory=dict)
    entries: tuple[LedgerEntry, ...] = ()
    _by_scope: dict[Scope, list[IndexedRecord]] = field(default_factory=dict)
    _by_checkpoint_hw: dict[tuple[str, str], list[IndexedRecord]] = field(default_factory=dict)
    _exact: dict[tuple[Scope, str, FlagSet], list[IndexedRecord]] = field(default_factory=dict)
    _combinations: list[_Combination] = field(default_factory=list)

    @classmethod
    def build(
        cls,
        records: Iterable[EvidenceRecord],
        entries: Iterable[LedgerEntry],
        major: MajorFn,
    ) -> EvidenceIndex:
        entry_list = tuple(sorted(entries, key=lambda e: (e.pr.repo, e.pr.number)))
        prs_of: dict[str, list[LedgerEntry]] = defaultdict(list)
        for entry in entry_list:
            for record_id in entry.records:
                prs_of[record_id].append(entry)
        graph = cls(entries=entry_list)
        by_scope: dict[Scope, list[IndexedRecord]] = defaultdict(list)
        by_ckpt_hw: dict[tuple[str, str], list[IndexedRecord]] = defaultdict(list)
        exact: dict[tuple[Scope, str, FlagSet], list[IndexedRecord]] = defaultdict(list)
        # Records share scopes and role FlagSets (1,487 MiniMax-M3 records: 1,711 roles,
        # 719 distinct): reduce each distinct FlagSet once (``major`` is a pure function)
        # and use one Scope object per scope, so index lookups hit by identity.
        majors: dict[FlagSet, FlagSet] = {}
        scopes: dict[Scope, Scope] = {}
        for record in sorted(records, key=lambda r: r.id):
            if not record.id:
                record = record.with_id()
            scope = record_scope(record)
            scope = scopes.setdefault(scope, scope)
            linked = prs_of.get(record.id, [])
            prs = tuple(str(e.pr) for e in linked)
            reduced: dict[str, FlagSet] = {}
            for role, flags in sorted(record.roles.items()):
                known = majors.get(flags)
                if known is None:
                    known = majors[flags] = major(flags)
                reduced[role] = known
            indexed = IndexedRecord(
                record=record,
                scope=scope,
                major=reduced,
                prs=prs,
                validated=any(e.validated for e in linked),
                ref=EvidenceRef(record=record.id, prs=prs),
            )
            graph.records[record.id] = indexed
            by_scope[scope].append(indexed)
            by_ckpt_hw[(scope.checkpoint, scope.hardware)].append(indexed)
            for role, flags in indexed.major.items():
                exact[(scope, role, flags)].append(indexed)
        graph._by_scope = dict(by_scope)
        graph._by_checkpoint_hw = dict(by_ckpt_hw)
        graph._exact = dict(exact)
        return graph

    # Queries --------------------------------------------------------------
    def in_scope(self, scope: Scope, model_id: str) -> list[IndexedRecord]:
        """Records of exactly this scope whose checkpoint is ``model_id``."""
        return [
            r
            for r in self._by_scope.get(scope, ())
            if same_checkpoint(model_id, r.record.checkpoint)
        ]

    def same_checkpoint_hardware(self, scope: Scope, model_id: str) -> list[IndexedRecord]:
        """Records of any deployment kind for this checkpoint and hardware."""
        return [
            r
            for r in self._by_checkpoint_hw.get((scope.checkpoint, scope.hardware), ())
            if same_checkpoint(model_id, r.record.checkpoint)
        ]

    def exact(self, scope: Scope, role: str, flags: FlagSet) -> list[IndexedRecord]:
        """Records in ``scope`` whose ``role`` has exactly these major flags."""
        return self._exact.get((scope, role, flags), [])

    def scopes(self) -> list[Scope]:
        return sorted(self._by_scope, key=lambda s: (s.checkpoint, s.hardware, s.kind))

    # Combination nodes (added by the audit for export) ---------------------
    def add_combination(
        self,
        recipe: str,
        label: str,
        selections: int,
        verdict: str,
        roles: Mapping[str, FlagSet],
    ) -> str:
        node = f"combination:{recipe}#{len(self._combinations)}"
        self._combinations.append(_Combination(node, recipe, label, selections, verdict, roles))
        return node

    # networkx --------------------------------------------------------------
    def to_networkx(self) -> nx.MultiDiGraph:
        import networkx as nx

        graph = nx.MultiDiGraph(name="provenance evidence graph")

        def flag_node(key: str, value: str) -> str:
            node = f"flag:{key}={value}"
            if node not in graph:
                graph.add_node(node, kind="flag", key=key, value=value)
            return node

        for entry in self.entries:
            pr_node = f"pr:{entry.pr}"
            graph.add_node(pr_node, kind="pr", title=entry.title, validated=entry.validated)
            if entry.merge_commit:
                commit = f"commit:{entry.merge_commit}"
                graph.add_node(commit, kind="commit")
                graph.add_edge(pr_node, commit, kind="merged-as")
            for sweep in entry.sweeps:
                sweep_node = f"sweep:{sweep.run_id}/{sweep.attempt}"
                graph.add_node(
                    sweep_node,
                    kind="sweep",
                    conclusion=sweep.conclusion,
                    head_sha=sweep.head_sha,
                    source=sweep.source,
                )
                graph.add_edge(pr_node, sweep_node, kind="validated-by")
        for indexed in self.records.values():
            record = indexed.record
            node = f"evidence:{record.id}"
            graph.add_node(
                node,
                kind="evidence",
                config_key=record.config_key,
                checkpoint=record.checkpoint,
                hardware=record.hardware,
                topology=record.topology.kind,
                validated=indexed.validated,
            )
            config = f"config:{record.config_key}"
            if config not in graph:
                graph.add_node(config, kind="config")
            graph.add_edge(node, config, kind="config")
            commit = f"commit:{record.source.commit}"
            if commit not in graph:
                graph.add_node(commit, kind="commit")
            graph.add_edge(node, commit, kind="at-commit")
            for pr in indexed.prs:
                graph.add_edge(node, f"pr:{pr}", kind="introduced-by")
            for role, flags in indexed.major.items():
                for key, value in flags.items():
                    graph.add_edge(node, flag_node(key, value), kind="sets", role=role)
        for combo in self._combinations:
            graph.add_node(
                combo.node,
                kind="combination",
                recipe=combo.recipe,
                label=combo.label,
                selections=combo.selections,
                verdict=combo.verdict,
            )
            for role, flags in combo.roles.items():
                for key, value in flags.items():
                    graph.add_edge(combo.node, flag_node(key, value), kind="renders", role=role)
        return graph


# Export ----------------------------------------------------------------------


def to_node_link_json(graph: nx.MultiDiGraph) -> dict[str, Any]:
    """Node-link JSON (``{"directed", "multigraph", "graph", "nodes", "edges"}``)."""
    import networkx as nx

    data: dict[str, Any] = nx.node_link_data(graph, edges="edges")
    return data


#: characters XML 1.0 cannot carry (a flag value or PR title may hold them)
_XML_INVALID = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff\ud800-\udfff]")


def _xml_text(value: Any) -> Any:
    if not isinstance(value, str):
        return value
    return _XML_INVALID.sub(lambda m: f"\\x{ord(m.group()):02x}", value)


def write_graphml(graph: nx.MultiDiGraph, stream: Any) -> None:
    """GraphML via networkx (``stream`` is a binary file object).

    Characters XML cannot carry are written as visible ``\\xNN`` escapes, so the
    file stays well-formed whatever the values hold.
    """
    import networkx as nx

    clean = nx.relabel_nodes(graph, {n: _xml_text(n) for n in graph.nodes}, copy=True)
    clean.graph.update({k: _xml_text(v) for k, v in clean.graph.items()})
    for _, data in clean.nodes(data=True):
        data.update({k: _xml_text(v) for k, v in data.items()})
    for _, _, data in clean.edges(data=True):
        data.update({k: _xml_text(v) for k, v in data.items()})
    nx.write_graphml(clean, stream)


def _dot_quote(text: object) -> str:
    value = str(text)
    value = value.replace("\\", "\\\\").replace('"', '\\"')
    value = value.replace("\r", "\\r").replace("\n", "\\n")
    value = "".join(ch if ch.isprintable() else f"\\x{ord(ch):02x}" for ch in value)
    return f'"{value}"'


_DOT_SHAPES: Mapping[str, str] = {
    "flag": "ellipse",
    "evidence": "box",
    "config": "note",
    "pr": "component",
    "sweep": "hexagon",
    "commit": "cylinder",
    "combination": "diamond",
}


def to_dot(graph: nx.MultiDiGraph) -> str:
    """Graphviz DOT text (written here; no pydot dependency)."""
    lines = ["digraph provenance {", "  rankdir=LR;"]
    for node, attrs in sorted(graph.nodes(data=True), key=lambda item: str(item[0])):
        kind = str(attrs.get("kind", ""))
        parts = [f"shape={_DOT_SHAPES.get(kind, 'ellipse')}", f"label={_dot_quote(node)}"]
        parts += [f"{k}={_dot_quote(v)}" for k, v in sorted(attrs.items()) if v is not None]
        lines.append(f"  {_dot_quote(node)} [{', '.join(parts)}];")
    edges: Sequence[tuple[Any, Any, dict[str, Any]]] = sorted(
        graph.edges(data=True), key=lambda e: (str(e[0]), str(e[1]), sorted(e[2].items()))
    )
    for source, target, attrs in edges:
        parts = [f"{k}={_dot_quote(v)}" for k, v in sorted(attrs.items()) if v is not None]
        label = attrs.get("kind", "")
        if attrs.get("role"):
            label = f"{label} ({attrs['role']})"
        parts.insert(0, f"label={_dot_quote(label)}")
        lines.append(f"  {_dot_quote(source)} -> {_dot_quote(target)} [{', '.join(parts)}];")
    lines.append("}")
    return "\n".join(lines) + "\n"
