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


def replay_pr682(parent: Path) -> tuple[Path, str, str]:
    """The embedded recipes root in a git repository under ``parent``: base = MiniMax-M3
    after recipes PR #672, head = after #682 (fixed dates: the same SHAs on every run);
    (work tree, base SHA, head SHA). The caller skips when :data:`HISTORY` is absent."""
    import shutil

    import git

    work = parent / "recipes"
    shutil.copytree(REPO_ROOT / "recipes", work)
    repo = git.Repo.init(work)
    author = git.Actor("t", "t@example.invalid")
    revisions = []
    for day, name in enumerate((PR682_BASE, PR682_HEAD), start=1):
        shutil.copy(HISTORY / name, work / MODEL)
        repo.git.add(A=True)
        date = f"{1_784_592_000 + day * 86_400} +0000"
        repo.index.commit(name, author=author, committer=author, author_date=date, commit_date=date)
        revisions.append(repo.head.commit.hexsha)
    return work, revisions[0], revisions[1]
