#!/usr/bin/env python3
"""Time enumeration and rendering of one recipe's cross-product (CPU and wall seconds).

python scripts/bench_recipes.py [--root ../shared/corpus/recipes] [--recipe MiniMaxAI/MiniMax-M3]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from provenance.recipes.enumerate.selections import EnumerationOptions, enumerate_selections
from provenance.recipes.load.loader import load_recipe, load_recipes_root
from provenance.recipes.render.records import RecordDigester
from provenance.recipes.render.synthesis import Renderer

REPO = Path(__file__).resolve().parents[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", type=Path, default=REPO.parent / "shared/corpus/recipes")
    parser.add_argument("--recipe", default="MiniMaxAI/MiniMax-M3")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    root = load_recipes_root(args.root)
    recipe = load_recipe(root, args.recipe)
    for _ in range(args.repeat):
        cpu0, wall0 = time.process_time(), time.perf_counter()
        selections = list(enumerate_selections(recipe, root, EnumerationOptions()))
        cpu1 = time.process_time()
        renderer = Renderer(recipe, root)
        for selection in selections:
            renderer.render(selection)
        cpu2, wall2 = time.process_time(), time.perf_counter()
        digester = RecordDigester(renderer)
        for selection in selections:
            digester.digest(selection)
        cpu3 = time.process_time()
        print(
            f"{recipe.hf_id}: {len(selections)} selections; CPU s: enumerate {cpu1 - cpu0:.2f}, "
            f"render {cpu2 - cpu1:.2f} (wall {wall2 - wall0:.2f} for both), "
            f"digest {cpu3 - cpu2:.2f}"
        )


if __name__ == "__main__":
    main()
