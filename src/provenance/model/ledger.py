"""Ledger file models: one YAML file per source PR, plus declarations.

Layout of a ledger directory (see ``docs/ledger.md``)::

    ledger/
      prs/<owner>__<repo>__<number>.yaml   one LedgerEntry per evidence PR
      declarations.yaml                    Declarations (reviewed guide-only acknowledgements)
      manifest.yaml                        LedgerManifest (which InferenceX revision, when)
      README.md                            where the ledger came from (human text)

Every fact carries ``source``: where it came from (``git:<sha>``,
``perf-changelog.yaml``, ``github-api``, ``review-thread:<url>``, ``manual``).
"""

from __future__ import annotations

import datetime as dt
import re
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from provenance.errors import UsageError

#: The repository every evidence record and ledger entry comes from.
INFERENCEX_REPO = "SemiAnalysisAI/InferenceX"

LEDGER_PR_SCHEMA: Literal["provenance.ledger.pr/v1"] = "provenance.ledger.pr/v1"
DECLARATIONS_SCHEMA: Literal["provenance.ledger.declarations/v1"] = (
    "provenance.ledger.declarations/v1"
)
MANIFEST_SCHEMA: Literal["provenance.ledger.manifest/v1"] = "provenance.ledger.manifest/v1"


def _commit_id(value: str) -> str:
    if not re.fullmatch(r"[0-9a-f]{7,40}", value):
        raise ValueError("a commit id is 7-40 lowercase hex digits")
    return value


#: A git commit id, abbreviated or full.
CommitId = Annotated[str, AfterValidator(_commit_id)]

_PR_REF = re.compile(r"^(?P<repo>[A-Za-z0-9][\w.-]*/[\w.-]+)#(?P<number>[1-9][0-9]*)$")

Conclusion = Literal[
    "success",
    "failure",
    "cancelled",
    "skipped",
    "neutral",
    "timed_out",
    "action_required",
    "stale",
    "startup_failure",
]


class PrRef(BaseModel):
    """``OWNER/REPO#N``."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    repo: str
    number: int

    def __str__(self) -> str:
        return f"{self.repo}#{self.number}"

    @property
    def url(self) -> str:
        return f"https://github.com/{self.repo}/pull/{self.number}"

    @property
    def file_stem(self) -> str:
        return f"{self.repo.replace('/', '__')}__{self.number}"

    @classmethod
    def parse(cls, text: str, default_repo: str = INFERENCEX_REPO) -> PrRef:
        text = text.strip()
        if text.startswith("#") and text[1:].isdigit():
            text = f"{default_repo}{text}"
        elif text.isdigit():
            text = f"{default_repo}#{text}"
        match = _PR_REF.match(text)
        if not match:
            raise UsageError(f"not a PR reference: {text!r} (expected OWNER/REPO#N)")
        return cls(repo=match["repo"], number=int(match["number"]))


class LedgerFile(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    path: str
    blob_sha: str
    commit: str
    source: str = "git"


class EvalScore(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    low: float
    high: float
    source: str


class RecordScope(BaseModel):
    """How a scoped sweep run stands to one record of its entry whose files differ at
    the run's head: proven to have run it anyway (no ``reason``), or not (``reason``)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    record: str
    #: the record's files whose content at the head is not the record's (blob or entry text)
    differing: tuple[str, ...] = ()
    #: why the run did not run the record; empty when re-extraction proved it did
    reason: str = ""


class SweepRun(BaseModel):
    """One CI sweep run that validated the PR's configs."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    run_id: int
    attempt: int = 1
    head_sha: CommitId
    conclusion: Conclusion
    workflow: str = "Run Sweep"
    url: str | None = None
    evals: tuple[EvalScore, ...] = ()
    source: str
    recorded: dt.date | None = None
    #: Whether ``ran`` was checked against an InferenceX checkout. Unchecked (a run
    #: recorded without one, or before the check existed) validates every record of
    #: the entry.
    scoped: Literal[True] | None = None
    #: The records this run's head ran (``evidence.inferencex.sweep_scope``): every file of
    #: theirs has at ``head_sha`` the content it has at the record's commit, or re-extracting
    #: the record's config key at ``head_sha`` gives the same determining content.
    ran: tuple[str, ...] = ()
    #: Records in ``ran`` although some of their files differ at the head (re-extracted).
    equivalent: tuple[RecordScope, ...] = ()
    #: Records of the entry the run did not run, each with the reason.
    not_ran: tuple[RecordScope, ...] = ()
    #: Successful benchmark / eval jobs (check-runs) of the run, when counted via the API.
    benchmark_jobs: int | None = Field(default=None, ge=0)
    eval_jobs: int | None = Field(default=None, ge=0)

    @property
    def green(self) -> bool:
        return self.conclusion == "success"

    def scope(self) -> dict[str, Any]:
        """The fields derived by scoping against a checkout (not facts of the run)."""
        return {
            "scoped": self.scoped,
            "ran": self.ran,
            "equivalent": self.equivalent,
            "not_ran": self.not_ran,
        }


class RevertLink(BaseModel):
    """A first-parent merge that reverted a PR's merge, re-landed it, or that a PR's merge
    reverted (``evidence.inferencex.reverts``: read from its subject and message)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    #: the PR of that merge (None: its subject names no ``(#N)``)
    pr: int | None = None
    commit: CommitId
    merged_at: dt.date | None = None
    #: where the fact comes from, ``git:<sha>`` of the reverting merge
    source: str


class LedgerEntry(BaseModel):
    """Everything known about one evidence PR.

    ``reverted_by``: a later merge on the ingested line reverted this PR's merge; the PR
    backs nothing (:meth:`validates` is False), even when ``relanded_by`` re-landed it
    (the re-landing PR's own records are the evidence). ``reverts``: the merges this
    PR's merge reverted (what it serves is what was there before them).
    """

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)

    schema_: Literal["provenance.ledger.pr/v1"] = Field(default=LEDGER_PR_SCHEMA, alias="schema")
    pr: PrRef
    title: str = ""
    merge_commit: str | None = None
    merged_at: dt.date | None = None
    pr_head: str | None = None
    config_keys: tuple[str, ...] = ()
    files: tuple[LedgerFile, ...] = ()
    records: tuple[str, ...] = ()
    sweeps: tuple[SweepRun, ...] = ()
    sources: tuple[str, ...] = ()
    notes: str = ""
    reverted_by: RevertLink | None = None
    relanded_by: RevertLink | None = None
    reverts: tuple[RevertLink, ...] = ()

    @property
    def validated(self) -> bool:
        return self.reverted_by is None and any(s.green for s in self.sweeps)

    def validates(self, record_id: str) -> bool:
        """Whether a green sweep of this PR ran ``record_id``'s content (see ``SweepRun.ran``)
        and the PR was not reverted (a reverted PR backs nothing)."""
        if self.reverted_by is not None:
            return False
        return any(s.green and (not s.scoped or record_id in s.ran) for s in self.sweeps)


class SelectionPattern(BaseModel):
    """A glob pattern over selections; every given field must match (fnmatch)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    recipe: str = "*"
    variant: str = "*"
    hardware: str = "*"
    strategy: str = "*"
    features: tuple[str, ...] | None = None
    feature_modes: dict[str, str] = Field(default_factory=dict)
    reasons: tuple[str, ...] = ()


class Declaration(BaseModel):
    """A reviewed acknowledgement: these combinations are knowingly guide-only."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    match: SelectionPattern
    reason: str
    date: dt.date
    by: str = ""


class Declarations(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)

    schema_: Literal["provenance.ledger.declarations/v1"] = Field(
        default=DECLARATIONS_SCHEMA, alias="schema"
    )
    declarations: tuple[Declaration, ...] = ()


class SourceRevision(BaseModel):
    """The commit of a source repository that the ledger's evidence was read at."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    repo: str = INFERENCEX_REPO
    #: the full commit id
    revision: CommitId
    #: the commit's date
    date: dt.date

    @property
    def short(self) -> str:
        return self.revision[:12]


class LedgerManifest(BaseModel):
    """What a ledger was built from: ``manifest.yaml`` at the ledger's root.

    Written by ``provenance ingest inferencex``; every output that used the ledger
    names it by this (InferenceX revision and date).
    """

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)

    schema_: Literal["provenance.ledger.manifest/v1"] = Field(
        default=MANIFEST_SCHEMA, alias="schema"
    )
    inferencex: SourceRevision
    #: the model prefixes ingested (``--model-prefix``), e.g. ``minimaxm3``
    model_prefixes: tuple[str, ...] = ()
    #: when the ledger was written, and by which provenance version
    generated: dt.date | None = None
    generated_by: str = ""


class LedgerIdentity(BaseModel):
    """Which ledger a report used: where it is and what it was built from."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    #: the ``--ledger`` directory as shown to the user (relative to the working directory
    #: when under it)
    path: str
    #: the ledger packaged with provenance (not a directory of the user's)
    packaged: bool = False
    #: the provenance version that packaged it (with ``packaged``)
    packaged_by: str = ""
    #: from the ledger's manifest; None when it has none
    inferencex: SourceRevision | None = None

    def describe(self) -> str:
        """One line, e.g. ``ledger packaged with provenance 0.1.0 (InferenceX 843c6254ff69,
        2026-08-21)``."""
        where = f"packaged with provenance {self.packaged_by}" if self.packaged else self.path
        if self.inferencex is None:
            return f"ledger {where} (no manifest: InferenceX revision unknown)"
        source = self.inferencex
        name = source.repo.rsplit("/", 1)[-1]
        return f"ledger {where} ({name} {source.short}, {source.date.isoformat()})"
