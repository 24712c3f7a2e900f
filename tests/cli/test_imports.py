"""What a command imports (issue 16): the audit loads only what it runs.

Start-up is part of every command's time (about a fifth of the MiniMax-M3 audit), so
the CLI loads a subcommand's module only when it is invoked (``cli.main.LazyGroup``),
a report format's module only when it is written (``report.formats``), and the
libraries of other commands (git, GitHub, networkx, rich, ruamel.yaml, tree-sitter)
inside the functions that use them. These tests prove it by what lands in
``sys.modules`` of a fresh interpreter, not by timing.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]

#: Installed distributions the audit command must not import (other commands use them).
OTHER_COMMANDS_LIBRARIES = (
    "git",
    "gitdb",
    "github",
    "networkx",
    "requests",
    "rich",
    "ruamel",
    "tree_sitter",
    "tree_sitter_bash",
    "urllib3",
)

#: The only provenance modules of these packages that ``audit --format json`` may load.
AUDIT_JSON_ALLOWED = {
    "provenance.cli": {
        "provenance.cli.main",
        "provenance.cli.audit",
        "provenance.cli.options",
        "provenance.cli.progress",
        "provenance.cli.runner",
    },
    "provenance.report": {"provenance.report.formats", "provenance.report.json_report"},
}

#: provenance packages no audit of a recipes directory needs: PR review, ingest,
#: GitHub, the output schemas, git and GitHub sources, launcher evaluation.
AUDIT_UNUSED_PACKAGES = (
    "provenance.evidence",
    "provenance.github",
    "provenance.ingest",
    "provenance.review",
    "provenance.schemas",
    "provenance.sources",
)

_AUDIT_SLICE = ("audit", "MiniMaxAI/MiniMax-M3", "--variant", "nvfp4", "--hardware", "b300")

_RUN_AND_LIST = """
import json, sys
argv = json.loads(sys.argv[1])
if argv:
    from provenance.cli.main import cli
    try:
        cli.main(args=argv, prog_name="provenance")
    except SystemExit as exc:
        code = exc.code
else:
    import provenance.cli.main
    code = 0
unbuilt = []
if "pydantic" in sys.modules:  # not imported here: loading the CLI alone must not
    base = sys.modules["pydantic"].BaseModel
    unbuilt = sorted(
        f"{cls.__module__}.{cls.__qualname__}"
        for module in list(sys.modules.values())
        if getattr(module, "__name__", "").startswith("provenance.")
        for cls in vars(module).values()
        if isinstance(cls, type) and issubclass(cls, base) and cls.__module__ == module.__name__
        and not cls.__pydantic_complete__
    )
print(json.dumps({"code": code, "modules": sorted(sys.modules), "unbuilt": unbuilt}))
"""


def _run(*argv: str) -> dict[str, list[str]]:
    """What a fresh interpreter holds after running ``provenance ARGV`` in process (after
    only importing the CLI when ``argv`` is empty): ``modules``, and ``unbuilt``, our
    pydantic models whose validator was never built."""
    done = subprocess.run(
        [sys.executable, "-c", _RUN_AND_LIST, json.dumps(argv)],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.splitlines()[-1])
    assert result["code"] in (0, None), done.stderr
    return {"modules": result["modules"], "unbuilt": result["unbuilt"]}


def _modules_after(*argv: str) -> set[str]:
    return set(_run(*argv)["modules"])


def _package_of(name: str) -> str:
    return name.split(".")[0]


@pytest.mark.parametrize("library", OTHER_COMMANDS_LIBRARIES)
def test_the_guarded_libraries_are_installed(library: str) -> None:
    # otherwise their absence from sys.modules below would prove nothing
    assert importlib.util.find_spec(library) is not None


def test_loading_the_cli_imports_no_command() -> None:
    modules = _modules_after()
    ours = {m for m in modules if _package_of(m) == "provenance"}
    assert ours == {"provenance", "provenance.cli", "provenance.cli.main"}
    assert not {"pydantic", "yaml", *OTHER_COMMANDS_LIBRARIES} & {_package_of(m) for m in modules}


def test_the_json_audit_imports_only_its_own_path() -> None:
    modules = _modules_after(*_AUDIT_SLICE, "--format", "json", "--output", os.devnull)
    assert "provenance.report.json_report" in modules  # the audit ran to its output
    assert not set(OTHER_COMMANDS_LIBRARIES) & {_package_of(m) for m in modules}
    for package, allowed in AUDIT_JSON_ALLOWED.items():
        loaded = {m for m in modules if m.startswith(package + ".")}
        assert loaded <= allowed, sorted(loaded - allowed)
    unused = sorted(
        m for m in modules for p in AUDIT_UNUSED_PACKAGES if m == p or m.startswith(p + ".")
    )
    assert unused == []


def test_the_audit_does_not_build_the_combos_model() -> None:
    # ``defer_build``: the audit imports its module for the selection types, never builds one
    result = _run(*_AUDIT_SLICE, "--format", "json", "--output", os.devnull)
    assert "provenance.model.combination.Combination" in result["unbuilt"]
    assert "provenance.audit.verdicts.AuditReport" not in result["unbuilt"]  # the control


def test_the_text_audit_imports_its_writer_and_rich_alone() -> None:
    # the control: a format that needs a library does load it, and only that one
    modules = _modules_after(*_AUDIT_SLICE, "--format", "text", "--output", os.devnull)
    assert {"provenance.report.text", "rich"} <= modules
    assert "provenance.report.json_report" not in modules
    others = set(OTHER_COMMANDS_LIBRARIES) - {"rich"}
    assert not others & {_package_of(m) for m in modules}
