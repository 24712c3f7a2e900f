"""Published JSON Schemas of every file kind ``provenance`` writes or reads.

``provenance schema KIND`` prints them; the generated copies shipped next to
this module (``<kind>.json``) are kept up to date by a test. Regenerate them
with ``python -m provenance.schemas``.
"""

from __future__ import annotations

import importlib
import json
from importlib import resources
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from provenance.errors import UsageError

JSON_SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"

#: kind -> (module, model class name)
KINDS: dict[str, tuple[str, str]] = {
    "audit": ("provenance.audit.verdicts", "AuditReport"),
    "ledger-pr": ("provenance.model.ledger", "LedgerEntry"),
    "declarations": ("provenance.model.ledger", "Declarations"),
    "ledger-manifest": ("provenance.model.ledger", "LedgerManifest"),
    "evidence-record": ("provenance.model.record", "EvidenceRecord"),
    "verify": ("provenance.store.verify", "VerifyReport"),
    "evidence-index": ("provenance.store.record_index", "RecordIndex"),
    "diff": ("provenance.report.pr_json", "PrDiffReport"),
    "suggest": ("provenance.review.suggest.model", "SuggestReport"),
}


def model_of(kind: str) -> type[BaseModel]:
    target = KINDS.get(kind)
    if target is None:
        raise UsageError(f"unknown schema kind {kind!r}; known: {', '.join(sorted(KINDS))}")
    model = getattr(importlib.import_module(target[0]), target[1])
    if not (isinstance(model, type) and issubclass(model, BaseModel)):
        raise TypeError(f"{target[0]}:{target[1]} is not a pydantic model")
    return model


def generate(kind: str) -> dict[str, Any]:
    """The JSON Schema of ``kind``, generated from its pydantic model (by alias)."""
    schema = model_of(kind).model_json_schema(by_alias=True)
    return {"$schema": JSON_SCHEMA_DIALECT, **schema}


def render(kind: str) -> str:
    """The text of the published schema file for ``kind`` (stable, trailing newline)."""
    return json.dumps(generate(kind), indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def published(kind: str) -> str:
    """The schema file shipped in the package for ``kind``."""
    model_of(kind)
    return resources.files(__name__).joinpath(f"{kind}.json").read_text(encoding="utf-8")


def write_all(directory: Path) -> list[Path]:
    """Write every kind's schema into ``directory``; returns the paths written."""
    written = []
    for kind in sorted(KINDS):
        path = directory / f"{kind}.json"
        path.write_text(render(kind), encoding="utf-8")
        written.append(path)
    return written
