"""Instructions executed by one ``pipeline.audit`` of a recipe, counted by callgrind.

python benchmarks/instructions.py [--recipes-root DIR] [--ledger DIR] [--evidence DIR]
    [RECIPE]

For changes smaller than the machine's timing noise (about 3% on the audit phase):
the count is repeatable to about 0.5%. Two children run under
``valgrind --tool=callgrind`` with ``PYTHONHASHSEED=0``, side by side: one loads the
evidence graph and the recipe and stops, the other also audits; the difference is
the audit's. Prints millions of instructions. Needs valgrind; takes about a minute
(callgrind runs Python some 50 times slower).
"""

from __future__ import annotations

import argparse
import gc
import os
import re
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
_COLLECTED = re.compile(r"Collected\s*:\s*(\d+)")


def _child(args: argparse.Namespace) -> None:
    """Load everything, then audit only when asked to; leave without tearing down.

    The collector is off, as in the console script (``cli.main.one_shot_process``)."""
    gc.disable()
    from provenance.audit.normaliser import PolicyNormaliser
    from provenance.audit.pipeline import (
        AuditFilters,
        AuditInputs,
        audit,
        default_inputs,
        load_graph,
        recipe_inputs,
    )

    inputs = AuditInputs(
        recipes=(args.recipe,),
        recipes_root=args.recipes_root,
        ledger=args.ledger,
        evidence=args.evidence,
    )
    normaliser = PolicyNormaliser()
    graph, declarations = load_graph(args.ledger, args.evidence, normaliser)
    recipes = recipe_inputs(default_inputs(inputs), AuditFilters())
    if args.child == "audit":
        audit(recipes, graph, normaliser, declarations)
    sys.stdout.flush()
    os._exit(0)


def _count(args: argparse.Namespace, mode: str) -> int:
    """Instructions of one child under callgrind."""
    argv = [
        "valgrind",
        "--tool=callgrind",
        "--callgrind-out-file=/dev/null",
        sys.executable,
        __file__,
        "--child",
        mode,
        "--recipes-root",
        str(args.recipes_root),
        "--ledger",
        str(args.ledger),
        "--evidence",
        str(args.evidence),
        args.recipe,
    ]
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    done = subprocess.run(argv, cwd=REPO, env=env, capture_output=True, text=True, check=False)
    found = _COLLECTED.search(done.stderr)
    if done.returncode != 0 or found is None:
        raise SystemExit(f"callgrind failed ({mode}):\n{done.stderr[-2000:]}")
    return int(found.group(1))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("recipe", nargs="?", default="MiniMaxAI/MiniMax-M3")
    parser.add_argument("--recipes-root", type=Path, default=REPO / "recipes")
    parser.add_argument("--ledger", type=Path, default=REPO / "ledger")
    parser.add_argument("--evidence", type=Path, default=REPO / "evidence")
    parser.add_argument("--child", choices=("setup", "audit"))
    args = parser.parse_args()
    if args.child:
        _child(args)
        return
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not installed")
    with ThreadPoolExecutor(max_workers=2) as pool:
        setup, total = pool.map(lambda mode: _count(args, mode), ("setup", "audit"))
    print(
        f"{args.recipe}: audit {(total - setup) / 1e6:,.0f} M instructions "
        f"(setup {setup / 1e6:,.0f} M, total {total / 1e6:,.0f} M)"
    )


if __name__ == "__main__":
    main()
