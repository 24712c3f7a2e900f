"""CPU time of the judge and of the reverse direction alone, on one real audit.

python benchmarks/judge.py [--repeat N] [--reference] [RECIPE ...]

Runs the audit of RECIPE (default: the embedded MiniMax-M3) against the embedded
ledger and evidence once, recording every combination key the judge is asked
about and what the reverse direction is given; then, N times (best kept): judges
every distinct key with a fresh ``Judge`` and recomputes the reverse entries.
With ``--reference``, the brute-force oracle of the equivalence tests
(``tests/audit/judge_reference.py``: every candidate diffed in full; slower than
the judge before issue 8, which shared a setter index) runs alternately with
them, and any difference is reported. Prints one JSON object.
"""

from __future__ import annotations

import argparse
import gc
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("recipes", nargs="*", default=["MiniMaxAI/MiniMax-M3"])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--reference", action="store_true")
    args = parser.parse_args()

    from provenance.audit import pipeline, reverse
    from provenance.audit.judge import Judge, Outcome
    from provenance.audit.keys import CombinationKey
    from provenance.audit.normaliser import PolicyNormaliser
    from provenance.audit.pipeline import AuditFilters, ResolvedInputs, load_graph, recipe_inputs

    normaliser = PolicyNormaliser()
    graph, declarations = load_graph(REPO / "ledger", REPO / "evidence", normaliser)
    resolved = ResolvedInputs(
        recipes=tuple(args.recipes),
        recipes_root=REPO / "recipes",
        ledger=REPO / "ledger",
        evidence=REPO / "evidence",
    )
    keys: dict[CombinationKey, None] = {}
    handed: list[tuple[Any, Any]] = []
    patched: Any = pipeline  # its reverse_entries is swapped for a recording one below
    judged, reversed_ = Judge.outcome, patched.reverse_entries

    def outcome(self: Judge, key: CombinationKey) -> Outcome:
        keys[key] = None
        return judged(self, key)

    def reverse_entries(tally: Any, graph: Any, per_node: Any) -> Any:
        handed.append((tally, per_node))
        return reversed_(tally, graph, per_node)

    Judge.outcome = outcome  # type: ignore[method-assign]
    patched.reverse_entries = reverse_entries
    try:
        pipeline.audit(recipe_inputs(resolved, AuditFilters()), graph, normaliser, declarations)
    finally:
        Judge.outcome = judged  # type: ignore[method-assign]
        patched.reverse_entries = reversed_

    classify = normaliser.classify
    ordered = list(keys)
    runs: dict[str, Callable[[], Any]] = {
        "judge": lambda: [j.outcome(k) for j in [Judge(graph, classify)] for k in ordered],
        "reverse": lambda: [reverse.reverse_entries(a, graph, p) for a, p in handed],
    }
    if args.reference:
        sys.path.insert(0, str(REPO / "tests" / "support"))
        from judge_reference import ReferenceJudge, reference_distinct, reference_nearest

        def slow_reverse() -> Any:
            fast = reverse.distinct_combinations, reverse.nearest_combination
            # the reference pair keeps its own (plainer) form of the compared combinations
            setattr(reverse, "distinct_combinations", reference_distinct)  # noqa: B010
            setattr(reverse, "nearest_combination", reference_nearest)  # noqa: B010
            try:
                return [reverse.reverse_entries(a, graph, p) for a, p in handed]
            finally:
                reverse.distinct_combinations, reverse.nearest_combination = fast

        runs["judge_reference"] = lambda: [
            j.outcome(k) for j in [ReferenceJudge(graph, classify)] for k in ordered
        ]
        runs["reverse_reference"] = slow_reverse

    best = {name: float("inf") for name in runs}
    results: dict[str, Any] = {}
    gc.collect()
    gc.disable()  # as the console script runs a command (cli.main.one_shot_process)
    for _ in range(args.repeat):
        for name, run in runs.items():
            start = time.process_time()
            results[name] = run()
            best[name] = min(best[name], time.process_time() - start)
    gc.enable()
    report: dict[str, Any] = {
        "keys": len(ordered),
        "reverse_entries": sum(len(entries) for entries in results["reverse"]),
        **{f"{name}_cpu_s": round(seconds, 4) for name, seconds in best.items()},
    }
    if args.reference:
        fields = ("verdict", "roles", "reasons", "nearest", "evidence", "scope", "role_flags")
        report["outcome_differences"] = sum(
            1
            for fast, slow in zip(results["judge"], results["judge_reference"], strict=True)
            if any(getattr(fast, f) != getattr(slow, f) for f in fields)
        )
        report["reverse_identical"] = results["reverse"] == results["reverse_reference"]
    print(json.dumps(report))


if __name__ == "__main__":
    main()
