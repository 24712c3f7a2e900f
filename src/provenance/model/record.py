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

``conditional`` keeps the flags whose value depends on a condition the launcher
tests at run time (a host probe: ``if [[ $(rocm-smi …) -lt 177 ]]``), evaluated on
every path (``docs/evidence.md``): role → key → the value on each *alternative* of
the record (``None``: unset there) and the conditions it depends on. Alternatives are
the distinct combinations of those values over the paths, in one order shared by
every key of the record, so ``alternatives()`` gives each path's flags exactly. Such
a key is not in ``roles``. A record without one serialises without the field (same
bytes and id as before it existed).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any, Literal, Self

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    model_serializer,
    model_validator,
)

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


class RuntimeCondition(BaseModel):
    """A condition a launcher tests that is known only when it runs: its text as written
    (``[[ "$version" == "" || $version -lt 177 ]]``), file and line."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    text: str
    path: str
    line: int

    def __str__(self) -> str:
        return f"{self.text} ({self.path}:{self.line})"


class ConditionalValue(BaseModel):
    """A flag whose value depends on run-time conditions: its value on each alternative of
    the record (``None``: unset), and the conditions that change it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    values: tuple[str | None, ...]
    conditions: tuple[RuntimeCondition, ...]

    def distinct(self) -> tuple[str | None, ...]:
        """The values it can take, once each (set values sorted, then unset)."""
        found = set(self.values)
        return (*sorted(v for v in found if v is not None), *((None,) if None in found else ()))

    def describe(self) -> str:
        """``depends on C (path:line): 1 or unset``."""
        values = " or ".join("unset" if v is None else v for v in self.distinct())
        conditions = " and ".join(str(c) for c in self.conditions)
        return f"depends on {conditions}: {values}"


#: role → key → its conditional value
ConditionalFlags = dict[str, dict[str, ConditionalValue]]


def split_conditional(
    runs: Sequence[tuple[Sequence[bool], FlagSet]], conditions: Sequence[RuntimeCondition]
) -> tuple[FlagSet, dict[str, ConditionalValue]]:
    """One role's flags on every path of the run-time ``conditions`` → the flags common to
    all paths and the conditional ones. ``runs`` has one ``(outcomes, flags)`` per
    combination of outcomes (one bool per condition, every combination present). A key
    depends on a condition when flipping that condition alone changes its value on some
    path."""
    if not runs:
        return FlagSet(), {}
    keys = sorted({key for _, flags in runs for key in flags})
    varying = [key for key in keys if len({flags.get(key) for _, flags in runs}) > 1]
    common = FlagSet({k: v for k, v in runs[0][1].items() if k not in varying})
    by_outcome = {tuple(outcomes): flags for outcomes, flags in runs}
    rows = sorted(
        {tuple(flags.get(key) for key in varying) for _, flags in runs},
        key=lambda row: tuple((v is not None, v or "") for v in row),
    )
    out: dict[str, ConditionalValue] = {}
    for column, key in enumerate(varying):
        depends = []
        for index, condition in enumerate(conditions):
            for outcomes, flags in by_outcome.items():
                flipped = (*outcomes[:index], not outcomes[index], *outcomes[index + 1 :])
                other = by_outcome.get(flipped)
                if other is not None and other.get(key) != flags.get(key):
                    depends.append(condition)
                    break
        out[key] = ConditionalValue(
            values=tuple(row[column] for row in rows), conditions=tuple(depends)
        )
    return common, out


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
    #: role → key → a value that depends on run-time conditions (see the module docstring)
    conditional: ConditionalFlags = Field(default_factory=dict)

    @model_validator(mode="after")
    def _aligned_alternatives(self) -> Self:
        lengths = {len(v.values) for keys in self.conditional.values() for v in keys.values()}
        if len(lengths) > 1 or any(n < 2 for n in lengths):
            raise ValueError("conditional values must give every key one value per alternative")
        for role, keys in self.conditional.items():
            clash = sorted(keys.keys() & self.roles.get(role, FlagSet()).keys())
            if clash:
                raise ValueError(f"{role}: {', '.join(clash)} both conditional and fixed")
        return self

    @model_serializer(mode="wrap")
    def _drop_empty_history(self, handler: SerializerFunctionWrapHandler) -> Any:
        data = handler(self)
        if isinstance(data, dict):
            if not self.history:
                data.pop("history", None)
            if not self.conditional:
                data.pop("conditional", None)
        return data

    def alternatives(self) -> list[Mapping[str, FlagSet]]:
        """The flags of each role on each alternative (one, ``roles``, without conditional
        values); every alternative is what the benchmark ran on some path."""
        if not self.conditional:
            return [self.roles]
        count = len(next(iter(next(iter(self.conditional.values())).values())).values)
        out: list[Mapping[str, FlagSet]] = []
        for index in range(count):
            roles = dict(self.roles)
            for role, keys in self.conditional.items():
                extra = {k: v.values[index] for k, v in keys.items()}
                fixed = dict(roles.get(role, FlagSet()).items())
                fixed.update({k: v for k, v in extra.items() if v is not None})
                roles[role] = FlagSet(fixed)
            out.append(roles)
        return out

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
