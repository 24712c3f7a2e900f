"""A value vLLM would refuse in any argument list of a recipe is located (file:line).

An earlier fix located a stray positional value in a feature's ``args``; one in
``model.base_args``, a variant's ``extra_args`` (or its hardware override's), a
recipe- or strategy-level override's ``extra_args``/``vllm_args`` or an advanced
option's ``args`` still stopped the audit with exit 3 naming no file. Every list is
now checked when the recipe is loaded, as the feature lists are.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from sec_fixtures import MODEL_FILE, reduced_recipes_root

from provenance.cli.main import cli
from provenance.errors import EXIT_INPUT, InputError
from provenance.recipes.load.loader import load_recipe, load_recipes_root

KeyPath = tuple[str | int, ...]

LISTS: list[KeyPath] = [
    ("model", "base_args"),
    ("variants", "nvfp4", "extra_args"),
    ("variants", "nvfp4", "hardware_overrides", "b300", "extra_args"),
    ("hardware_overrides", "blackwell", "extra_args"),
    ("strategy_overrides", "single_node_tp", "extra_args"),
    ("strategy_overrides", "single_node_tp", "vllm_args"),
    ("strategy_overrides", "pd_cluster", "prefill", "extra_args"),
    ("strategy_overrides", "pd_cluster", "decode", "vllm_args"),
    ("strategy_overrides", "pd_cluster", "decode", "hardware_overrides", "b300", "extra_args"),
    ("advanced_options", 0, "args"),
]


def _holder(data: dict[str, Any], path: KeyPath) -> list[str]:
    node: Any = data
    for part, following in zip(path, (*path[1:], None), strict=True):
        if isinstance(part, int):
            while len(node) <= part:
                node.append({"id": f"option-{len(node)}"})
            node = node[part]
            continue
        if node.get(part) is None:
            node[part] = [] if following is None else ([] if isinstance(following, int) else {})
        node = node[part]
    assert isinstance(node, list)
    return node


def _with_stray(root: Path, path: KeyPath, stray: list[str]) -> tuple[int, str]:
    """Append ``stray`` to the list at ``path``; the line of its last item and the key path
    the error must name."""
    model = root / MODEL_FILE
    data = yaml.safe_load(model.read_text())
    args = _holder(data, path)
    args += ["--block-size", "16", *stray]
    text = yaml.safe_dump(data, allow_unicode=True, sort_keys=False)
    model.write_text(text)
    line = next(i for i, t in enumerate(text.splitlines(), 1) if t.strip() == f"- {stray[-1]}")
    dotted = ".".join(str(p) if isinstance(p, str) else "" for p in path)
    dotted = dotted.replace("..", f"[{path[1]}].") if path[0] == "advanced_options" else dotted
    return line, f"{dotted}[{len(args) - 1}]"


@pytest.mark.parametrize("path", LISTS, ids=lambda p: ".".join(map(str, p)))
def test_a_stray_value_in_any_arg_list_names_file_and_line(path: KeyPath, tmp_path: Path) -> None:
    root = reduced_recipes_root(tmp_path / "recipes")
    line, key = _with_stray(root, path, ["stray-value"])
    with pytest.raises(InputError) as caught:
        load_recipe(load_recipes_root(root), "MiniMaxAI/MiniMax-M3")
    location = caught.value.location
    assert location is not None and location.path.endswith(MODEL_FILE)
    assert (location.line, location.key_path) == (line, key)
    result = CliRunner().invoke(cli, ["audit", "MiniMaxAI/MiniMax-M3", "--recipes-root", str(root)])
    assert result.exit_code == EXIT_INPUT, result.output
    assert f"{MODEL_FILE}:{line} ({key}): unexpected positional value 'stray-value'" in (
        result.stderr
    )
    assert len(result.stderr.splitlines()) <= 2 and "Traceback" not in result.stderr


@pytest.mark.parametrize("path", LISTS[:2], ids=lambda p: ".".join(map(str, p)))
def test_a_malformed_option_in_an_arg_list_names_file_and_line(
    path: KeyPath, tmp_path: Path
) -> None:
    root = reduced_recipes_root(tmp_path / "recipes")
    model = root / MODEL_FILE
    data = yaml.safe_load(model.read_text())
    _holder(data, path).append("--=x")
    text = yaml.safe_dump(data, allow_unicode=True, sort_keys=False)
    model.write_text(text)
    line = next(i for i, t in enumerate(text.splitlines(), 1) if t.strip() == "- --=x")
    result = CliRunner().invoke(
        cli, ["combos", "MiniMaxAI/MiniMax-M3", "--recipes-root", str(root)]
    )
    assert result.exit_code == EXIT_INPUT, result.output
    assert f"{MODEL_FILE}:{line} " in result.stderr, result.stderr
