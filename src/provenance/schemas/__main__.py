"""Regenerate the shipped JSON Schemas: ``python -m provenance.schemas``."""

from __future__ import annotations

from pathlib import Path

from provenance.schemas import write_all

if __name__ == "__main__":
    for path in write_all(Path(__file__).resolve().parent):
        print(path)
