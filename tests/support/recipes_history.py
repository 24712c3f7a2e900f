"""Where the tests find the real recipes history (``../shared/corpus``) and which snapshots
replay recipes PR #682, the review's PR."""

from __future__ import annotations

from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
CORPUS = REPO_ROOT.parent / "shared" / "corpus"
HISTORY = CORPUS / "recipes-history" / "MiniMax-M3"
MODEL = "models/MiniMaxAI/MiniMax-M3.yaml"
#: the recipes PR that added the FP8 indexer to nvfp4 and mxfp8 (the review's PR)
PR682_BASE = "2026-07-23_8b1005a_pr672.yaml"
PR682_HEAD = "2026-07-27_83ff280_pr682.yaml"
