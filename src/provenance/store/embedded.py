"""Where the embedded data lives: the recipes root, ledger and evidence shipped with provenance.

The data are the top-level ``recipes/``, ``ledger/`` and ``evidence/`` directories of the
provenance repository. A wheel carries them as package data under ``provenance/data/``
(``pyproject.toml`` maps them there at build time; no copy is committed), read through
:mod:`importlib.resources`. A run from the source tree or an editable install reads them
beside the package's source instead.

Recipes root, when ``--recipes-root`` is not given, the first of:

1. the current directory, when it holds ``taxonomy.yaml`` (a vllm-project/recipes checkout);
2. the top level of the git work tree around the current directory, when it holds
   ``taxonomy.yaml`` (a run from ``models/`` of a recipes checkout);
3. ``./recipes`` when the current directory is a provenance source tree (``recipes/`` with
   ``taxonomy.yaml`` and ``ledger/``: the README's quick start);
4. the recipes root packaged with provenance, else the one beside its source.

Ledger and evidence, when ``--ledger``/``--evidence`` are not given: ``./ledger`` and
``./evidence`` in a provenance source tree, else the packaged ones, else those beside the
source. A recipes checkout has no ledger of its own: the packaged one is used there.
"""

from __future__ import annotations

from functools import cache
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from provenance.errors import UsageError

#: Where the wheel puts the data, inside the ``provenance`` package.
PACKAGE_DATA = "data"
TAXONOMY = "taxonomy.yaml"


class DataDirs(NamedTuple):
    recipes: Path
    ledger: Path
    evidence: Path


def _has_data(root: Path) -> bool:
    return (root / "recipes" / TAXONOMY).is_file() and (root / "ledger").is_dir()


@cache
def packaged_root() -> Path | None:
    """``provenance/data`` of an installed wheel (None in a source tree or editable install,
    or when the package is not on a file system)."""
    try:
        candidate = resources.files("provenance").joinpath(PACKAGE_DATA)
    except (ModuleNotFoundError, TypeError):  # pragma: no cover - the package is importable
        return None
    if not isinstance(candidate, Path):  # a zip import: the data must be a directory tree
        return None
    return candidate if _has_data(candidate) else None


@cache
def _source_root() -> Path | None:
    # src/provenance/store/embedded.py -> the project root is three levels above it.
    candidate = Path(__file__).resolve().parents[3]
    return candidate if _has_data(candidate) else None


def git_toplevel(start: Path) -> Path | None:
    """The top level of the git work tree holding ``start`` (a ``.git`` directory, or the
    ``.git`` file of a linked worktree or submodule), or None outside any."""
    here = start.resolve()
    for folder in (here, *here.parents):
        if (folder / ".git").exists():
            return folder
    return None


def checkout_around(here: Path) -> Path | None:
    """A recipes checkout at or around ``here`` (rules 1 and 2 of the module docstring)."""
    if (here / TAXONOMY).is_file():
        return here
    top = git_toplevel(here)
    if top is not None and (top / TAXONOMY).is_file():
        return top
    return None


def data_dirs(cwd: Path | None = None) -> DataDirs:
    """The default recipes root, ledger and evidence (see the module docstring)."""
    here = cwd or Path.cwd()
    root = here if _has_data(here) else (packaged_root() or _source_root() or here)
    return DataDirs(
        recipes=checkout_around(here) or root / "recipes",
        ledger=root / "ledger",
        evidence=root / "evidence",
    )


def foreign_evidence(
    ledger: Path, evidence: Path, record: str, holds_records: bool
) -> UsageError | None:
    """The error for ledger ``ledger`` citing ``record``, which the store ``evidence``
    lacks, when the store is not the ledger's own: it holds no record at all, or it is the
    default (embedded) store while the ledger is another (``--ledger`` given without
    ``--evidence``). It names the ledger's evidence directory (``evidence`` beside it,
    where ``ingest`` writes it): missing, or the one to pass. None otherwise (a dangling
    record of the ledger's own store: an integrity failure)."""
    from provenance.errors import UsageError
    from provenance.store.paths import default_dirs

    defaults = default_dirs()
    default_store = evidence.resolve() == defaults.evidence.resolve()
    if holds_records and not (default_store and ledger.resolve() != defaults.ledger.resolve()):
        return None
    own = ledger.parent / "evidence"
    cites = f"ledger {ledger} cites evidence record {record}"
    hint = "pass --evidence DIR, the evidence store the ledger was ingested with"
    if own.is_dir() and own.resolve() != evidence.resolve():
        hint = f"pass --evidence {own}"
    if not holds_records:
        return UsageError(
            f"evidence directory {evidence} holds no evidence record: {cites}", hint=hint
        )
    if own.is_dir():
        return UsageError(
            f"{cites}, which the default evidence store {evidence} lacks: it is not the "
            "ledger's evidence store",
            hint=hint,
        )
    return UsageError(
        f"evidence directory {own} is missing: {cites}, which the default evidence store "
        f"{evidence} lacks",
        hint=hint,
    )


def is_packaged(path: Path) -> bool:
    """Is ``path`` the packaged copy of a data directory (or inside it)?"""
    packaged = packaged_root()
    if packaged is None:
        return False
    try:
        path.resolve().relative_to(packaged.resolve())
    except ValueError:
        return False
    return True
