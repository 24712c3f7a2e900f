"""What one ingest read, produced and could not do: :class:`IngestSummary`."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from provenance.evidence.inferencex.skips import (
    SkipCode,
    SkipCount,
    legacy_skips,
)
from provenance.model.record import (
    EvidenceRecord,
)


class IngestSummary(BaseModel):
    """What an ingest read, produced, and could not do."""

    model_config = ConfigDict(extra="forbid")

    commits: list[str] = Field(default_factory=list)
    files_read: int = 0
    config_keys: int = 0
    points: int = 0
    records: int = 0
    partial_records: int = 0
    partial_by_construct: dict[str, int] = Field(default_factory=dict)
    unresolved_scripts: list[str] = Field(default_factory=list)
    #: Points that yielded no record, per skip code and framework (``skips.py``).
    skipped: list[SkipCount] = Field(default_factory=list)
    unlinked_records: int = 0
    warnings: list[str] = Field(default_factory=list)

    @field_validator("skipped", mode="before")
    @classmethod
    def _legacy_skipped(cls, value: Any) -> Any:
        return legacy_skips(value)

    def skip(self, code: SkipCode, framework: str, keys: Iterable[str], count: int = 1) -> None:
        """Count ``count`` points of ``framework`` (config ``keys``) skipped for ``code``."""
        for item in self.skipped:
            if item.code == code and item.framework == framework:
                item.count += count
                item.keys = sorted(set(item.keys).union(keys))
                return
        self.skipped.append(
            SkipCount(code=code, framework=framework, count=count, keys=sorted(set(keys)))
        )

    def skip_counts(self) -> dict[SkipCode, int]:
        """Skipped points per code, all frameworks together."""
        counts: dict[SkipCode, int] = {}
        for item in self.skipped:
            counts[item.code] = counts.get(item.code, 0) + item.count
        return counts

    def absorb(self, part: IngestSummary) -> None:
        """Add the summary of one more commit's extraction (before :func:`finish_summary`)."""
        self.commits.extend(part.commits)
        self.files_read += part.files_read
        self.config_keys += part.config_keys
        self.points += part.points
        for item in part.skipped:
            self.skip(item.code, item.framework, item.keys, item.count)
        self.unresolved_scripts.extend(part.unresolved_scripts)
        self.unlinked_records += part.unlinked_records
        self.warnings.extend(part.warnings)


def finish_summary(summary: IngestSummary, records: list[EvidenceRecord]) -> None:
    summary.records = len(records)
    summary.partial_records = sum(1 for r in records if r.partial)
    counts: dict[str, int] = {}
    for record in records:
        for construct in {m.construct_name for m in record.partial}:
            counts[construct] = counts.get(construct, 0) + 1
    summary.partial_by_construct = dict(sorted(counts.items()))
    summary.unresolved_scripts = sorted(set(summary.unresolved_scripts))
    summary.skipped.sort(key=lambda item: (item.code, item.framework))
    summary.warnings = sorted(set(summary.warnings))
