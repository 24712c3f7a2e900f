"""README.md's set-up for a fresh machine (issue #31): exactly two commands, one that
installs and runs ``provenance audit`` and one that installs and runs the whole suite
over two cores (the command ``.ci/run`` runs), and one command that prepares the
optional recipes checkout where the tests look for it."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import git
import pytest
from recipes_support import full_checkout

REPO = Path(__file__).resolve().parents[1]
README = (REPO / "README.md").read_text(encoding="utf-8")
SCRIPT = REPO / "scripts" / "prepare_test_inputs.sh"
TEST_COMMAND = "python3 -m pip install -e '.[dev]' && python3 -m pytest -n 2"


def _quick_start() -> str:
    start = README.index("## Quick start")
    return README[start : README.index("\n## ", start + 1)]


def test_two_setup_commands_and_the_tests_run_on_two_cores() -> None:
    blocks = re.findall(r"^```bash\n(.*?)^```$", _quick_start(), re.MULTILINE | re.DOTALL)
    assert [b.strip() for b in blocks] == [
        "python3 -m pip install . && provenance audit",
        TEST_COMMAND,
    ]


def test_ci_runs_the_readme_test_command() -> None:
    lines = (REPO / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    command = lines[lines.index("# The README's test command (exactly).") + 1]
    assert command.replace("pip install -q ", "pip install ") == TEST_COMMAND
    assert any(line.startswith("scripts/prepare_test_inputs.sh") for line in lines)


def test_the_readme_names_the_command_that_prepares_the_optional_inputs() -> None:
    assert "`scripts/prepare_test_inputs.sh`" in README
    assert os.access(SCRIPT, os.X_OK)
    text = SCRIPT.read_text(encoding="utf-8")
    # the default checkout is where full_checkout() looks without PROVENANCE_RECIPES_ROOT
    rev = re.search(r'rev="\$\{PROVENANCE_RECIPES_REV:-(\w+)\}"', text)
    assert rev is not None and rev[1] == "8959cf6"
    assert 'dest="${PROVENANCE_RECIPES_ROOT:-/tmp/recipes-${rev}}"' in text
    assert "/tmp/recipes-8959cf6" in README


def test_the_script_makes_a_checkout_the_tests_accept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = git.Repo.init(tmp_path / "source")
    source.git.config("user.email", "t@example.invalid")
    source.git.config("user.name", "t")
    work = tmp_path / "source"
    (work / "models").mkdir()
    (work / "taxonomy.yaml").write_text("hardware_profiles: {}\n")
    (work / "models" / "a.yaml").write_text("old\n")
    source.git.add(A=True)
    source.index.commit("the pinned revision")
    pinned = source.head.commit.hexsha
    (work / "models" / "a.yaml").write_text("new\n")
    source.git.add(A=True)
    source.index.commit("later")
    dest = tmp_path / "checkout"
    env = {
        **os.environ,
        "PROVENANCE_RECIPES_GIT": str(work),
        "PROVENANCE_RECIPES_REV": pinned[:7],
        "PROVENANCE_RECIPES_ROOT": str(dest),
    }
    for _ in range(2):  # the second run finds it there
        done = subprocess.run(
            ["bash", str(SCRIPT)], env=env, capture_output=True, text=True, check=False, timeout=120
        )
        assert done.returncode == 0, done.stderr
    assert "already there" in done.stdout
    assert (dest / "models" / "a.yaml").read_text() == "old\n"
    monkeypatch.setenv("PROVENANCE_RECIPES_ROOT", str(dest))
    assert full_checkout() == dest
