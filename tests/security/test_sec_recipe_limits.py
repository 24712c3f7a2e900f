"""Explicit limits on a recipe's size and its cross-product (round 3, "faults").

A recipes PR controls how many variants, features and modes a recipe has. 10,000
variants took 62 s with no limit (the red team's measure, a non-editable install);
each count now has a limit far above every real recipe, refused with exit 3, one line
naming ``file:line`` (the key that holds too many) and the limit; the number of
combinations the audit would walk is bounded too. The measured maxima of the 173 real
recipes (and every revision in their history) are in docs/security.md beside the limits.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from sec_fixtures import MODEL_FILE, reduced_recipes_root, run_provenance

from provenance.cli.main import cli
from provenance.errors import EXIT_INPUT, EXIT_OK, InputError
from provenance.recipes.enumerate import selections
from provenance.recipes.load import loader
from provenance.recipes.load.loader import (
    MAX_FEATURES,
    MAX_MODES,
    MAX_RECIPE_BYTES,
    MAX_VARIANTS,
    load_recipe,
    load_recipes_root,
)


def _recipe(root: Path, edit: Any) -> tuple[Path, str]:
    """The reduced MiniMax-M3 recipe changed by ``edit(data)``; its path and text."""
    reduced_recipes_root(root)
    path = root / MODEL_FILE
    data = yaml.safe_load(path.read_text())
    edit(data)
    text = yaml.safe_dump(data, sort_keys=False, default_flow_style=None)
    path.write_text(text)
    return path, text


def _line(text: str, key: str) -> int:
    return next(i for i, t in enumerate(text.splitlines(), 1) if t.startswith(key))


def _refused(root: Path, *extra: str) -> str:
    result = CliRunner().invoke(
        cli, ["audit", "MiniMaxAI/MiniMax-M3", "--recipes-root", str(root), *extra]
    )
    assert result.exit_code == EXIT_INPUT, result.output
    assert len(result.stderr.splitlines()) == 1 and "Traceback" not in result.stderr
    return result.stderr


def _variants(count: int) -> Any:
    def edit(data: dict[str, Any]) -> None:
        data["variants"] = {f"v{i}": {"precision": "nvfp4"} for i in range(count)}

    return edit


def test_ten_thousand_variants_are_refused_quickly(tmp_path: Path) -> None:
    root = tmp_path / "recipes"
    _, text = _recipe(root, _variants(10_000))
    for name in ("ledger", "evidence"):
        (tmp_path / name).mkdir()
    args = ["audit", "MiniMaxAI/MiniMax-M3", "--recipes-root", str(root)]
    started = time.monotonic()
    done = run_provenance([*args, "--ledger", "ledger", "--evidence", "evidence"], cwd=tmp_path)
    took = time.monotonic() - started
    assert done.returncode == EXIT_INPUT, done.stderr
    line = _line(text, "variants:")
    assert f"{MODEL_FILE}:{line} (variants): 10000 variants, over the limit of" in done.stderr
    assert str(MAX_VARIANTS) in done.stderr
    assert len(done.stderr.splitlines()) == 1
    print(f"10,000 variants refused in {took:.2f} s")
    assert took < 30  # (before: 5 s on this reduced recipe, 62 s on the red team's)


def test_variants_at_the_limit_load_and_one_more_is_refused(tmp_path: Path) -> None:
    _recipe(tmp_path / "ok", _variants(MAX_VARIANTS))
    load_recipe(load_recipes_root(tmp_path / "ok"), "MiniMaxAI/MiniMax-M3")
    _, text = _recipe(tmp_path / "over", _variants(MAX_VARIANTS + 1))
    stderr = _refused(tmp_path / "over")
    assert f"{MODEL_FILE}:{_line(text, 'variants:')} (variants): " in stderr


def test_too_many_features_are_refused_with_the_line(tmp_path: Path) -> None:
    def edit(data: dict[str, Any]) -> None:
        data["features"] = {f"f{i}": {"args": [f"--flag-{i}"]} for i in range(MAX_FEATURES + 1)}

    _, text = _recipe(tmp_path / "recipes", edit)
    stderr = _refused(tmp_path / "recipes")
    assert f"{MODEL_FILE}:{_line(text, 'features:')} (features): {MAX_FEATURES + 1} features" in (
        stderr
    )
    assert f"limit of {MAX_FEATURES}" in stderr


def test_too_many_modes_are_refused_with_the_line(tmp_path: Path) -> None:
    def edit(data: dict[str, Any]) -> None:
        modes = {f"m{i}": {"args": [f"--mode-{i}"]} for i in range(MAX_MODES + 1)}
        data["features"] = {"many": {"modes": modes}}

    _, text = _recipe(tmp_path / "recipes", edit)
    stderr = _refused(tmp_path / "recipes")
    line = _line(text, "    modes:")
    assert f"{MODEL_FILE}:{line} (features.many.modes): {MAX_MODES + 1} modes" in stderr


def test_an_oversized_recipe_file_is_refused_before_it_is_parsed(tmp_path: Path) -> None:
    path, text = _recipe(tmp_path / "recipes", lambda data: None)
    path.write_text(text + "#" * (MAX_RECIPE_BYTES - len(text.encode()) - 1) + "\n")
    assert path.stat().st_size == MAX_RECIPE_BYTES
    load_recipe(load_recipes_root(tmp_path / "recipes"), "MiniMaxAI/MiniMax-M3")
    path.write_text(text + "#" * (MAX_RECIPE_BYTES - len(text.encode())) + "\n")
    stderr = _refused(tmp_path / "recipes")
    assert f"{MODEL_FILE}: recipe file is {MAX_RECIPE_BYTES + 1} bytes" in stderr
    assert f"limit of {MAX_RECIPE_BYTES}" in stderr


def test_the_cross_product_is_bounded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The embedded MiniMax-M3 recipe offers 71,208 combinations; under a limit of 70,000
    the audit is refused, naming the recipe's variants line, the count and the limit."""
    monkeypatch.setattr(selections, "MAX_COMBINATIONS", 70_000)
    root = Path(loader.__file__).resolve().parents[4] / "recipes"
    text = (root / MODEL_FILE).read_text()
    with pytest.raises(InputError) as caught:
        list(
            selections.enumerate_cells(
                load_recipe(load_recipes_root(root), "MiniMaxAI/MiniMax-M3"),
                load_recipes_root(root),
                selections.EnumerationOptions(),
            )
        )
    diagnostic = caught.value.diagnostic()
    assert f"{MODEL_FILE}:{_line(text, 'variants:')} (variants): " in diagnostic
    assert "71208 combinations, over the limit of 70000" in diagnostic
    # a narrower audit of the same recipe stays under it
    narrow = ["--variant", "nvfp4", "--ledger", str(tmp_path), "--evidence", str(tmp_path)]
    result = CliRunner().invoke(
        cli, ["audit", "MiniMaxAI/MiniMax-M3", "--recipes-root", str(root), *narrow]
    )
    assert result.exit_code == EXIT_OK, result.output


def test_the_real_limits_are_far_above_the_real_recipes() -> None:
    """Documented maxima (docs/security.md): 58,448 bytes, 5 variants, 6 features,
    3 modes, 230,184 combinations (MiniMax-M3 with --kv all)."""
    assert MAX_RECIPE_BYTES >= 8 * 58_448
    assert MAX_VARIANTS >= 10 * 5 and MAX_FEATURES >= 10 * 6 and MAX_MODES >= 10 * 3
    assert selections.MAX_COMBINATIONS >= 8 * 230_184
