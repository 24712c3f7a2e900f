"""Ledger files that cannot be read, and feature args vLLM would refuse (issue #20, class 6).

``verify`` used to report OK on a ledger entry that is a symlink to itself (the
file was skipped as "not a file"); every ledger name that is not a readable
regular file is now an error naming it. A feature whose ``args`` holds a stray
positional value exited 3 naming no file; now the message has file and line.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner
from ledger_factories import make_entry, make_record
from ledger_workspace import new_workspace
from sec_fixtures import MODEL_FILE, REPO_ROOT, reduced_recipes_root

from provenance.cli.main import cli
from provenance.errors import EXIT_INPUT, EXIT_OK
from provenance.store.ledger import DECLARATIONS_FILE, MANIFEST_FILE

Breaker = Callable[[Path], None]


def _self_link(path: Path) -> None:
    path.unlink(missing_ok=True)
    path.symlink_to(path.name)


def _dangling_link(path: Path) -> None:
    path.unlink(missing_ok=True)
    path.symlink_to("nowhere.yaml")


def _fifo(path: Path) -> None:
    path.unlink(missing_ok=True)
    os.mkfifo(path)


def _directory(path: Path) -> None:
    path.unlink(missing_ok=True)
    path.mkdir()


BREAKERS: dict[str, Breaker] = {
    "self-symlink": _self_link,
    "dangling-symlink": _dangling_link,
    "fifo": _fifo,
    "directory": _directory,
}


def _verify(ledger: Path, evidence: Path) -> list[str]:
    return ["verify", "--ledger", str(ledger), "--evidence", str(evidence)]


@pytest.mark.parametrize("breaker", BREAKERS, ids=list(BREAKERS))
@pytest.mark.parametrize("target", ["entry", "new-entry", DECLARATIONS_FILE, MANIFEST_FILE])
def test_an_unreadable_ledger_file_is_an_error_naming_it(
    breaker: str, target: str, tmp_path: Path
) -> None:
    (tmp_path / "w").mkdir()
    workspace = new_workspace(tmp_path / "w")
    ids = [workspace.store.put(make_record(i))[0] for i in range(2)]
    entry = make_entry(tuple(ids))
    workspace.ledger.write_entry(entry)
    args = _verify(workspace.ledger_root, workspace.evidence_root)
    assert CliRunner().invoke(cli, args).exit_code == EXIT_OK
    if target == "entry":
        path = workspace.ledger.path_of(entry.pr)
    elif target == "new-entry":
        path = workspace.ledger.prs_dir / "SemiAnalysisAI__InferenceX__9999.yaml"
    else:
        path = workspace.ledger_root / target
    BREAKERS[breaker](path)
    commands = [args] if target == MANIFEST_FILE else [args, ["graph", *args[1:]]]
    for command in commands:  # (only verify reads the manifest)
        result = CliRunner().invoke(cli, command)
        assert result.exit_code == EXIT_INPUT, (command[0], result.output)
        assert result.output.startswith("invalid input: ")
        assert path.name in result.output
        assert "Traceback" not in result.output


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads a file whatever its mode")
def test_a_ledger_entry_without_read_permission_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "w").mkdir()
    workspace = new_workspace(tmp_path / "w")
    entry = make_entry((workspace.store.put(make_record(0))[0],))
    workspace.ledger.write_entry(entry)
    path = workspace.ledger.path_of(entry.pr)
    path.chmod(0)
    result = CliRunner().invoke(cli, _verify(workspace.ledger_root, workspace.evidence_root))
    assert result.exit_code == EXIT_INPUT, result.output
    assert path.name in result.output


def test_a_self_symlinked_entry_in_a_copy_of_the_real_ledger_fails_verify(tmp_path: Path) -> None:
    ledger, evidence = tmp_path / "ledger", tmp_path / "evidence"
    shutil.copytree(REPO_ROOT / "ledger", ledger)
    shutil.copytree(REPO_ROOT / "evidence", evidence)
    victim = sorted((ledger / "prs").iterdir())[0]
    _self_link(victim)
    result = CliRunner().invoke(cli, _verify(ledger, evidence))
    assert result.exit_code == EXIT_INPUT, result.output
    assert victim.name in result.output


# --- a feature whose args vLLM would refuse ------------------------------------------


def _with_feature_args(root: Path, args: list[str]) -> int:
    """Give the recipe one feature whose args are ``args``; the line of their first."""
    path = root / MODEL_FILE
    data = yaml.safe_load(path.read_text())
    data["features"] = {"tool_calling": {"args": [*args, "--enable-auto-tool-choice"]}}
    text = yaml.safe_dump(data, allow_unicode=True, sort_keys=False)
    path.write_text(text)
    return text.splitlines().index("  tool_calling:") + 3  # then "args:", then the first


@pytest.mark.parametrize(
    "stray", [["stray"], ["--block-size", "16", "x"], ["--block-size=16", "x"]]
)
def test_a_stray_positional_feature_arg_is_located(stray: list[str], tmp_path: Path) -> None:
    recipes = reduced_recipes_root(tmp_path / "recipes")
    line = _with_feature_args(recipes, stray)
    result = CliRunner().invoke(
        cli,
        ["audit", "MiniMaxAI/MiniMax-M3", "--recipes-root", str(recipes), "--features", "all"],
    )
    assert result.exit_code == EXIT_INPUT, result.output
    index = len(stray) - 1
    assert f"{MODEL_FILE}:{line + index} (features." in result.output, result.output
    assert "positional" in result.output


RECIPES_CHECKOUT = Path("/tmp/recipes-8959cf6")


def test_a_stray_positional_in_a_copy_of_the_real_recipes_checkout_is_located(
    tmp_path: Path,
) -> None:
    if not (RECIPES_CHECKOUT / "models").is_dir():
        pytest.skip("recipes checkout at 8959cf6 not present")
    root = tmp_path / "recipes"
    shutil.copytree(RECIPES_CHECKOUT, root, ignore=shutil.ignore_patterns(".git"))

    def first_feature_args(lines: list[str]) -> int | None:
        in_features = False
        for i, text in enumerate(lines[:-1]):
            if not text.startswith(" "):
                in_features = text.startswith("features:")
            elif in_features and text.strip() == "args:" and lines[i + 1].lstrip().startswith("- "):
                return i
        return None

    for target in sorted((root / "models").glob("*/*.yaml")):
        lines = target.read_text().splitlines(keepends=True)
        at = first_feature_args(lines)
        if at is not None:
            break
    else:
        pytest.fail("no recipe of the checkout has a feature args list")
    indent = lines[at + 1][: len(lines[at + 1]) - len(lines[at + 1].lstrip())]
    lines.insert(at + 1, f"{indent}- stray\n")
    target.write_text("".join(lines))
    ref = str(target.relative_to(root))
    result = CliRunner().invoke(cli, ["combos", ref, "--recipes-root", str(root)])
    assert result.exit_code == EXIT_INPUT, result.output
    assert f"{ref}:{at + 2} " in result.output, result.output
