"""The two verdicts and the machine-readable reason codes of a guide-only combination.

Semantics: ``docs/audit.md`` ("Verdicts" and "Reason codes").
"""

from __future__ import annotations

from enum import StrEnum


class VerdictKind(StrEnum):
    RECOMMENDED = "recommended"
    GUIDE_ONLY = "guide-only"


class ReasonCode(StrEnum):
    NO_EVIDENCE = "no-evidence"
    UNREACHABLE = "unreachable"
    FLAG_UNEVIDENCED = "flag-unevidenced"
    VALUE_MISMATCH = "value-mismatch"
    MISSING_FLAG = "missing-flag"
    NEVER_JOINTLY_OBSERVED = "never-jointly-observed"
    TOPOLOGY_MISMATCH = "topology-mismatch"
    EVIDENCE_NOT_VALIDATED = "evidence-not-validated"
