"""Plain scalars that YAML 1.1 (PyYAML) and YAML 1.2 (the site's js-yaml) read differently."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st
from recipes_support import FIXTURE_ROOT

from provenance.cli.main import cli
from provenance.errors import EXIT_INPUT, InputError
from provenance.recipes.load.yaml12 import check_yaml12_agreement, yaml12_reading


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("on", "plain scalar 'on' is the boolean true in YAML 1.1 but a string in YAML 1.2"),
        ("0755", "plain scalar '0755' is the number 493 in YAML 1.1 but the number 755"),
        ("1:30", "plain scalar '1:30' is the number 90 in YAML 1.1 but a string"),
        ("1e3", "plain scalar '1e3' is a string in YAML 1.1 but the number 1000"),
        ("0o17", "plain scalar '0o17' is a string in YAML 1.1 but the number 15"),
    ],
)
def test_diverging_scalars_are_refused(text: str, message: str) -> None:
    with pytest.raises(InputError) as info:
        check_yaml12_agreement(f"env:\n  A: x\n  B: {text}\n", "r.yaml")
    assert str(info.value).startswith(f"r.yaml:3 (env.B): {message}")


@pytest.mark.parametrize(
    "text", ["1_000", "1.0", "2026-01-01", "0x1F", ".inf", "~", "true", "'on'", '"0755"']
)
def test_agreeing_scalars_pass(text: str) -> None:
    check_yaml12_agreement(f"a: {text}\nb: [{text}]\n", "ok.yaml")


@given(st.integers(min_value=-(10**15), max_value=10**15))
def test_decimal_integers_agree(value: int) -> None:
    check_yaml12_agreement(f"a: {value}\n", "int.yaml")
    assert yaml12_reading(str(value)) == ("number", float(value))


@given(st.text())
def test_quoted_strings_are_never_refused(value: str) -> None:
    check_yaml12_agreement(f"a: {json.dumps(value)}\n", "str.yaml")


def test_a_recipe_with_an_ambiguous_env_value_exits_3(tmp_path: Path) -> None:
    root = tmp_path / "root"
    shutil.copytree(FIXTURE_ROOT, root)
    file = root / "models" / "Toy" / "Toy-1.yaml"
    file.write_text(file.read_text().replace('TOY_BASE: "1"', "TOY_BASE: on"))
    result = CliRunner().invoke(cli, ["combos", "Toy/Toy-1", "--recipes-root", str(root)])
    assert result.exit_code == EXIT_INPUT
    assert result.output.startswith(
        f"invalid input: {file}:11 (model.base_env.TOY_BASE): plain scalar 'on' is the boolean"
    )
