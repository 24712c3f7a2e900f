"""Issue #31 on a plain ``pip install``: the embedded recipes root lives in the venv's
site-packages, which no report or error may show; a RECIPE it lacks gets a hint."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from shipped_support import base_env, run

pytestmark = [pytest.mark.shipped, pytest.mark.slow]


def test_a_recipe_missing_outside_a_checkout_gets_a_hint_not_a_venv_path(
    installed_bin: Path, tmp_path: Path
) -> None:
    for command in ("audit", "combos"):
        done = run(
            ["provenance", command, "Org/Missing-Model"], cwd=tmp_path, env=base_env(installed_bin)
        )
        assert done.returncode == 2, done.stderr
        error, hint = done.stderr.splitlines()
        assert error.startswith("usage error: recipe Org/Missing-Model not found"), error
        assert "site-packages" not in done.stderr
        assert hint == (
            "  hint: run inside a vllm-project/recipes checkout, or pass --recipes-root DIR"
        )


def test_the_report_names_the_packaged_recipes_root_without_its_path(
    installed_bin: Path, tmp_path: Path
) -> None:
    args = ["provenance", "audit", "--variant", "nvfp4", "--hardware", "b200"]
    done = run([*args, "--features", "none"], cwd=tmp_path, env=base_env(installed_bin))
    assert done.returncode == 0, done.stderr
    assert "recipes embedded (provenance " in done.stdout.splitlines()[2]
    done = run(
        [*args, "--features", "none", "--format", "json"], cwd=tmp_path, env=base_env(installed_bin)
    )
    source = json.loads(done.stdout)["recipes_source"]
    assert (source["path"], source["how"]) == ("provenance:recipes", "embedded")
