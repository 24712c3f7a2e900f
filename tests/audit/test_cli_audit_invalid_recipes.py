"""``provenance audit`` of every recipe with an invalid one: located error, the rest audited,
exit 3 at the end (docs/audit.md, "Invalid recipes")."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner
from recipes_support import FIXTURE_ROOT

from provenance.cli.main import cli

VALID = ("Toy/Toy-1", "Toy/Toy-2")
#: the invalid recipe's key carries an escape sequence: it must not reach the output raw
BAD_KEY = "bogus\x1b[31m_key"


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """The toy root with two valid recipes and one whose last line is an unknown key."""
    root = tmp_path / "root"
    shutil.copytree(FIXTURE_ROOT, root)
    models = root / "models" / "Toy"
    original = (models / "Toy-1.yaml").read_text(encoding="utf-8")
    (models / "Toy-2.yaml").write_text(original, encoding="utf-8")
    bad = original.rstrip("\n") + f'\n"{BAD_KEY.replace(chr(27), chr(92) + "e")}": 1\n'
    (models / "Bad.yaml").write_text(bad, encoding="utf-8")
    return root


def _bad_line(root: Path) -> int:
    return len((root / "models" / "Toy" / "Bad.yaml").read_text(encoding="utf-8").splitlines())


def _audit(root: Path, tmp_path: Path, *args: str) -> tuple[int, str, str]:
    for name in ("ledger", "evidence"):
        (tmp_path / name).mkdir(exist_ok=True)
    result = CliRunner().invoke(
        cli,
        [
            "audit",
            "--recipes-root",
            str(root),
            "--ledger",
            str(tmp_path / "ledger"),
            "--evidence",
            str(tmp_path / "evidence"),
            "--features",
            "none",
            *args,
        ],
    )
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    return result.exit_code, result.stdout, result.stderr


def test_json_reports_the_error_and_audits_the_rest(root: Path, tmp_path: Path) -> None:
    code, out, err = _audit(root, tmp_path, "--format", "json")
    assert code == 3
    report = json.loads(out)
    assert tuple(report["recipes"]) == VALID
    assert {v["recipe"] for v in report["verdicts"]} == set(VALID)
    assert report["summary"]["combinations"] > 0
    bad = root / "models" / "Toy" / "Bad.yaml"
    assert report["errors"] == [
        {
            "path": str(bad),
            "line": _bad_line(root),
            "key_path": BAD_KEY,
            "message": "unknown key",
        }
    ]
    assert f"invalid input: {bad}:{_bad_line(root)} (" in err
    assert "unknown key" in err
    assert "\x1b" not in err


def test_text_and_markdown_list_the_error_at_the_top(root: Path, tmp_path: Path) -> None:
    where = f"Bad.yaml:{_bad_line(root)} ("
    for fmt in ("text", "markdown"):
        code, out, _ = _audit(root, tmp_path, "--format", fmt)
        assert code == 3
        assert "\x1b" not in out
        head = out[: out.index("combinations")]
        assert "1 invalid recipe(s), not audited" in head
        assert where in head and "unknown key" in head
        assert "Toy/Toy-1" in out and "Toy/Toy-2" in out


def test_sarif_and_html_carry_the_error(root: Path, tmp_path: Path) -> None:
    code, out, _ = _audit(root, tmp_path, "--format", "sarif")
    assert code == 3
    run = json.loads(out)["runs"][0]
    (error,) = [r for r in run["results"] if r["ruleId"] == "invalid-recipe"]
    assert error["locations"][0]["physicalLocation"]["region"] == {"startLine": _bad_line(root)}
    assert run["tool"]["driver"]["rules"][error["ruleIndex"]]["id"] == "invalid-recipe"
    code, out, _ = _audit(root, tmp_path, "--format", "html")
    assert code == 3
    assert f"Bad.yaml:{_bad_line(root)}" in out


def test_named_invalid_recipe_fails_fast(root: Path, tmp_path: Path) -> None:
    code, out, err = _audit(root, tmp_path, "--format", "json", "Toy/Toy-1", "Toy/Bad")
    assert code == 3
    assert out == ""
    assert f"Bad.yaml:{_bad_line(root)}" in err


def test_invalid_shared_file_still_aborts(root: Path, tmp_path: Path) -> None:
    strategy = next((root / "strategies").glob("*.yaml"))
    strategy.write_text(strategy.read_text(encoding="utf-8") + "bogus_key: 1\n", "utf-8")
    code, out, err = _audit(root, tmp_path, "--format", "json")
    assert code == 3
    assert out == ""
    assert f"{strategy.name}:" in err and "Bad.yaml" not in err


def test_all_valid_root_has_no_errors_field(root: Path, tmp_path: Path) -> None:
    (root / "models" / "Toy" / "Bad.yaml").unlink()
    code, out, err = _audit(root, tmp_path, "--format", "json")
    assert code == 0
    report = json.loads(out)
    assert "errors" not in report
    assert tuple(report["recipes"]) == VALID
    assert "invalid" not in err
