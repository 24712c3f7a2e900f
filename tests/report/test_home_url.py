"""One home URL, defined once (``provenance.HOME_URL``) and named by every surface."""

from __future__ import annotations

import io
import json
import tomllib
from pathlib import Path

from provenance import HOME_URL
from provenance.audit.verdicts import AuditReport
from provenance.report import sarif

ROOT = Path(__file__).resolve().parents[2]
SURFACES = ("action.yml", ".pre-commit-hooks.yaml", "docs/github.md", "README.md")


def test_no_owner_placeholder_remains_and_every_surface_names_the_home() -> None:
    for name in SURFACES:
        text = (ROOT / name).read_text(encoding="utf-8")
        assert "<owner>" not in text, name
        assert HOME_URL in text, name
    action = (ROOT / "action.yml").read_text(encoding="utf-8")
    owner_repo = HOME_URL.removeprefix("https://github.com/")
    assert f"uses: {owner_repo}@" in action
    hooks = (ROOT / ".pre-commit-hooks.yaml").read_text(encoding="utf-8")
    assert f"repo: {HOME_URL}\n" in hooks


def test_pyproject_homepage_is_the_constant() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert project["urls"]["Homepage"] == HOME_URL


def test_sarif_help_and_tool_uris_are_under_the_home(report: AuditReport) -> None:
    out = io.StringIO()
    sarif.write(report, out)
    driver = json.loads(out.getvalue())["runs"][0]["tool"]["driver"]
    assert driver["informationUri"] == HOME_URL
    assert driver["rules"]
    for rule in driver["rules"]:
        assert rule["helpUri"].startswith(f"{HOME_URL}/blob/main/docs/audit.md#")
