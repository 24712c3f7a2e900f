#!/usr/bin/env python3
"""Record compact golden data for the recipe engine from the reference oracle.

Runs ``node enumerate.mjs`` (the recipes-oracle, which loads the recipes site's
own builder from a checkout) and stores, per recipe, a short digest of every
record's canonical ``selection`` + ``result`` — grouped by
``variant|hardware|strategy`` and gzip'd — plus a readable sample of full
records. The tests compare ``provenance``'s own enumeration and rendering
against these files without node or network.

Three sets (see tests/data/recipes_golden/README.md):

* ``a``: every ``models/**.yaml`` of the checkout with ``--pd-pairing star``;
* ``b``: MiniMax-M3, full joint cross-product;
* ``c``: every MiniMax-M3 revision in a history folder, rendered against the
  checkout's builder, strategies and taxonomy;
* ``f``: the synthetic recipes root in tests/fixtures/recipes/toy-root (its own
  taxonomy, strategies, kv_store and model) rendered by the checkout's builder,
  with KV offload and Mooncake enabled, so the core tests need no corpus.

Usage::

    python scripts/record_recipes_golden.py \\
        --checkout /tmp/recipes-8959cf6 --oracle /tmp/recipes-oracle \\
        --history ../shared/corpus/recipes-history/MiniMax-M3 [--sets a,b,c]

``--from-dir DIR`` reuses oracle JSON lines already written there
(``a/<Org>__<Name>.jsonl``, ``b.jsonl``, ``c/<revision>.jsonl``) instead of
running node.
"""

from __future__ import annotations

import argparse
import gzip
import json
import subprocess
import sys
import tempfile
from collections import defaultdict
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from provenance.recipes.render.records import (
    group_digest,
    group_key,
    oracle_projection,
    record_digest,
)

REPO = Path(__file__).resolve().parents[1]
DEFAULT_OUT = REPO / "tests" / "data" / "recipes_golden"
FIXTURE_ROOT = REPO / "tests" / "fixtures" / "recipes" / "toy-root"
#: (name, oracle options) rendered for every model of the fixture root.
FIXTURE_RUNS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("joint", ()),
    ("kv_all_default_features", ("--kv", "all", "--features", "default")),
    (
        "star_kv_all_no_features",
        ("--pd-pairing", "star", "--kv", "all", "--features", "none", "--pd-nodes", "1,3,default"),
    ),
    ("kv_instances_3", ("--kv", "kv_store_toy", "--kv-instances", "1,3", "--features", "none")),
)
FORMAT = "provenance.recipes-golden/v1"
#: hex characters kept per record in set ``a`` (set ``b`` keeps the full 16).
SHORT_DIGEST = 8
SAMPLE_SIZE = 40


def oracle_lines(
    oracle: Path, checkout: Path, model: str, extra: list[str], reuse: Path | None
) -> Iterator[dict[str, Any]]:
    if reuse is not None:
        with reuse.open(encoding="utf-8") as handle:
            for line in handle:
                yield json.loads(line)
        return
    command = ["node", str(oracle / "enumerate.mjs"), str(checkout), model, *extra]
    with subprocess.Popen(command, stdout=subprocess.PIPE, text=True, encoding="utf-8") as proc:
        assert proc.stdout is not None
        for line in proc.stdout:
            yield json.loads(line)
    if proc.returncode != 0:
        raise SystemExit(f"oracle failed ({proc.returncode}) on {model}")


class Sampler:
    """Keeps a readable spread of full records: the first per (deploy type, hardware), then
    every ``stride``-th record, up to ``size``."""

    def __init__(self, size: int, stride: int) -> None:
        self.size = size
        self.stride = stride
        self.seen: set[str] = set()
        self.records: list[dict[str, Any]] = []

    def offer(self, index: int, record: dict[str, Any]) -> None:
        key = f"{record['result']['deploy_type']}|{record['selection']['hardware']}"
        if key not in self.seen:
            self.seen.add(key)
            self.records.append(record)
        elif index % self.stride == 0 and len(self.records) < self.size:
            self.records.append(record)


def summarise(
    lines: Iterable[dict[str, Any]], keep: int, sampler: Sampler | None
) -> dict[str, Any]:
    groups: dict[str, list[str]] = defaultdict(list)
    count = 0
    for line in lines:
        record = oracle_projection(line)
        digest = record_digest(record)
        groups[group_key(record["selection"])].append(digest)
        if sampler is not None:
            sampler.offer(count, record)
        count += 1
    out: dict[str, Any] = {"count": count, "groups": {}}
    for key in sorted(groups):
        digests = groups[key]
        entry: dict[str, Any] = {"n": len(digests), "digest": group_digest(digests)}
        if keep:
            entry["records"] = "".join(sorted(d[:keep] for d in digests))
        out["groups"][key] = entry
    return out


def write_gz(path: Path, payload: dict[str, Any]) -> None:
    text = json.dumps(payload, sort_keys=True, separators=(",", ":"))
    path.write_bytes(gzip.compress(text.encode("utf-8"), compresslevel=9, mtime=0))
    print(f"wrote {path} ({path.stat().st_size} bytes)", file=sys.stderr)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--checkout", type=Path, required=True, help="recipes checkout")
    parser.add_argument("--commit", default="8959cf6", help="commit the checkout is at")
    parser.add_argument(
        "--oracle", type=Path, required=True, help="recipes-oracle dir (npm-installed)"
    )
    parser.add_argument(
        "--history", type=Path, default=REPO.parent / "shared/corpus/recipes-history/MiniMax-M3"
    )
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--sets", default="a,b,c")
    parser.add_argument("--from-dir", type=Path, default=None)
    args = parser.parse_args()
    sets = set(args.sets.split(","))
    args.out.mkdir(parents=True, exist_ok=True)
    reuse = args.from_dir

    if "a" in sets:
        recipes: dict[str, Any] = {}
        models = sorted((args.checkout / "models").rglob("*.yaml"))
        for file in models:
            rel = file.relative_to(args.checkout / "models")
            name = str(rel.with_suffix("")).replace("/", "__")
            source = reuse / "a" / f"{name}.jsonl" if reuse else None
            lines = oracle_lines(
                args.oracle, args.checkout, str(file), ["--pd-pairing", "star"], source
            )
            summary = summarise(lines, SHORT_DIGEST, None)
            summary["file"] = f"models/{rel}"
            recipes[str(rel.with_suffix(""))] = summary
        write_gz(
            args.out / "a_models_star.json.gz",
            {
                "format": FORMAT,
                "set": "a",
                "checkout_commit": args.commit,
                "options": {"pd_pairing": "star"},
                "digest_chars": SHORT_DIGEST,
                "recipes": recipes,
            },
        )

    if "b" in sets:
        sampler = Sampler(SAMPLE_SIZE, 5003)
        source = reuse / "b.jsonl" if reuse else None
        lines = oracle_lines(args.oracle, args.checkout, "MiniMaxAI/MiniMax-M3", [], source)
        summary = summarise(lines, 16, sampler)
        write_gz(
            args.out / "b_minimax_m3_joint.json.gz",
            {
                "format": FORMAT,
                "set": "b",
                "checkout_commit": args.commit,
                "recipe": "MiniMaxAI/MiniMax-M3",
                "options": {},
                "digest_chars": 16,
                **summary,
            },
        )
        sample_path = args.out / "sample_minimax_m3.jsonl"
        with sample_path.open("w", encoding="utf-8") as handle:
            for record in sampler.records:
                handle.write(json.dumps(record, ensure_ascii=False) + "\n")
        print(f"wrote {sample_path}", file=sys.stderr)

    if "c" in sets:
        versions: dict[str, Any] = {}
        for file in sorted(args.history.glob("*.yaml")):
            source = reuse / "c" / f"{file.stem}.jsonl" if reuse else None
            lines = oracle_lines(args.oracle, args.checkout, str(file.resolve()), [], source)
            versions[file.name] = summarise(lines, 0, None)
        write_gz(
            args.out / "c_minimax_m3_history.json.gz",
            {
                "format": FORMAT,
                "set": "c",
                "checkout_commit": args.commit,
                "options": {},
                "versions": versions,
            },
        )
    if "f" in sets:
        record_fixture(args.oracle, args.checkout, args.commit, args.out)
    return 0


def record_fixture(oracle: Path, checkout: Path, commit: str, out: Path) -> None:
    """Run the checkout's builder over the fixture root (its data, the checkout's src/)."""
    runs: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        combined = Path(tmp) / "checkout"
        combined.mkdir()
        (combined / "src").symlink_to(checkout / "src")
        for name in ("taxonomy.yaml", "strategies", "kv_store", "models"):
            (combined / name).symlink_to(FIXTURE_ROOT / name)
        for file in sorted((FIXTURE_ROOT / "models").rglob("*.yaml")):
            ref = str(file.relative_to(FIXTURE_ROOT / "models").with_suffix(""))
            for name, options in FIXTURE_RUNS:
                lines = oracle_lines(oracle, combined, ref, list(options), None)
                entry = summarise(lines, 16, None)
                entry["options"] = list(options)
                runs[f"{ref}:{name}"] = entry
    write_gz(
        out / "f_fixture_root.json.gz",
        {"format": FORMAT, "set": "f", "checkout_commit": commit, "runs": runs},
    )


if __name__ == "__main__":
    sys.exit(main())
