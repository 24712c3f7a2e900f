"""Work the benchmark runner does in a child process, so that the runner itself stays small.

On Linux a child's peak RSS (``ru_maxrss``) starts at its parent's RSS when it
was forked: a runner that had parsed a 150 MB JSON report would report that as
the peak of every later child. So parsing reports, building the PR repository and
generating synthetic inputs happen here, one subcommand per child:

python benchmarks/helpers.py combinations REPORT
python benchmarks/helpers.py pr-repo WORKDIR            -> prints "PATH BASE HEAD"
python benchmarks/helpers.py scaled SRC_RECIPES SRC_EVIDENCE TARGET AXIS SCALE
                                                          -> prints JSON {variants, records}
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def combinations(report: Path) -> None:
    with report.open(encoding="utf-8") as handle:
        data = json.load(handle)
    print(int(data["summary"]["combinations"]))


def pr_repo(work: Path) -> None:
    """A git repository of the embedded recipes root with one commit changing MiniMax-M3."""
    import git
    import yaml

    path = work / "pr-repo"
    if path.exists():
        shutil.rmtree(path)
    shutil.copytree(REPO / "recipes", path)
    repo = git.Repo.init(path)
    repo.git.config("user.email", "bench@example.invalid")
    repo.git.config("user.name", "bench")
    model = path / "models" / "MiniMaxAI" / "MiniMax-M3.yaml"
    original = model.read_text(encoding="utf-8")
    data = yaml.safe_load(original)
    data["variants"]["mxfp8"].pop("extra_args")
    model.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    repo.git.add(A=True)
    base = repo.index.commit("base").hexsha
    model.write_text(original, encoding="utf-8")
    repo.git.add(A=True)
    head = repo.index.commit("add the FP8 indexer cache to mxfp8").hexsha
    print(path, base, head)


def scaled(recipes: Path, evidence: Path, target: Path, axis: str, scale: int) -> None:
    import synthetic

    names = synthetic.scaled_recipes_root(
        recipes, target / "recipes", scale if axis == "combinations" else 1
    )
    records = synthetic.scaled_evidence(
        evidence, target / "evidence", scale if axis == "evidence" else 1
    )
    print(json.dumps({"variants": names, "records": records}))


def main(argv: list[str]) -> None:
    command, args = argv[0], argv[1:]
    if command == "combinations":
        combinations(Path(args[0]))
    elif command == "pr-repo":
        pr_repo(Path(args[0]))
    elif command == "scaled":
        scaled(Path(args[0]), Path(args[1]), Path(args[2]), args[3], int(args[4]))
    else:
        raise SystemExit(f"unknown helper {command!r}")


if __name__ == "__main__":
    main(sys.argv[1:])
