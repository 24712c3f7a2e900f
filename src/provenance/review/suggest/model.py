"""What ``provenance suggest`` reports (JSON schema ``provenance.suggest/v1``)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from provenance.review.suggest.cost import EditCost, SimulatedAcceptance
from provenance.review.suggest.edits import EditOp
from provenance.review.suggest.proof import Proof

SUGGEST_SCHEMA: Literal["provenance.suggest/v1"] = "provenance.suggest/v1"


class TargetRef(BaseModel):
    """The validated evidence point an edit makes combinations match."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    record: str
    config_key: str
    prs: tuple[str, ...] = ()


class Suggestion(BaseModel):
    """One proven edit: what it changes, why, and what it does to every combination."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    #: ``reach``: makes combinations recommended; ``scope``: confines a flag to where
    #: evidence backs it
    kind: Literal["reach", "scope"]
    title: str
    #: the group of combinations the edit was built for (variant · hardware · strategy …)
    group: str
    target: TargetRef | None = None
    ops: tuple[EditOp, ...]
    changes: tuple[str, ...]
    #: the re-audit; ``proof.cost`` is what the edit takes from combinations that did not
    #: ask for it (empty: it costs nothing)
    proof: Proof
    #: the costs of a broader edit to the same evidence point that this scoped one avoids
    #: (the broader edit is not shown)
    scoped_instead_of: tuple[EditCost, ...] = ()
    #: the runs behind the edit (its target, the evidence of what it makes recommended)
    #: that simulated speculative acceptance instead of measuring it
    simulated_acceptance: tuple[SimulatedAcceptance, ...] = ()
    #: the suggestions this one is left out of the combined edit for: added to them it
    #: makes the combination worse or cancels their gain
    conflicts_with: tuple[str, ...] = ()
    #: unified diff relative to the recipes root (``git apply`` accepts it)
    diff: str


class Inexpressible(BaseModel):
    """A scoping the evidence asks for that no layer of the recipe schema can express."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    variant: str
    flag: str
    value: str
    #: where the evidence sets the flag and where it does not: ``hardware · strategy``
    #: cells when it splits by strategy within a hardware (``unbacked`` then names the
    #: strategies the flag is kept for without evidence), else hardware ids
    backed: tuple[str, ...]
    unbacked: tuple[str, ...]
    why: str


class EvidenceNeed(BaseModel):
    """Where no edit can reach evidence: the benchmark InferenceX would have to run."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    variant: str
    hardware: str
    strategy: str
    checkpoint: str
    deployment: str
    combinations: int
    why: str
    #: evidence role -> the major flags a benchmark would need (the recipe's default
    #: features), as ``key=value``
    flags: dict[str, tuple[str, ...]]


class SuggestReport(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)

    schema_: Literal["provenance.suggest/v1"] = Field(default=SUGGEST_SCHEMA, alias="schema")
    recipe: str
    recipe_file: str
    combinations: int
    recommended: int
    #: candidate edits audited (each one re-rendered and re-audited)
    candidates_proven: int
    suggestions: tuple[Suggestion, ...] = ()
    #: every suggestion applied together (its own proof and diff)
    combined: Suggestion | None = None
    inexpressible: tuple[Inexpressible, ...] = ()
    evidence_needed: tuple[EvidenceNeed, ...] = ()
