"""CPU time of loading YAML the way an audit does: the recipes root and the ledger.

python benchmarks/yaml_load.py [--recipes-root DIR] [--ledger DIR] [--repeat N]

Loads every ``*.yaml`` of the recipes root (``keep_node=True``, as the recipe loader
does) and of the ledger with ``safe_yaml.load_yaml_text`` (the libyaml path where it
applies) and with ``safe_yaml.load_yaml_text_reference`` (pure-Python PyYAML), from
text already in memory, and prints one JSON object: the best CPU seconds of N rounds
per group and loader, files and bytes. No time is asserted anywhere.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable
from pathlib import Path

import yaml

from provenance import safe_yaml

REPO = Path(__file__).resolve().parents[1]


def _texts(root: Path) -> list[tuple[str, str]]:
    files = sorted(p for p in root.rglob("*.yaml") if p.is_file())
    return [(p.read_text(encoding="utf-8"), str(p)) for p in files]


def best_of(
    load: Callable[..., safe_yaml.LoadedYaml],
    texts: list[tuple[str, str]],
    keep_node: bool,
    repeat: int,
) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.process_time()
        for text, path in texts:
            load(text, path, keep_node=keep_node)
        best = min(best, time.process_time() - start)
    return round(best, 4)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--recipes-root", type=Path, default=REPO / "recipes")
    parser.add_argument("--ledger", type=Path, default=REPO / "ledger")
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    result: dict[str, object] = {
        "pyyaml": yaml.__version__,
        "libyaml": safe_yaml.HAVE_LIBYAML,
    }
    for name, root, keep_node in (
        ("recipes", args.recipes_root, True),
        ("ledger", args.ledger, False),
    ):
        texts = _texts(root)
        result[name] = {
            "files": len(texts),
            "bytes": sum(len(text.encode()) for text, _ in texts),
            "load_yaml_text": best_of(safe_yaml.load_yaml_text, texts, keep_node, args.repeat),
            "reference": best_of(safe_yaml.load_yaml_text_reference, texts, keep_node, args.repeat),
        }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
