"""The oracle's JSON-lines shape of a combination, its canonical text and digest.

``combination_record`` gives exactly the ``recipe`` / ``selection`` / ``result``
objects the reference oracle prints (the ``result`` restricted to
``deploy_type``, ``model_id`` and ``roles``), so the two can be compared record
for record. ``canonical_json`` sorts keys; ``role_record`` writes integral float env values as
integers (JavaScript has one number type), so the same data from either side
gives the same text and the same :func:`record_digest`. Env values are the only
place a float can occur (a YAML ``1.0``); they are written as JavaScript would.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Iterable, Mapping
from typing import Any

from provenance.model.combination import PdSelection, RenderResult, RoleCommand, Selection
from provenance.recipes.enumerate.rules import recipe_is_omni
from provenance.recipes.render.synthesis import (
    Renderer,
    RoleInputs,
    result_deploy_type,
    role_inputs,
)

#: Hex characters of the sha256 kept per golden record (64 bits).
DIGEST_CHARS = 16


def selection_record_pd(pd: PdSelection) -> dict[str, Any]:
    return {
        "prefill": {"nodes": pd.prefill.nodes, "parallelism": pd.prefill.parallelism},
        "decode": {"nodes": pd.decode.nodes, "parallelism": pd.decode.parallelism},
    }


def selection_record(selection: Selection) -> dict[str, Any]:
    pd = selection_record_pd(selection.pd) if selection.pd is not None else None
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
    out["env"] = {name: _js_number(value) for name, value in role.env.items()}
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


def _js_number(value: Any) -> Any:
    """An integral float as an int, as JavaScript's JSON writes it (env values only)."""
    if type(value) is float and math.isfinite(value) and value == int(value):
        return int(value)
    return value


def canonical_json(record: object) -> str:
    """Sorted keys, compact separators, UTF-8 kept (the digest's input text)."""
    return json.dumps(record, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def record_digest(record: Mapping[str, Any]) -> str:
    """Short sha256 of the canonical JSON of ``selection`` + ``result``."""
    body = {"selection": record["selection"], "result": record["result"]}
    return hashlib.sha256(canonical_json(body).encode("utf-8")).hexdigest()[:DIGEST_CHARS]


def group_key(selection: Mapping[str, Any]) -> str:
    """Golden-data group of a selection record: ``variant|hardware|strategy``."""
    strategy = selection.get("strategy") or "omni"
    return f"{selection['variant']}|{selection['hardware']}|{strategy}"


def group_digest(digests: Iterable[str]) -> str:
    """Order-independent digest of a group's record digests."""
    text = "\n".join(sorted(digests))
    return hashlib.sha256(text.encode("ascii")).hexdigest()[:DIGEST_CHARS]


class RecordDigester:
    """:func:`record_digest` of rendered selections, fast for whole cross-products.

    Each role's canonical JSON is computed once per
    :class:`~provenance.recipes.render.synthesis.RoleInputs` and the record's canonical
    text is assembled around it; the result always equals
    ``record_digest(combination_record(...))`` (tested).
    """

    def __init__(self, renderer: Renderer) -> None:
        self.renderer = renderer
        self._omni = recipe_is_omni(renderer.recipe)
        self._role_text: dict[RoleInputs, tuple[str, str]] = {}

    def _role(self, key: RoleInputs) -> tuple[str, str]:
        found = self._role_text.get(key)
        if found is None:
            role = self.renderer.role(key)
            model_id = role.argv[2] if role.argv else ""
            found = (canonical_json(role_record(role)), model_id)
            self._role_text[key] = found
        return found

    def digest(self, selection: Selection) -> str:
        renderer = self.renderer
        if self._omni:
            result = renderer.render(selection)
            record = combination_record(renderer.recipe.hf_id, selection, result)
            return record_digest(record)
        keys = role_inputs(renderer.recipe, renderer.root, selection)
        roles = [self._role(k) for k in keys]
        model_id = roles[0][1] if roles else None
        deploy_type = result_deploy_type(renderer.root, selection)
        text = (
            '{"result":{"deploy_type":'
            + json.dumps(deploy_type)
            + ',"model_id":'
            + json.dumps(model_id, ensure_ascii=False)
            + ',"roles":['
            + ",".join(text for text, _ in roles)
            + ']},"selection":'
            + canonical_json(selection_record(selection))
            + "}"
        )
        return hashlib.sha256(text.encode("utf-8")).hexdigest()[:DIGEST_CHARS]
