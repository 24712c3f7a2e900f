"""Which vLLM-framework config keys of an InferenceX revision yield evidence records.

python benchmarks/vllm_key_coverage.py MIRROR [REV] [--json]

Extracts REV (default ``HEAD``) without a cache and prints, for every config
key whose framework names vLLM (``vllm``, ``dynamo-vllm``, ``vllm-disagg``,
``llmd-vllm`` …): how many keys yield records, and each key that yields none
with the skip codes (``docs/evidence.md``, *Skip reasons*) and point counts of
its points. A key with some points recorded and others skipped counts as
yielding records; its skips are listed under "partly skipped".
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from provenance.evidence.inferencex.ingest import IngestResult, extract


def is_vllm_framework(framework: str) -> bool:
    return "vllm" in framework


@dataclass(frozen=True)
class Coverage:
    commit: str | None
    #: key -> framework, for every vLLM-framework key
    frameworks: dict[str, str]
    #: keys with records
    recorded: set[str]
    #: key -> skip codes of its points
    skips: dict[str, list[str]]

    def without_records(self) -> dict[str, list[str]]:
        return {k: self.skips.get(k, []) for k in sorted(self.frameworks) if k not in self.recorded}

    def to_json(self) -> dict[str, object]:
        without = self.without_records()
        by_code = Counter(code for codes in without.values() for code in codes)
        return {
            "commit": self.commit,
            "vllm_keys": len(self.frameworks),
            "keys_with_records": len(self.recorded),
            "keys_without_records_by_code": dict(sorted(by_code.items())),
            "without_records": {
                k: {"framework": self.frameworks[k], "codes": v} for k, v in without.items()
            },
            "partly_skipped": {k: v for k, v in sorted(self.skips.items()) if k in self.recorded},
        }


def coverage(result: IngestResult) -> Coverage:
    frameworks = {
        r.config_key: r.framework for r in result.records if is_vllm_framework(r.framework)
    }
    recorded = set(frameworks)
    codes: dict[str, set[str]] = {}
    for item in result.summary.skipped:
        if is_vllm_framework(item.framework):
            for key in item.keys:
                frameworks.setdefault(key, item.framework)
                codes.setdefault(key, set()).add(item.code)
    commit = result.summary.commits[0] if result.summary.commits else None
    return Coverage(commit, frameworks, recorded, {k: sorted(v) for k, v in codes.items()})


def main(argv: list[str]) -> int:
    args = [a for a in argv if a != "--json"]
    if not args:
        print(__doc__, file=sys.stderr)
        return 2
    rev = args[1] if len(args) > 1 else "HEAD"
    found = coverage(extract(Path(args[0]), rev, None, None, []))
    if "--json" in argv:
        print(json.dumps(found.to_json(), indent=1))
        return 0
    without = found.without_records()
    print(f"commit {found.commit}")
    print(
        f"vLLM-framework keys: {len(found.frameworks)}; with records: {len(found.recorded)}; "
        f"without: {len(without)}"
    )
    for code, count in sorted(Counter(c for v in without.values() for c in v).items()):
        print(f"  {code}: {count} key(s)")
    print("keys without records:")
    for key, key_codes in without.items():
        shown = ", ".join(key_codes) or "no skip recorded"
        print(f"  {key} ({found.frameworks[key]}): {shown}")
    print("keys with records and some points skipped:")
    for key in sorted(found.recorded & set(found.skips)):
        print(f"  {key}: {', '.join(found.skips[key])}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
