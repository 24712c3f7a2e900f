"""Verdicts and the audit report (JSON schema ``provenance.audit/v2``).

Semantics (``../shared/DESIGN.md``, "Verdict semantics"): a combination is
``recommended`` only when, for every role, one single validated evidence
point in scope (same checkpoint, hardware, deployment shape) has exactly the
role's major flags. Otherwise it is ``guide-only`` with machine-readable
reasons and the nearest evidence.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializationInfo,
    SerializerFunctionWrapHandler,
    field_serializer,
    model_validator,
)
from pydantic.json_schema import SkipJsonSchema

from provenance.model.combination import PdPool, PdSelection, Selection, construct
from provenance.model.reasons import ReasonCode, VerdictKind

AUDIT_SCHEMA: Literal["provenance.audit/v2"] = "provenance.audit/v2"

#: Serialisation context key: ``{record id: index}``. When given, a flag's evidence is
#: written as indexes into the report's ``records`` table (the audit report does this:
#: the same records back the same flag in thousands of verdict entries).
RECORD_INDEX = "record_index"


class EvidenceRef(BaseModel):
    """A pointer to an evidence record and the PRs (``repo#N``) that introduced it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    record: str
    prs: tuple[str, ...] = ()


def _index_or_ref(schema: dict[str, Any]) -> None:
    """JSON Schema of a flag's evidence list: references, or indexes into ``records``."""
    schema["items"] = {
        "anyOf": [
            {"type": "integer", "minimum": 0, "description": "index into the report's records"},
            schema["items"],
        ]
    }


class FlagProvenance(BaseModel):
    """One major flag of one role and the evidence that sets it in scope.

    In JSON, ``evidence`` is a list of references, or, inside an audit report, a list
    of indexes into the report's ``records`` table (see :data:`RECORD_INDEX`).
    """

    key: str
    value: str
    cls: str = Field(alias="class")
    evidence: tuple[EvidenceRef, ...] = Field(default=(), json_schema_extra=_index_or_ref)

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)

    @field_serializer("evidence", mode="wrap")
    def _evidence_as_indexes(
        self,
        value: tuple[EvidenceRef, ...],
        handler: SerializerFunctionWrapHandler,
        info: SerializationInfo,
    ) -> Any:
        context = info.context
        index: Mapping[str, int] | None = (
            context.get(RECORD_INDEX) if isinstance(context, dict) else None
        )
        if index is None:
            return handler(value)
        return [index[ref.record] for ref in value]


class RoleFlags(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    role: str
    node_rank: int | None = None
    flags: tuple[FlagProvenance, ...]


class Reason(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    code: ReasonCode
    role: str | None = None
    flag: str | None = None
    recipe_value: str | None = None
    evidence_value: str | None = None
    sources: tuple[str, ...] = ()
    detail: str = ""


class NearestEvidence(BaseModel):
    """The evidence point with the smallest flag difference, per role."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    record: str
    config_key: str
    prs: tuple[str, ...] = ()
    role: str | None = None
    distance: int
    only_recipe: dict[str, str] = Field(default_factory=dict)
    only_evidence: dict[str, str] = Field(default_factory=dict)
    changed: dict[str, tuple[str, str]] = Field(default_factory=dict)


class FeatureChoice(BaseModel):
    """The enabled features of a selection and the effective mode of each modes-feature."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    features: tuple[str, ...] = ()
    feature_modes: dict[str, str | None] = Field(default_factory=dict)


class PdPools(BaseModel):
    """Every pairing of these prefill pools with these decode pools."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    prefill: tuple[PdPool, ...]
    decode: tuple[PdPool, ...]


class SelectionSet(BaseModel):
    """A cross-product of selections: one deployment shape × feature choices × PD pools.

    It stands for ``len(features) × len(pd.prefill) × len(pd.decode)`` selections
    (``len(features)`` without PD), each with the shape's fields, one feature choice
    and, under ``pd_cluster``, one prefill and one decode pool. Audits group thousands
    of combinations with one outcome; listing them one by one would dominate the report.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    variant: str
    hardware: str
    strategy: str | None
    node_count: int | None
    kv_offload: str | None = None
    kv_instances: int | None = None
    omni_task: str | None = None
    features: tuple[FeatureChoice, ...]
    pd: PdPools | None = None

    @property
    def count(self) -> int:
        pools = len(self.pd.prefill) * len(self.pd.decode) if self.pd is not None else 1
        return len(self.features) * pools

    def selections(self) -> Iterator[Selection]:
        """Every selection of the set: feature choices outermost, then prefill, then decode."""
        pairs: list[PdSelection | None] = [None]
        if self.pd is not None:
            pairs = [
                construct(PdSelection, {"prefill": p, "decode": d})
                for p in self.pd.prefill
                for d in self.pd.decode
            ]
        for choice in self.features:
            for pair in pairs:
                yield construct(
                    Selection,
                    {
                        "variant": self.variant,
                        "hardware": self.hardware,
                        "strategy": self.strategy,
                        "node_count": self.node_count,
                        "pd": pair,
                        "kv_offload": self.kv_offload,
                        "kv_instances": self.kv_instances,
                        "features": choice.features,
                        "feature_modes": choice.feature_modes,
                        "omni_task": self.omni_task,
                    },
                )

    @classmethod
    def of(cls, selection: Selection) -> SelectionSet:
        """The set holding exactly ``selection`` (built without validation: a
        :class:`Selection` is already valid)."""
        pd = selection.pd
        return construct(
            cls,
            {
                "variant": selection.variant,
                "hardware": selection.hardware,
                "strategy": selection.strategy,
                "node_count": selection.node_count,
                "kv_offload": selection.kv_offload,
                "kv_instances": selection.kv_instances,
                "omni_task": selection.omni_task,
                "features": (feature_choice(selection.features, selection.feature_modes),),
                "pd": construct(PdPools, {"prefill": (pd.prefill,), "decode": (pd.decode,)})
                if pd is not None
                else None,
            },
        )


def feature_choice(features: tuple[str, ...], modes: dict[str, str | None]) -> FeatureChoice:
    """A :class:`FeatureChoice` built without validation (from an enumerated selection)."""
    return construct(FeatureChoice, {"features": features, "feature_modes": modes})


class VerdictEntry(BaseModel):
    """The outcome shared by a group of combinations (``combinations`` of them).

    ``selections`` lists them as :class:`SelectionSet` cross-products. For
    convenience the constructor also accepts ``selection=`` (one
    :class:`~provenance.model.combination.Selection`) or ``selections=`` as a list
    of plain selections; each becomes a set of one.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    recipe: str
    combinations: int
    selections: tuple[SelectionSet, ...]
    verdict: VerdictKind
    roles: tuple[RoleFlags, ...]
    reasons: tuple[Reason, ...] = ()
    nearest: tuple[NearestEvidence, ...] = ()
    evidence: tuple[EvidenceRef, ...] = ()
    declared_by: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _plain_selections(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        data = dict(data)
        single = data.pop("selection", None)
        items = list(data.get("selections") or ())
        if single is not None:
            items.insert(0, single)
        sets = [SelectionSet.of(i) if isinstance(i, Selection) else i for i in items]
        if "combinations" not in data:  # count them, validating each set once, here
            sets = [
                s if isinstance(s, SelectionSet) else SelectionSet.model_validate(s) for s in sets
            ]
            data["combinations"] = sum(s.count for s in sets)
        data["selections"] = tuple(sets)
        return data

    def iter_selections(self) -> Iterator[Selection]:
        """Every combination of the entry, one :class:`Selection` each."""
        for selection_set in self.selections:
            yield from selection_set.selections()


class RecordSummary(BaseModel):
    """One evidence record referenced by the report (flags point here by index)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    record: str
    config_key: str
    prs: tuple[str, ...] = ()


ReverseStatus = Literal["reproduced", "not-expressible", "not-reproduced"]


class ReverseEntry(BaseModel):
    """An in-scope evidence point and the recipe combinations that reproduce it, or why none can."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    record: str
    config_key: str
    prs: tuple[str, ...] = ()
    status: ReverseStatus
    combinations: int = 0
    example: Selection | None = None
    why: str = ""


class Claim(BaseModel):
    """A recipe claim (``meta.hardware.<hw>: verified``) the evidence does not back."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    recipe: str
    hardware: str
    claim: str
    recommended: int
    detail: str = ""


class AuditSummary(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    combinations: int
    recommended: int
    guide_only: int
    declared: int
    undeclared_guide_only: int
    by_reason: dict[str, int] = Field(default_factory=dict)


class AuditReport(BaseModel):
    """Top-level audit output."""

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)

    schema_: Literal["provenance.audit/v2"] = Field(default=AUDIT_SCHEMA, alias="schema")
    tool_version: str
    recipes: tuple[str, ...]
    recipe_files: dict[str, str] = Field(default_factory=dict)
    #: recipe -> the text of its file, when the file is not on disk at ``recipe_files``
    #: (a PR audit reads recipes from git); not part of the JSON output.
    recipe_texts: SkipJsonSchema[dict[str, str]] = Field(default_factory=dict, exclude=True)
    ledger: str | None = None
    offline: bool = True
    notices: tuple[str, ...] = ()
    summary: AuditSummary
    #: every record a flag's evidence refers to; in JSON flags refer to it by index
    records: tuple[RecordSummary, ...] = ()
    verdicts: tuple[VerdictEntry, ...]
    reverse: tuple[ReverseEntry, ...] = ()
    claims: tuple[Claim, ...] = ()

    @model_validator(mode="before")
    @classmethod
    def _resolve_record_indexes(cls, data: Any) -> Any:
        """Read the JSON form back: a flag's evidence indexes become references again
        (anything else is left for validation to judge)."""
        if not isinstance(data, dict) or not data.get("records"):
            return data
        table = [r.model_dump() if isinstance(r, BaseModel) else r for r in data["records"]]

        def resolve(ref: Any) -> Any:
            if isinstance(ref, int) and not isinstance(ref, bool) and 0 <= ref < len(table):
                row = table[ref]
                if isinstance(row, dict):
                    return {"record": row.get("record"), "prs": row.get("prs", ())}
            return ref

        def flag(item: Any) -> Any:
            if not isinstance(item, dict):
                return item
            return {**item, "evidence": [resolve(r) for r in item.get("evidence") or ()]}

        def role(item: Any) -> Any:
            if not isinstance(item, dict):
                return item
            return {**item, "flags": [flag(f) for f in item.get("flags") or ()]}

        def entry(item: Any) -> Any:
            if not isinstance(item, dict):
                return item
            return {**item, "roles": [role(r) for r in item.get("roles") or ()]}

        return {**data, "verdicts": [entry(e) for e in data.get("verdicts") or ()]}

    def record_index(self) -> dict[str, int]:
        """``{record id: index in records}``, the serialisation context of the JSON report."""
        return {summary.record: index for index, summary in enumerate(self.records)}
