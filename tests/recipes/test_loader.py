"""Loading recipes roots and recipes; every bad input names file, line and key path."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from recipes_support import CORPUS_ROOT, FIXTURE_ROOT

from provenance.cli.main import cli
from provenance.errors import EXIT_INPUT, InputError
from provenance.recipes.load.loader import RecipesRoot, load_recipe, load_recipes_root
from provenance.recipes.load.schema import Feature, ModelSection, RecipeFile, Variant

TOY = FIXTURE_ROOT / "models" / "Toy" / "Toy-1.yaml"


@pytest.fixture
def root_copy(tmp_path: Path) -> Path:
    target = tmp_path / "root"
    shutil.copytree(FIXTURE_ROOT, target)
    return target


def _break_model(root: Path, old: str, new: str) -> Path:
    file = root / "models" / "Toy" / "Toy-1.yaml"
    text = file.read_text(encoding="utf-8")
    assert old in text
    file.write_text(text.replace(old, new, 1), encoding="utf-8")
    return file


def _line_of(file: Path, needle: str) -> int:
    for number, line in enumerate(file.read_text(encoding="utf-8").splitlines(), start=1):
        if needle in line:
            return number
    raise AssertionError(needle)


def _cli_error(root: Path, ref: str = "Toy/Toy-1") -> tuple[int, str]:
    result = CliRunner().invoke(cli, ["combos", ref, "--recipes-root", str(root)])
    return result.exit_code, result.output


BAD_MODELS = {
    # kind: (old text, new text, line marker, key path, message)
    "unknown key": (
        "    vram_minimum_gb: 90\n",
        "    vram_minimum_gb: 90\n    extra_argz: [--x]\n",
        "extra_argz",
        "variants.fp4.extra_argz",
        "unknown key",
    ),
    "wrong type": (
        "    vram_minimum_gb: 90\n",
        '    vram_minimum_gb: "90"\n',
        'vram_minimum_gb: "90"',
        "variants.fp4.vram_minimum_gb",
        "expected a number or an integer, got a string",
    ),
    "non-string argv token": (
        'base_args: ["--block-size", "64"]',
        'base_args: ["--block-size", 64]',
        "base_args",
        "model.base_args[1]",
        "expected a string, got an integer",
    ),
    "wrong type inside a hardware-keyed map": (
        "      hopper8: 4\n",
        "      hopper8: four\n",
        "hopper8: four",
        "variants.big.tp.hopper8",
        "expected an integer, got a string (and 1 more error(s))",
    ),
    "duplicate key": (
        "    vram_minimum_gb: 90\n",
        "    vram_minimum_gb: 90\n    vram_minimum_gb: 91\n",
        "vram_minimum_gb: 91",
        "variants.fp4.vram_minimum_gb",
        "duplicate key 'vram_minimum_gb' (first defined on line {previous})",
    ),
}


@pytest.mark.parametrize("kind", sorted(BAD_MODELS))
def test_bad_recipe_names_file_line_and_key_path(kind: str, root_copy: Path) -> None:
    old, new, marker, key_path, message = BAD_MODELS[kind]
    file = _break_model(root_copy, old, new)
    line = _line_of(file, marker)
    message = message.format(previous=line - 1)
    expected = f"{file}:{line} ({key_path}): {message}"
    root = load_recipes_root(root_copy)
    with pytest.raises(InputError) as info:
        load_recipe(root, "Toy/Toy-1")
    assert str(info.value) == expected
    assert info.value.exit_code == EXIT_INPUT
    code, output = _cli_error(root_copy)
    assert code == EXIT_INPUT
    assert output.strip() == f"invalid input: {expected}"


def test_unparsable_yaml(root_copy: Path) -> None:
    file = _break_model(
        root_copy, 'base_args: ["--block-size", "64"]', 'base_args: ["--block-size"'
    )
    code, output = _cli_error(root_copy)
    assert code == EXIT_INPUT
    line = _line_of(file, "base_env")
    assert output.startswith(f"invalid input: {file}:{line}: invalid YAML: ")


def test_missing_recipe_file(root_copy: Path) -> None:
    code, output = _cli_error(root_copy, "Toy/Nope")
    assert code == EXIT_INPUT
    assert output.strip() == (
        f"invalid input: {root_copy / 'models' / 'Toy' / 'Nope.yaml'}: file not found"
    )


def test_missing_taxonomy_is_not_a_recipes_root(tmp_path: Path) -> None:
    code, output = _cli_error(tmp_path)
    assert code == EXIT_INPUT
    assert f"invalid input: {tmp_path}: not a recipes root (no taxonomy.yaml)" in output


def test_bad_strategy_file(root_copy: Path) -> None:
    file = root_copy / "strategies" / "multi_node_tp.yaml"
    file.write_text(file.read_text() + "parallel_flags: --x\n")
    code, output = _cli_error(root_copy)
    assert code == EXIT_INPUT
    line = _line_of(file, "parallel_flags")
    assert output.strip() == f"invalid input: {file}:{line} (parallel_flags): unknown key"


def test_bad_taxonomy_type(root_copy: Path) -> None:
    file = root_copy / "taxonomy.yaml"
    file.write_text(file.read_text().replace("gpu_count: 8", 'gpu_count: "8"', 1))
    with pytest.raises(InputError) as info:
        load_recipes_root(root_copy)
    line = _line_of(file, 'gpu_count: "8"')
    assert str(info.value) == (
        f"{file}:{line} (hardware_profiles.hopper8.gpu_count): expected an integer, got a string"
    )


def test_bad_kv_store_deploy_type(root_copy: Path) -> None:
    file = root_copy / "kv_store" / "kv_store_toy.yaml"
    file.write_text(file.read_text().replace("deploy_type: kv_store_lb", "deploy_type: lb"))
    with pytest.raises(InputError, match=r"kv_store_toy.yaml:2 \(deploy_type\): Input should be"):
        load_recipes_root(root_copy)


def test_root_without_kv_store_has_no_topologies(root_copy: Path) -> None:
    shutil.rmtree(root_copy / "kv_store")
    root = load_recipes_root(root_copy)
    assert root.kv_store == {}
    assert set(root.strategies) >= {"single_node_tp", "pd_cluster"}


def test_recipe_refs_and_identity(toy_root) -> None:  # type: ignore[no-untyped-def]
    by_name = load_recipe(toy_root, "Toy/Toy-1")
    by_relative = load_recipe(toy_root, "models/Toy/Toy-1.yaml")
    by_absolute = load_recipe(toy_root, TOY)
    assert by_name.hf_id == by_relative.hf_id == by_absolute.hf_id == "Toy/Toy-1"
    assert by_name.spec == by_absolute.spec


def test_recipe_outside_the_root_is_named_by_its_model_id(toy_root, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    outside = tmp_path / "2026-01-01_abc_pr1.yaml"
    shutil.copy(TOY, outside)
    assert load_recipe(toy_root, outside).hf_id == "Toy/Toy-1"


@pytest.mark.corpus
def test_corpus_recipes_load() -> None:
    if not (CORPUS_ROOT / "taxonomy.yaml").is_file():
        pytest.skip("../shared/corpus is not present")
    root = load_recipes_root(CORPUS_ROOT)
    assert root.kv_store == {}
    for file in sorted((CORPUS_ROOT / "models").rglob("*.yaml")):
        assert load_recipe(root, file).spec.variants


@pytest.mark.parametrize(
    ("old", "new", "marker", "key_path", "message"),
    [
        (
            "    default_mode: a\n",
            "    default_mode: z\n",
            "default_mode: z",
            "features.spec.default_mode",
            "unknown mode 'z'",
        ),
        (
            "        variants: [fp4]\n",
            "        variants: [fp5]\n",
            "variants: [fp5]",
            "features.spec.modes.c.variants",
            "unknown variant 'fp5'",
        ),
        (
            "  text_only:\n    args:",
            "  text_only:\n    modes: {}\n    args:",
            "modes: {}",
            "features.text_only.modes",
            "modes must be a non-empty mapping",
        ),
        (
            "    tp:\n      hopper8: 4",
            "    default_modes:\n      spec: c\n    tp:\n      hopper8: 4",
            "spec: c",
            "variants.big.default_modes.spec",
            "mode 'c' is not available for variant 'big'",
        ),
    ],
)
def test_feature_mode_rules(
    old: str, new: str, marker: str, key_path: str, message: str, root_copy: Path
) -> None:
    file = _break_model(root_copy, old, new)
    line = _line_of(file, marker)
    code, output = _cli_error(root_copy)
    assert code == EXIT_INPUT
    assert output.strip() == f"invalid input: {file}:{line} ({key_path}): {message}"


KNOWN_KEYS = {
    (): set(RecipeFile.model_fields),
    ("variants", "fp4"): set(Variant.model_fields),
    ("features", "tools"): set(Feature.model_fields),
    ("model",): set(ModelSection.model_fields),
}


@settings(max_examples=40, deadline=None)
@given(
    where=st.sampled_from(sorted(KNOWN_KEYS)),
    key=st.from_regex(r"[a-z][a-z_]{0,12}", fullmatch=True),
    value=st.one_of(st.integers(), st.text(max_size=5), st.lists(st.integers(), max_size=2)),
)
def test_any_unknown_key_is_named_with_its_path(
    toy_root: RecipesRoot, where: tuple[str, ...], key: str, value: object
) -> None:
    assume(key not in KNOWN_KEYS[where])
    data = yaml.safe_load(TOY.read_text(encoding="utf-8"))
    node = data
    for part in where:
        node = node[part]
    node[key] = value
    with tempfile.TemporaryDirectory() as tmp:
        file = Path(tmp) / "Toy-1.yaml"
        file.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
        with pytest.raises(InputError) as info:
            load_recipe(toy_root, file)
    location = info.value.location
    assert location is not None
    assert location.key_path == ".".join((*where, key))
    assert location.line is not None
    assert info.value.message == "unknown key"
