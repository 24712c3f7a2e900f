"""The oracle's JSON-lines shape of a combination, its canonical text and digest.

``combination_record`` gives exactly the ``recipe`` / ``selection`` / ``result``
objects the reference oracle prints (the ``result`` restricted to
``deploy_type``, ``model_id`` and ``roles``), so the two can be compared record
for record. ``canonical_json`` sorts keys and writes integral floats as
integers (JavaScript has one number type), so the same data from either side
gives the same text and the same :func:`record_digest`.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping
from typing import Any

from provenance.recipes.combination import RenderResult, RoleCommand, Selection

#: Hex characters of the sha256 kept per golden record (64 bits).
DIGEST_CHARS = 16


def selection_record(selection: Selection) -> dict[str, Any]:
    pd = None
    if selection.pd is not None:
        pd = {
            "prefill": {
                "nodes": selection.pd.prefill.nodes,
                "parallelism": selection.pd.prefill.parallelism,
            },
            "decode": {
                "nodes": selection.pd.decode.nodes,
                "parallelism": selection.pd.decode.parallelism,
            },
        }
    out: dict[str, Any] = {
        "variant": selection.variant,
        "hardware": selection.hardware,
        "strategy": selection.strategy,
        "node_count": selection.node_count,
        "pd": pd,
        "kv_offload": selection.kv_offload,
        "kv_instances": selection.kv_instances,
        "features": list(selection.features),
        "feature_modes": dict(selection.feature_modes),
    }
    if selection.strategy is None:
        out["omni_task"] = selection.omni_task
    return out


def role_record(role: RoleCommand) -> dict[str, Any]:
    out: dict[str, Any] = {"role": role.role}
    if role.instance is not None:
        out["instance"] = role.instance
    if role.node_rank is not None:
        out["node_rank"] = role.node_rank
    out["argv"] = list(role.argv) if role.argv is not None else None
    out["env"] = dict(role.env)
    if role.command is not None:
        out["command"] = role.command
    return out


def result_record(result: RenderResult) -> dict[str, Any]:
    return {
        "deploy_type": result.deploy_type,
        "model_id": result.model_id,
        "roles": [role_record(r) for r in result.roles],
    }


def combination_record(recipe: str, selection: Selection, result: RenderResult) -> dict[str, Any]:
    return {
        "recipe": recipe,
        "selection": selection_record(selection),
        "result": result_record(result),
    }


def oracle_projection(line: Mapping[str, Any]) -> dict[str, Any]:
    """Reduce one oracle JSON line to the fields ``combination_record`` produces."""
    result = line["result"]
    roles = []
    for role in result["roles"]:
        kept = {k: role[k] for k in ("role", "instance", "node_rank", "argv", "env") if k in role}
        if result.get("deploy_type") == "omni" and "command" in role:
            kept["command"] = role["command"]
        roles.append(kept)
    return {
        "recipe": line["recipe"],
        "selection": dict(line["selection"]),
        "result": {
            "deploy_type": result["deploy_type"],
            "model_id": result.get("model_id"),
            "roles": roles,
        },
    }


def _js_normalise(value: Any) -> Any:
    if isinstance(value, float) and math.isfinite(value) and value == int(value):
        return int(value)
    if isinstance(value, dict):
        return {k: _js_normalise(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_js_normalise(v) for v in value]
    return value


def canonical_json(record: Mapping[str, Any]) -> str:
    return json.dumps(
        _js_normalise(dict(record)), sort_keys=True, separators=(",", ":"), ensure_ascii=False
    )


def record_digest(record: Mapping[str, Any]) -> str:
    """Short sha256 of the canonical JSON of ``selection`` + ``result``."""
    body = {"selection": record["selection"], "result": record["result"]}
    return hashlib.sha256(canonical_json(body).encode("utf-8")).hexdigest()[:DIGEST_CHARS]
