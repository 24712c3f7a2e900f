"""``EvidenceRecord``: one benchmarked deployment, per role, content-addressed.

A record is what InferenceX really ran for one config key at one search-space
point (or at several points that produced the identical deployment; they
collapse into one record listing every ``WorkloadPoint`` it covers).

The record id is ``sha256:`` + the SHA-256 of the record's canonical JSON
(sorted keys, no whitespace, UTF-8) *without* the ``id`` field, so any change
to the content changes the id and ``provenance verify`` can detect tampering.

``history`` lists the commits that moved, renamed or deprecated the record's
content without changing it (they never back the record). A record without
such history serialises without the field, so records written before it existed
keep their bytes and ids.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SerializerFunctionWrapHandler, model_serializer

from provenance.model.flags import FlagSet
from provenance.model.ledger import INFERENCEX_REPO

RECORD_SCHEMA = "provenance.evidence/v1"

EvidenceRole = Literal["serve", "prefill", "decode"]


#: What role a file read for a record plays.
SourceFileKind = Literal["master-config", "launcher", "srt-slurm-recipe", "perf-changelog", "other"]


class SourceFile(BaseModel):
    """A file read at ``commit``: its repository path and git blob SHA."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    path: str
    blob_sha: str
    kind: SourceFileKind


class EvidenceSource(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    repo: str = INFERENCEX_REPO
    commit: str
    files: tuple[SourceFile, ...]


class RoleTopology(BaseModel):
    """How one role is deployed: workers and each worker's parallelism."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    workers: int = 1
    gpus_per_worker: int
    tp: int = 1
    ep: int = 1
    dp: int = 1
    dp_attention: bool = False
    expert_parallel: bool = False
    nodes: int | None = None


class Topology(BaseModel):
    """Deployment shape: single-node (one ``serve`` role) or disaggregated."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["single_node", "disaggregated", "aggregated_multi_node"]
    roles: dict[str, RoleTopology]
    nodes: int | None = None
    gpus_per_node: int | None = None
    colocated: bool = False
    total_gpus: int


class WorkloadPoint(BaseModel):
    """One search-space point the record covers."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    scenario: str = "fixed-seq-len"
    isl: int | None = None
    osl: int | None = None
    conc: int | None = None
    tp: int | None = None
    ep: int | None = None
    dp_attn: bool | None = None
    prefill: dict[str, Any] | None = None
    decode: dict[str, Any] | None = None


class PartialMarker(BaseModel):
    """A construct the static extractor could not evaluate; never guessed.

    ``construct`` (attribute ``construct_name``; ``construct`` is a pydantic
    method) names the bash construct, e.g. ``command-substitution``.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)

    construct_name: str = Field(alias="construct")
    path: str
    line: int | None = None
    detail: str = ""


class ContentPlace(BaseModel):
    """Where a record's content lives: a file, and the config key inside a master config."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    path: str
    config_key: str | None = None


class ContentMove(BaseModel):
    """A commit that moved, renamed or deprecated a record's content without changing it,
    or changed its launcher or recipe text without changing what the record runs.

    ``kind``: ``moved``, ``renamed``, ``deprecated``, or ``unchanged-served`` — the
    commit edited the text of the launcher or recipe files in ``after`` (as they
    are at the commit; ``before``: those whose text it replaced, as at its first
    parent), yet the config key extracted at its first parent has the same
    determining content over every workload (``served_content.py``).
    Otherwise ``before``: where the content was at the commit's first parent;
    ``after``: where it is at the commit; the newest such move's ``after`` is where
    the content lives at the record's commit. Such a commit benchmarked nothing
    and never backs a record.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["moved", "renamed", "deprecated", "unchanged-served"]
    file_kind: Literal["master-config", "launcher", "srt-slurm-recipe", "other"]
    commit: str
    pr: int | None = None
    before: tuple[ContentPlace, ...]
    after: tuple[ContentPlace, ...]


class EvidenceRecord(BaseModel):
    """One evidence point: what ran, where it came from, per-role canonical flags."""

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)

    schema_: str = Field(default=RECORD_SCHEMA, alias="schema")
    id: str = ""
    source: EvidenceSource
    config_key: str
    checkpoint: str
    hardware: str
    runner: str | None = None
    precision: str | None = None
    framework: str
    image: str | None = None
    topology: Topology
    workloads: tuple[WorkloadPoint, ...]
    roles: dict[str, FlagSet]
    partial: tuple[PartialMarker, ...] = ()
    #: moves, renames and deprecations of the content up to ``source.commit``, newest first
    history: tuple[ContentMove, ...] = ()

    @model_serializer(mode="wrap")
    def _drop_empty_history(self, handler: SerializerFunctionWrapHandler) -> Any:
        data = handler(self)
        if isinstance(data, dict) and not self.history:
            data.pop("history", None)
        return data

    @property
    def is_partial(self) -> bool:
        return bool(self.partial)

    def content(self) -> dict[str, Any]:
        """The hashed content: the JSON form without ``id``."""
        data = self.model_dump(mode="json", by_alias=True)
        data.pop("id", None)
        return data

    def compute_id(self) -> str:
        return "sha256:" + hashlib.sha256(canonical_json(self.content())).hexdigest()

    def with_id(self) -> EvidenceRecord:
        return self.model_copy(update={"id": self.compute_id()})


def canonical_json(data: Any) -> bytes:
    """Canonical JSON bytes: sorted keys, no insignificant whitespace, UTF-8."""
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode(
        "utf-8"
    )
