"""Cut a ledger and evidence store down to some checkpoints (for fair audit timings).

python benchmarks/scope_store.py --ledger L --evidence E --out DIR CHECKPOINT [...]

Writes ``DIR/ledger`` and ``DIR/evidence``: every record whose checkpoint one of
CHECKPOINT can select (the store's checkpoint keys, ``provenance.model.scope``), the
entries of the PRs citing one of them with their ``records`` (and each sweep's
``ran``) cut to those, the manifest and declarations as they are, and the checkpoint
index. Entries citing none
are left out. The result is what an ingest restricted to those checkpoints would have
written, so ``audit`` against it and against the whole store judge the same evidence:
the comparison of issue #19 (Build 4). Uses only public store APIs; ``provenance
verify --ledger DIR/ledger --evidence DIR/evidence`` passes on it.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from provenance.model.scope import checkpoint_key
from provenance.store.evidence import EvidenceStore
from provenance.store.ledger import Ledger
from provenance.store.record_index import build_index, write_index


def scope_store(ledger: Path, evidence: Path, out: Path, checkpoints: list[str]) -> dict[str, int]:
    keys = {checkpoint_key(c) for c in checkpoints}
    source, book = EvidenceStore(evidence), Ledger(ledger)
    kept = [r for r in source.load_all().values() if checkpoint_key(r.checkpoint) in keys]
    target, new_book = EvidenceStore(out / "evidence"), Ledger(out / "ledger")
    for record in kept:
        target.put(record)
    write_index(target, build_index(kept))
    ids = {r.id for r in kept}
    entries = 0
    for entry in book.entries():
        cited = tuple(i for i in entry.records if i in ids)
        if cited:
            new_book.prs_dir.mkdir(parents=True, exist_ok=True)
            sweeps = tuple(
                s.model_copy(update={"ran": tuple(i for i in s.ran if i in ids)})
                for s in entry.sweeps
            )
            new_book.write_entry(entry.model_copy(update={"records": cited, "sweeps": sweeps}))
            entries += 1
    manifest = book.manifest()
    if manifest is not None:
        new_book.write_manifest(manifest)
    new_book.write_declarations(book.declarations())
    return {"records": len(kept), "entries": entries}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("checkpoints", nargs="+")
    parser.add_argument("--ledger", type=Path, required=True)
    parser.add_argument("--evidence", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    counts = scope_store(args.ledger, args.evidence, args.out, args.checkpoints)
    print(json.dumps({"out": str(args.out), **counts}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
