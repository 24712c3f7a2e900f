"""Verdicts and the audit report (JSON schema ``provenance.audit/v3``).

Semantics (``../shared/DESIGN.md``, "Verdict semantics"): a combination is
``recommended`` only when, for every role, one single validated evidence
point in scope (same checkpoint, hardware, deployment shape) has exactly the
role's major flags. Otherwise it is ``guide-only`` with machine-readable
reasons and the nearest evidence.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Annotated, Any, ClassVar, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializationInfo,
    SerializerFunctionWrapHandler,
    WrapSerializer,
    model_serializer,
    model_validator,
)
from pydantic.json_schema import SkipJsonSchema

from provenance.errors import SourceLocation
from provenance.model.combination import PdPool, PdSelection, Selection
from provenance.model.ledger import LedgerIdentity
from provenance.model.reasons import ReasonCode, VerdictKind
from provenance.model.recipes_source import RecipesSource

AUDIT_SCHEMA: Literal["provenance.audit/v3"] = "provenance.audit/v3"

#: Serialisation context key: ``{record id: index}``. When given, a flag's evidence is
#: written as indexes into the report's ``records`` table (the audit report does this:
#: the same records back the same flag in thousands of verdict entries).
RECORD_INDEX = "record_index"


#: How pydantic reads and writes the report's parts (frozen dataclasses, built by the audit
#: without validation) inside :class:`AuditReport`: unknown fields are refused.
_PART = ConfigDict(extra="forbid")


@dataclass(frozen=True, slots=True)
class EvidenceRef:
    """A pointer to an evidence record and the PRs (``repo#N``) that introduced it."""

    __pydantic_config__: ClassVar[ConfigDict] = _PART

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


def _evidence_as_indexes(
    value: tuple[EvidenceRef, ...], handler: SerializerFunctionWrapHandler, info: SerializationInfo
) -> Any:
    """A flag's evidence as indexes into the report's records, when the context has them."""
    context = info.context
    index: Mapping[str, int] | None = (
        context.get(RECORD_INDEX) if isinstance(context, dict) else None
    )
    if index is None:
        return handler(value)
    return [index[ref.record] for ref in value]


@dataclass(frozen=True, slots=True)
class FlagProvenance:
    """One major flag of one role and the evidence that sets it in scope.

    In JSON, ``evidence`` is a list of references, or, inside an audit report, a list
    of indexes into the report's ``records`` table (see :data:`RECORD_INDEX`).
    """

    __pydantic_config__: ClassVar[ConfigDict] = ConfigDict(extra="forbid", populate_by_name=True)

    key: str
    value: str
    cls: Annotated[str, Field(alias="class")]
    evidence: Annotated[
        tuple[EvidenceRef, ...],
        Field(json_schema_extra=_index_or_ref),
        WrapSerializer(_evidence_as_indexes),
    ] = ()


@dataclass(frozen=True, slots=True)
class RoleFlags:
    __pydantic_config__: ClassVar[ConfigDict] = _PART

    role: str
    node_rank: int | None = None
    flags: tuple[FlagProvenance, ...] = field(kw_only=True)


@dataclass(frozen=True, slots=True)
class Reason:
    __pydantic_config__: ClassVar[ConfigDict] = _PART

    code: ReasonCode
    role: str | None = None
    flag: str | None = None
    recipe_value: str | None = None
    evidence_value: str | None = None
    sources: tuple[str, ...] = ()
    detail: str = ""
    #: the id of the one evidence record the reason was computed against (the nearest
    #: point of ``missing-flag`` and ``never-jointly-observed``); None for a reason about
    #: every in-scope point (``flag-unevidenced``, ``value-mismatch`` over the setters)
    record: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class NearestEvidence:
    """The evidence point with the smallest flag difference, per role."""

    __pydantic_config__: ClassVar[ConfigDict] = _PART

    record: str
    config_key: str
    prs: tuple[str, ...] = ()
    role: str | None = None
    distance: int
    #: whether a green sweep run validates the point (following its diff can reach
    #: ``recommended``; a point without one reaches only ``evidence-not-validated``)
    validated: bool = False
    only_recipe: dict[str, str] = field(default_factory=dict)
    only_evidence: dict[str, str] = field(default_factory=dict)
    changed: dict[str, tuple[str, str]] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class FeatureChoice:
    """The enabled features of a selection and the effective mode of each modes-feature."""

    __pydantic_config__: ClassVar[ConfigDict] = _PART

    features: tuple[str, ...] = ()
    feature_modes: dict[str, str | None] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class PdPools:
    """Every pairing of these prefill pools with these decode pools."""

    __pydantic_config__: ClassVar[ConfigDict] = _PART

    prefill: tuple[PdPool, ...]
    decode: tuple[PdPool, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class SelectionSet:
    """A cross-product of selections: one deployment shape × feature choices × PD pools.

    It stands for ``len(features) × len(pd.prefill) × len(pd.decode)`` selections
    (``len(features)`` without PD), each with the shape's fields, one feature choice
    and, under ``pd_cluster``, one prefill and one decode pool. Audits group thousands
    of combinations with one outcome; listing them one by one would dominate the report.
    """

    __pydantic_config__: ClassVar[ConfigDict] = _PART

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
            pairs = [PdSelection(p, d) for p in self.pd.prefill for d in self.pd.decode]
        for choice in self.features:
            for pair in pairs:
                yield Selection(
                    self.variant,
                    self.hardware,
                    self.strategy,
                    self.node_count,
                    pair,
                    self.kv_offload,
                    self.kv_instances,
                    choice.features,
                    choice.feature_modes,
                    self.omni_task,
                )

    @classmethod
    def of(cls, selection: Selection) -> SelectionSet:
        """The set holding exactly ``selection``."""
        pd = selection.pd
        return cls(
            variant=selection.variant,
            hardware=selection.hardware,
            strategy=selection.strategy,
            node_count=selection.node_count,
            kv_offload=selection.kv_offload,
            kv_instances=selection.kv_instances,
            omni_task=selection.omni_task,
            features=(feature_choice(selection.features, selection.feature_modes),),
            pd=PdPools((pd.prefill,), (pd.decode,)) if pd is not None else None,
        )


def feature_choice(features: tuple[str, ...], modes: dict[str, str | None]) -> FeatureChoice:
    """The :class:`FeatureChoice` of an enumerated selection's features and modes."""
    return FeatureChoice(features, modes)


@dataclass(frozen=True, slots=True, kw_only=True)
class VerdictEntry:
    """The outcome shared by a group of combinations (``combinations`` of them).

    ``selections`` lists them as :class:`SelectionSet` cross-products;
    :meth:`of_selections` builds an entry from plain selections (each a set of one).
    """

    #: The published schema (``provenance schema audit``) keeps its description as it was
    #: when entries were pydantic models, word for word: the schema is an output.
    __pydantic_config__: ClassVar[ConfigDict] = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "description": "The outcome shared by a group of combinations (``combinations`` "
            "of them).\n\n``selections`` lists them as :class:`SelectionSet` cross-products. "
            "For\nconvenience the constructor also accepts ``selection=`` (one\n"
            ":class:`~provenance.model.combination.Selection`) or ``selections=`` as a list\n"
            "of plain selections; each becomes a set of one."
        },
    )

    recipe: str
    combinations: int
    selections: tuple[SelectionSet, ...]
    verdict: VerdictKind
    roles: tuple[RoleFlags, ...]
    reasons: tuple[Reason, ...] = ()
    #: the nearest *validated* evidence point when one is in scope (else the nearest
    #: overall), one entry per role
    nearest: tuple[NearestEvidence, ...] = ()
    #: the nearest point overall, per role, when it is not :attr:`nearest` (then it is
    #: closer but not validated); empty otherwise
    nearest_overall: tuple[NearestEvidence, ...] = ()
    evidence: tuple[EvidenceRef, ...] = ()
    declared_by: str | None = None

    @classmethod
    def of_selections(
        cls, *, selections: Iterable[Selection | SelectionSet], **fields: Any
    ) -> VerdictEntry:
        """The entry for ``selections`` (a plain selection becomes a set of one), counted."""
        sets = tuple(s if isinstance(s, SelectionSet) else SelectionSet.of(s) for s in selections)
        return cls(combinations=sum(s.count for s in sets), selections=sets, **fields)

    def iter_selections(self) -> Iterator[Selection]:
        """Every combination of the entry, one :class:`Selection` each."""
        for selection_set in self.selections:
            yield from selection_set.selections()


@dataclass(frozen=True, slots=True)
class RecordSummary:
    """One evidence record referenced by the report (flags point here by index)."""

    __pydantic_config__: ClassVar[ConfigDict] = _PART

    record: str
    config_key: str
    prs: tuple[str, ...] = ()


ReverseStatus = Literal["reproduced", "not-expressible", "not-reproduced"]


@dataclass(frozen=True, slots=True, kw_only=True)
class ReverseEntry:
    """An in-scope evidence point and the recipe combinations that reproduce it, or why none can."""

    __pydantic_config__: ClassVar[ConfigDict] = _PART

    record: str
    config_key: str
    prs: tuple[str, ...] = ()
    status: ReverseStatus
    combinations: int = 0
    example: Selection | None = None
    why: str = ""


#: ``in-coverage``: InferenceX ran the recipe's model on the hardware (evidence could back
#: the claim); ``outside-coverage``: it never did (no evidence can exist)
ClaimCoverage = Literal["in-coverage", "outside-coverage"]


class Claim(BaseModel):
    """A recipe claim the evidence does not back: ``meta.hardware.<hw>: verified``, or
    (``kv_offload`` set, ``hardware`` empty) ``kv_offload_support.<key>: verified``."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    recipe: str
    hardware: str
    kv_offload: str | None = None
    claim: str
    recommended: int
    detail: str = ""
    #: Whether InferenceX's universe covers the claim: ``in-coverage`` when the ledger
    #: holds evidence for the recipe's model on that hardware (and, for a KV offload
    #: claim, a run with a KV connector there), so evidence could back it and its absence
    #: is a finding; ``outside-coverage`` when InferenceX never ran it, so no evidence
    #: can exist (reported, never a gate failure).
    coverage: ClaimCoverage = "in-coverage"
    #: the declaration that acknowledges the claim (``None``: none does)
    declared_by: str | None = None

    @model_serializer(mode="wrap")
    def _without_unset_kv(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """A hardware claim is written as before ``kv_offload`` existed (no such key); an
        undeclared claim has no ``declared_by``."""
        data: dict[str, Any] = handler(self)
        if self.kv_offload is None:
            data.pop("kv_offload", None)
        if self.declared_by is None:
            data.pop("declared_by", None)
        return data

    @property
    def code(self) -> str:
        """The claim's code, which a declaration's ``reasons`` globs match:
        ``claim-in-coverage`` or ``claim-outside-coverage``."""
        return f"claim-{self.coverage}"

    @property
    def subject(self) -> str:
        """What the claim is about: the hardware id, or ``kv_offload_support.<key>``."""
        if self.kv_offload is not None:
            return f"kv_offload_support.{self.kv_offload}"
        return self.hardware


class UnreachableGroup(BaseModel):
    """Guide-only combinations of one (recipe, variant, hardware, strategy) that no recipe
    edit can bring to any in-scope evidence point (reason ``unreachable``), and why."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    recipe: str
    variant: str
    hardware: str
    strategy: str | None
    combinations: int
    #: the ``unreachable`` reason's detail: which evidence shapes exist and why the
    #: schema cannot express them
    why: str


class AuditSummary(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    combinations: int
    recommended: int
    guide_only: int
    declared: int
    undeclared_guide_only: int
    by_reason: dict[str, int] = Field(default_factory=dict)
    #: environment variables no policy rule names (major by default) that a guide-only
    #: reason names -> the combinations they decided; written only when there are some
    unclassified_env: dict[str, int] = Field(default_factory=dict)
    #: the unreachable combinations, grouped by recipe, variant, hardware, strategy and
    #: why, in report order; written only when there are some
    unreachable: tuple[UnreachableGroup, ...] = ()

    @model_serializer(mode="wrap")
    def _without_empty_lists(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """No ``unclassified_env`` key when every name is classified, no ``unreachable``
        key when every cell is reachable (the usual cases)."""
        data: dict[str, Any] = handler(self)
        if not self.unclassified_env:
            data.pop("unclassified_env", None)
        if not self.unreachable:
            data.pop("unreachable", None)
        return data


class RecipeError(BaseModel):
    """A recipe an audit of many could not load: where (file, line, key path) and why.

    The other recipes are audited; the command then exits 3 (docs/cli.md).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    path: str
    line: int | None = None
    key_path: str | None = None
    message: str

    def located(self) -> str:
        """``file:line (key.path): message``, as the error would print on its own."""
        where = SourceLocation(self.path, line=self.line, key_path=self.key_path).render()
        return f"{where}: {self.message}"


class AuditReport(BaseModel):
    """Top-level audit output."""

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)

    schema_: Literal["provenance.audit/v3"] = Field(default=AUDIT_SCHEMA, alias="schema")
    tool_version: str
    recipes: tuple[str, ...]
    recipe_files: dict[str, str] = Field(default_factory=dict)
    #: recipe -> the text of its file, when the file is not on disk at ``recipe_files``
    #: (a PR audit reads recipes from git); not part of the JSON output.
    recipe_texts: SkipJsonSchema[dict[str, str]] = Field(default_factory=dict, exclude=True)
    ledger: str | None = None
    #: which ledger: packaged or a path, and the InferenceX revision and date it was built from
    ledger_source: LedgerIdentity | None = None
    #: which recipes root the audit read, how it was chosen, and its git commit
    recipes_source: RecipesSource | None = None
    offline: bool = True
    notices: tuple[str, ...] = ()
    #: the recipes that could not be loaded (an audit of every recipe goes on without
    #: them); left out of the JSON when there is none
    errors: tuple[RecipeError, ...] = Field(default=(), exclude_if=lambda errors: not errors)
    summary: AuditSummary
    #: every record a flag's evidence refers to; in JSON flags refer to it by index
    records: tuple[RecordSummary, ...] = ()
    verdicts: tuple[VerdictEntry, ...]
    reverse: tuple[ReverseEntry, ...] = ()
    claims: tuple[Claim, ...] = ()

    def ledger_line(self) -> str:
        """The one line every output prints about the ledger it used (e.g. ``ledger
        packaged with provenance 0.1.0 (InferenceX 843c6254ff69, 2026-08-21)``)."""
        if self.ledger_source is not None:
            return self.ledger_source.describe()
        return f"ledger {self.ledger}" if self.ledger else ""

    def recipes_line(self) -> str:
        """The one line every output prints about the recipes root it read (e.g. ``recipes
        ../recipes (--recipes-root, git 8959cf6f2d1a)``); empty when not known."""
        return self.recipes_source.describe() if self.recipes_source is not None else ""

    @model_validator(mode="before")
    @classmethod
    def _resolve_record_indexes(cls, data: Any) -> Any:
        """Read the JSON form back: a flag's evidence indexes become references again
        (anything else is left for validation to judge)."""
        if not isinstance(data, dict) or not data.get("records"):
            return data
        if not any(isinstance(entry, dict) for entry in data.get("verdicts") or ()):
            return data  # built from the audit's own objects: nothing to read back
        table = [
            {"record": r.record, "prs": r.prs} if isinstance(r, RecordSummary) else r
            for r in data["records"]
        ]

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
