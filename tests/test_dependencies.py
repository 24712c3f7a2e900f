"""The declared runtime dependencies are exactly the distributions ``src/`` imports.

A dependency that nothing imports is dead weight for every ``pip install``; an import
that no dependency declares works only while some other package happens to pull it
in. Imports are read from the source (every ``import`` and ``from … import`` of
``src/provenance``, lazy ones included), mapped to the installed distributions that
provide them, and compared with ``[project].dependencies``.
"""

from __future__ import annotations

import ast
import importlib.metadata
import re
import sys
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SRC = REPO / "src" / "provenance"

#: Distributions whose internals the code relies on: each must carry an upper bound.
INTERNALS = {
    "gitpython": "evidence/inferencex/snapshot.py reads trees through git.objects.fun",
    "pydantic": "model/combination.py writes pydantic's private slots",
    "pyyaml": "safe_yaml.py subclasses PyYAML's Composer over yaml._yaml.CParser",
}


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _requirements() -> dict[str, str]:
    """Declared runtime dependency (canonical name) → its requirement text."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    found: dict[str, str] = {}
    for requirement in project["dependencies"]:
        name = re.match(r"[A-Za-z0-9._-]+", requirement)
        assert name is not None, requirement
        found[_canonical(name.group())] = requirement
    return found


def _imported_modules() -> set[str]:
    """Top-level names of every absolute import in src/provenance, outside the stdlib."""
    names: set[str] = set()
    for path in SRC.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names.update(alias.name.split(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names.add(node.module.split(".")[0])
    return {name for name in names if name not in sys.stdlib_module_names} - {"provenance"}


def test_declared_dependencies_are_exactly_what_src_imports() -> None:
    providers = importlib.metadata.packages_distributions()
    imported = _imported_modules()
    unprovided = sorted(name for name in imported if name not in providers)
    assert not unprovided, f"imported by src/ but no installed distribution provides: {unprovided}"
    needed = {_canonical(dist) for name in imported for dist in providers[name]}
    declared = set(_requirements())
    assert not needed - declared, f"imported by src/ but not declared: {sorted(needed - declared)}"
    assert not declared - needed, f"declared but never imported: {sorted(declared - needed)}"


def test_libraries_whose_internals_are_used_have_an_upper_bound() -> None:
    requirements = _requirements()
    for name, why in INTERNALS.items():
        assert name in requirements, name
        assert "<" in requirements[name], f"{requirements[name]} needs an upper bound: {why}"
