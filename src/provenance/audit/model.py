"""Verdicts and the audit report (JSON schema ``provenance.audit/v1``).

Semantics (``../shared/DESIGN.md``, "Verdict semantics"): a combination is
``recommended`` only when, for every role, one single validated evidence
point in scope (same checkpoint, hardware, deployment shape) has exactly the
role's major flags. Otherwise it is ``guide-only`` with machine-readable
reasons and the nearest evidence.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from provenance.recipes.combination import Selection

AUDIT_SCHEMA: Literal["provenance.audit/v1"] = "provenance.audit/v1"


class VerdictKind(StrEnum):
    RECOMMENDED = "recommended"
    GUIDE_ONLY = "guide-only"


class ReasonCode(StrEnum):
    NO_EVIDENCE = "no-evidence"
    FLAG_UNEVIDENCED = "flag-unevidenced"
    VALUE_MISMATCH = "value-mismatch"
    MISSING_FLAG = "missing-flag"
    NEVER_JOINTLY_OBSERVED = "never-jointly-observed"
    TOPOLOGY_MISMATCH = "topology-mismatch"
    EVIDENCE_NOT_VALIDATED = "evidence-not-validated"


class EvidenceRef(BaseModel):
    """A pointer to an evidence record and the PRs (``repo#N``) that introduced it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    record: str
    prs: tuple[str, ...] = ()


class FlagProvenance(BaseModel):
    """One major flag of one role and the evidence that sets it in scope."""

    key: str
    value: str
    cls: str = Field(alias="class")
    evidence: tuple[EvidenceRef, ...] = ()

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)


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


class VerdictEntry(BaseModel):
    """The outcome for one combination, or a group of combinations with identical outcome."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    recipe: str
    selection: Selection | None = None
    selections: tuple[Selection, ...] | None = None
    verdict: VerdictKind
    roles: tuple[RoleFlags, ...]
    reasons: tuple[Reason, ...] = ()
    nearest: tuple[NearestEvidence, ...] = ()
    evidence: tuple[EvidenceRef, ...] = ()
    declared_by: str | None = None


class ReverseEntry(BaseModel):
    """An in-scope evidence point and the recipe combinations that reproduce it, or why none can."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    record: str
    config_key: str
    prs: tuple[str, ...] = ()
    status: Literal["reproduced", "not-expressible", "not-reproduced"]
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

    schema_: Literal["provenance.audit/v1"] = Field(default=AUDIT_SCHEMA, alias="schema")
    tool_version: str
    recipes: tuple[str, ...]
    recipe_files: dict[str, str] = Field(default_factory=dict)
    ledger: str | None = None
    offline: bool = True
    notices: tuple[str, ...] = ()
    summary: AuditSummary
    verdicts: tuple[VerdictEntry, ...]
    reverse: tuple[ReverseEntry, ...] = ()
    claims: tuple[Claim, ...] = ()
