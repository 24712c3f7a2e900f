"""In-process timing of one ``provenance audit``: where the CPU time goes, phase by phase.

python benchmarks/phases.py --recipes-root DIR --ledger DIR --evidence DIR [RECIPE ...]
    [--pd-pairing joint|star]

Prints one JSON object: CPU seconds per phase (imports, recipe load, ledger entries,
evidence graph, enumerate + render + judge, JSON output), the combination count and
the number of verdict entries. Like ``provenance audit``, the recipes are loaded first
and only the records of their checkpoints (``recipe_model_ids``) are loaded; the
``ledger_entries`` phase is the reading of every entry file alone (through the entry
cache, as the audit does), measured separately and also contained in ``evidence_graph``.

The process lives as the console script's does (``cli.main.one_shot_process``: the
cyclic collector off, then exit): with the collector on, its scans of the audit's
long-lived objects would add about 0.25 s to the ``audit`` phase on MiniMax-M3 that
``provenance audit`` never pays.
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
    recipe_model_ids,
)
from provenance.cli.main import one_shot_process  # noqa: E402
from provenance.report.formats import write_report  # noqa: E402
from provenance.store.entry_cache import ParsedEntries  # noqa: E402
from provenance.store.ledger import Ledger  # noqa: E402


def main() -> int:
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
    recipes = recipe_inputs(resolved, filters)
    model_ids = recipe_model_ids(r.cells.recipe for r in recipes if r.cells is not None)
    t1 = time.process_time()
    entries = len(Ledger(resolved.ledger).entries(ParsedEntries.open()))
    t_entries = time.process_time()
    normaliser = PolicyNormaliser()
    graph, declarations = load_graph(resolved.ledger, resolved.evidence, normaliser, model_ids)
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
                "recipe_load": round(t1 - t0, 3),
                "ledger_entries": round(t_entries - t1, 3),
                "evidence_graph": round(t2 - t_entries, 3),
                "audit": round(t3 - t2, 3),
                "json_output": round(t4 - t3, 3),
                "total": round(t4 - _T0, 3),
                "records": len(graph.records),
                "entries": entries,
                "combinations": report.summary.combinations,
                "verdict_entries": len(report.verdicts),
            }
        )
    )
    return 0


if __name__ == "__main__":
    one_shot_process(main)
