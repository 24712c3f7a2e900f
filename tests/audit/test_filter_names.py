"""A filter name nothing can select is a usage error (exit 2) with the nearest names, and a
support level no recipe uses (``verifed``) is an input error naming its line (exit 3): a
typo must never audit nothing and pass the gate."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from recipes_repo import EMBEDDED, MODEL, pr_repo

from provenance.cli.main import cli

TYPOS = [
    (["--variant", "fp9"], "--variant 'fp9': no such variant", "mxfp4"),
    (["--hardware", "h10"], "--hardware 'h10': no such hardware", "did you mean 'h100'"),
    (["--strategy", "single_node_pt"], "--strategy 'single_node_pt'", "'single_node_tp'"),
]


def _run(args: list[str]) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, args)
    return result.exit_code, result.stdout, result.stderr


@pytest.mark.parametrize(("option", "message", "hint"), TYPOS, ids=lambda x: str(x))
def test_a_filter_typo_is_a_usage_error_with_the_nearest_names(
    option: list[str], message: str, hint: str
) -> None:
    code, out, err = _run(["audit", *option, "--strict"])
    assert code == 2, out
    assert message in err and hint in err and "Traceback" not in err
    assert out == ""


def test_the_known_names_still_audit() -> None:
    code, out, _ = _run(["audit", "--variant", "nvfp4", "--hardware", "b200", "--features", "none"])
    assert code == 0 and "combinations" in out


def _add_variant(data: dict[str, Any]) -> None:
    data["variants"]["nvfp4_copy"] = dict(data["variants"]["nvfp4"])


def _keep(data: dict[str, Any]) -> None:
    return None


@pytest.mark.parametrize(("option", "message", "hint"), TYPOS, ids=lambda x: str(x))
def test_a_filter_typo_fails_the_pr_audit_instead_of_passing_it(
    tmp_path: Path, option: list[str], message: str, hint: str
) -> None:
    work, base, head = pr_repo(tmp_path, _keep, _add_variant)
    args = ["audit", "--repo", str(work), "--base", base, "--head", head, *option]
    code, out, err = _run(args)
    assert code == 2, out
    assert message in err and "gate: PASS" not in out


def test_a_variant_only_the_head_has_is_no_typo_in_a_pr_audit(tmp_path: Path) -> None:
    work, base, head = pr_repo(tmp_path, _keep, _add_variant)
    args = ["audit", "--repo", str(work), "--base", base, "--head", head]
    code, out, err = _run([*args, "--variant", "nvfp4_copy", "--hardware", "b200"])
    assert code in (0, 1), err
    assert out.startswith("gate: ")


@pytest.mark.parametrize("section", ["meta.hardware", "kv_offload_support"])
def test_an_unknown_support_level_is_an_input_error_naming_its_line(
    tmp_path: Path, section: str
) -> None:
    root = tmp_path / "root"
    shutil.copytree(EMBEDDED, root)
    path = root / MODEL
    lines = path.read_text(encoding="utf-8").splitlines()
    if section == "meta.hardware":
        number = lines.index("    h200: verified") + 1
        lines[number - 1] = "    h200: verifed"
        key = "meta.hardware.h200"
    else:
        lines += ["kv_offload_support:", "  offloading_cpu: verifed"]
        number = len(lines)
        key = "kv_offload_support.offloading_cpu"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    code, out, err = _run(["audit", MODEL, "--recipes-root", str(root)])
    assert code == 3, out
    assert f"{path}:{number} ({key})" in err and "'verifed'" in err
    assert "Traceback" not in err
