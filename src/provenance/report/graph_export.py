"""``provenance graph``: the evidence index as a networkx graph, and its export formats.

networkx is used only here: the audit works on :class:`EvidenceIndex` (plain data).

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

Export: node-link JSON (:func:`to_node_link_json`), GraphML (:func:`write_graphml`)
and Graphviz DOT (:func:`to_dot`, written here).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from provenance.audit.index import EvidenceIndex
from provenance.audit.normaliser import PolicyNormaliser
from provenance.audit.pipeline import (
    AuditFilters,
    AuditInputs,
    audit,
    default_inputs,
    ledger_dirs,
    load_graph,
    recipe_inputs,
)
from provenance.model.flags import FlagSet

if TYPE_CHECKING:
    import networkx as nx


@dataclass(frozen=True)
class Combination:
    """One audited outcome of a recipe, drawn as a ``combination`` node."""

    recipe: str
    label: str
    selections: int
    verdict: str
    roles: Mapping[str, FlagSet]


def export_graph(inputs: AuditInputs, *, with_recipes: bool) -> nx.MultiDiGraph:
    """The evidence graph, plus one combination node per distinct outcome if asked."""
    normaliser = PolicyNormaliser()
    if not with_recipes:
        ledger, evidence = ledger_dirs(inputs)
        index, _ = load_graph(ledger, evidence, normaliser)
        return evidence_graph(index)
    resolved = default_inputs(inputs)
    index, declarations = load_graph(resolved.ledger, resolved.evidence, normaliser)
    report = audit(recipe_inputs(resolved, AuditFilters()), index, normaliser, declarations)
    combinations = []
    for entry in report.verdicts:
        first = next(entry.iter_selections(), None)
        combinations.append(
            Combination(
                recipe=entry.recipe,
                label=first.label() if first is not None else "",
                selections=entry.combinations,
                verdict=str(entry.verdict),
                roles={
                    role.role: FlagSet({f.key: f.value for f in role.flags}) for role in entry.roles
                },
            )
        )
    return evidence_graph(index, combinations)


def evidence_graph(
    index: EvidenceIndex, combinations: Sequence[Combination] = ()
) -> nx.MultiDiGraph:
    """The evidence graph of ``index``, plus one node for each of ``combinations``."""
    import networkx as nx

    graph = nx.MultiDiGraph(name="provenance evidence graph")

    def flag_node(key: str, value: str) -> str:
        node = f"flag:{key}={value}"
        if node not in graph:
            graph.add_node(node, kind="flag", key=key, value=value)
        return node

    for entry in index.entries:
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
    for indexed in index.every_record():
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
    for number, combo in enumerate(combinations):
        combo_node = f"combination:{combo.recipe}#{number}"
        graph.add_node(
            combo_node,
            kind="combination",
            recipe=combo.recipe,
            label=combo.label,
            selections=combo.selections,
            verdict=combo.verdict,
        )
        for role, flags in combo.roles.items():
            for key, value in flags.items():
                graph.add_edge(combo_node, flag_node(key, value), kind="renders", role=role)
    return graph


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
