"""``provenance combos``: jsonl records shaped like the oracle's, a table, usage errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from recipes_support import FIXTURE_ROOT

from provenance.cli.main import cli
from provenance.errors import EXIT_USAGE
from provenance.recipes.combos import default_recipes_root
from provenance.recipes.enumerate.selections import EnumerationOptions, enumerate_selections
from provenance.recipes.load.loader import RecipesRoot, load_recipe

ARGS = ["combos", "Toy/Toy-1", "--recipes-root", str(FIXTURE_ROOT)]


def test_jsonl_records(toy_root: RecipesRoot) -> None:
    result = CliRunner().invoke(cli, [*ARGS, "--variant", "fp4", "--kv", "all"])
    assert result.exit_code == 0, result.output
    records = [json.loads(line) for line in result.output.splitlines()]
    recipe = load_recipe(toy_root, "Toy/Toy-1")
    expected = list(
        enumerate_selections(recipe, toy_root, EnumerationOptions(variants=("fp4",), kv="all"))
    )
    assert len(records) == len(expected)
    first = records[0]
    assert list(first) == ["recipe", "selection", "result"]
    assert first["recipe"] == "Toy/Toy-1"
    assert list(first["selection"]) == [
        "variant", "hardware", "strategy", "node_count", "pd", "kv_offload",
        "kv_instances", "features", "feature_modes",
    ]  # fmt: skip
    assert list(first["result"]) == ["deploy_type", "model_id", "roles"]
    roles = {r["role"] for rec in records for r in rec["result"]["roles"]}
    assert roles == {"serve", "head", "worker", "prefill", "decode", "instance", "instance_worker"}
    serve = next(r for rec in records for r in rec["result"]["roles"] if r["role"] == "serve")
    assert "node_rank" not in serve
    assert serve["argv"][:3] == ["vllm", "serve", "Toy/Toy-1-FP4"]


def test_table() -> None:
    result = CliRunner().invoke(
        cli,
        [
            *ARGS,
            *("--variant", "fp4", "--hardware", "bw8", "--strategy", "pd_cluster"),
            *("--features", "none", "--pd-nodes", "1", "--format", "table"),
        ],
    )
    assert result.exit_code == 0, result.output
    assert "Toy/Toy-1 combinations" in result.output
    assert "P 1×tp / D 1×dep" in result.output
    assert "prefill[0]" in result.output


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--variant", "nope"], "usage error: --variant: unknown nope"),
        (["--hardware", "xx"], "usage error: --hardware: unknown xx"),
        (["--strategy", "kv_store_toy"], "usage error: --strategy: unknown kv_store_toy"),
        (["--kv", "bogus"], "usage error: --kv: unknown bogus"),
        (["--pd-nodes", "0"], "usage error: --pd-nodes: '0' is not an integer in 1..16"),
    ],
)
def test_usage_errors(extra: list[str], message: str) -> None:
    result = CliRunner().invoke(cli, [*ARGS, *extra])
    assert result.exit_code == EXIT_USAGE
    assert result.output.startswith(message)


def test_default_recipes_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert default_recipes_root(FIXTURE_ROOT) == FIXTURE_ROOT
    monkeypatch.chdir(FIXTURE_ROOT)
    result = CliRunner().invoke(cli, ["combos", "Toy/Toy-1", "--features", "none"])
    assert result.exit_code == 0, result.output
    # Elsewhere the embedded recipes root (MiniMax-M3) is the default, as for audit.
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(cli, ["combos", "Toy/Toy-1"])
    assert result.exit_code == EXIT_USAGE  # not in the embedded root: a hint, no path
    assert "Toy-1" in result.output
    result = CliRunner().invoke(
        cli,
        ["combos", "MiniMaxAI/MiniMax-M3", "--variant", "nvfp4", "--hardware", "b200",
         "--strategy", "single_node_tp", "--features", "none"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert '"model_id":"nvidia/MiniMax-M3-NVFP4"' in result.output.replace(" ", "")


def test_kv_instances_and_exact_feature_order() -> None:
    result = CliRunner().invoke(
        cli,
        [
            *ARGS,
            *("--variant", "default", "--hardware", "bw8", "--strategy", "single_node_tp"),
            *("--kv", "kv_store_toy", "--kv-instances", "3"),
            *("--features-exact", "reasoning,tools"),
        ],
    )
    assert result.exit_code == 0, result.output
    records = [json.loads(line) for line in result.output.splitlines()]
    assert [r["selection"]["kv_instances"] for r in records] == [None, 3]
    mooncake = records[1]["result"]["roles"]
    assert [(r["role"], r["instance"]) for r in mooncake] == [("instance", i) for i in range(3)]
    argv = records[0]["result"]["roles"][0]["argv"]
    assert argv.index("--reasoning-parser") < argv.index("--tool-call-parser")
    bad = CliRunner().invoke(cli, [*ARGS, "--kv-instances", "0"])
    assert bad.exit_code == EXIT_USAGE
