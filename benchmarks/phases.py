"""In-process timing of one ``provenance audit``: where the CPU time goes, phase by phase.

python benchmarks/phases.py --recipes-root DIR --ledger DIR --evidence DIR [RECIPE ...]
    [--pd-pairing joint|star]

Prints one JSON object: CPU seconds per phase (imports, evidence graph, recipe
load, enumerate + render + judge, JSON output), the combination count and the
number of verdict entries.
"""

from __future__ import annotations

import time

_T0 = time.process_time()

import argparse  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
from pathlib import Path  # noqa: E402

from provenance.audit.normaliser import PolicyNormaliser  # noqa: E402
from provenance.audit.pipeline import (  # noqa: E402
    AuditFilters,
    AuditInputs,
    audit,
    default_inputs,
    load_graph,
    recipe_inputs,
)
from provenance.report.formats import write_report  # noqa: E402


def main() -> None:
    imported = time.process_time()
    parser = argparse.ArgumentParser()
    parser.add_argument("recipes", nargs="*")
    parser.add_argument("--recipes-root", type=Path, required=True)
    parser.add_argument("--ledger", type=Path, required=True)
    parser.add_argument("--evidence", type=Path, required=True)
    parser.add_argument("--pd-pairing", default="joint")
    parser.add_argument("--variant", action="append")
    parser.add_argument("--hardware", action="append")
    args = parser.parse_args()
    inputs = AuditInputs(
        recipes=tuple(args.recipes),
        recipes_root=args.recipes_root,
        ledger=args.ledger,
        evidence=args.evidence,
    )
    filters = AuditFilters(
        pd_pairing=args.pd_pairing,
        variants=tuple(args.variant) if args.variant else None,
        hardware=tuple(args.hardware) if args.hardware else None,
    )
    t0 = time.process_time()
    resolved = default_inputs(inputs)
    normaliser = PolicyNormaliser()
    graph, declarations = load_graph(resolved.ledger, resolved.evidence, normaliser)
    t1 = time.process_time()
    recipes = recipe_inputs(resolved, filters)
    t2 = time.process_time()
    report = audit(recipes, graph, normaliser, declarations)
    t3 = time.process_time()
    with open(os.devnull, "w", encoding="utf-8") as out:
        write_report(report, "json", out)
    t4 = time.process_time()
    print(
        json.dumps(
            {
                "imports": round(imported - _T0, 3),
                "evidence_graph": round(t1 - t0, 3),
                "recipe_load": round(t2 - t1, 3),
                "audit": round(t3 - t2, 3),
                "json_output": round(t4 - t3, 3),
                "total": round(t4 - _T0, 3),
                "records": len(graph.records),
                "combinations": report.summary.combinations,
                "verdict_entries": len(report.verdicts),
            }
        )
    )


if __name__ == "__main__":
    main()
