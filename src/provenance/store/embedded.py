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
    from provenance.model.recipes_source import RecipesChoice, RecipesSource

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


def _default_recipes(here: Path) -> Path | None:
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
        recipes=_default_recipes(here) or root / "recipes",
        ledger=root / "ledger",
        evidence=root / "evidence",
    )


def default_recipes(cwd: Path | None = None) -> tuple[Path, RecipesChoice]:
    """The recipes root when ``--recipes-root`` is not given, and which rule chose it:
    ``current-checkout`` (rules 1 and 2 of the module docstring) or ``embedded`` (3, 4)."""
    here = cwd or Path.cwd()
    found = _default_recipes(here)
    if found is not None:
        return found, "current-checkout"
    return data_dirs(here).recipes, "embedded"


def recipes_source(
    root: Path, how: RecipesChoice, cwd: Path | None = None, commit: str | None = None
) -> RecipesSource:
    """What the reports say about the recipes root ``root``: its path (relative to the
    working directory when under it; ``provenance:recipes`` for the embedded one outside
    it, never where pip put it), how it was chosen and, for a git checkout (``root`` is
    the top level of a work tree), the commit of its ``HEAD`` (``commit`` when the caller
    read the recipes at another commit: a PR audit's ``--repo``)."""
    from provenance import __version__
    from provenance.model.recipes_source import EMBEDDED_RECIPES, RecipesSource

    here = cwd or Path.cwd()
    try:
        shown = str(root.resolve().relative_to(here.resolve())) if root.is_absolute() else str(root)
    except ValueError:
        shown = EMBEDDED_RECIPES if how == "embedded" else str(root)
    if how == "embedded":
        return RecipesSource(path=shown, how=how, embedded_by=__version__)
    if commit is not None:
        return RecipesSource(path=shown, how=how, git_checkout=True, commit=commit)
    checkout = (root / ".git").exists()
    return RecipesSource(
        path=shown,
        how=how,
        git_checkout=checkout,
        commit=head_commit(root) if checkout else None,
    )


def head_commit(checkout: Path) -> str | None:
    """The full SHA of ``HEAD`` in the git work tree ``checkout``, read through the git
    seam (:mod:`provenance.sources.git`); None when git cannot read it (no ``git``
    executable, no commit yet, a damaged repository): the reports then say so."""
    try:
        from provenance.sources.git import open_repo, resolve_commit
    except ImportError:  # gitpython refuses to load without a git executable
        return None
    from provenance.errors import ProvenanceError

    try:
        return str(resolve_commit(open_repo(checkout), "HEAD").hexsha)
    except (ProvenanceError, OSError, ValueError):
        return None


def missing_recipe(root: Path, ref: str) -> UsageError | None:
    """The error for a RECIPE that is neither a file nor in the embedded recipes root
    ``root`` (None when it is one of them, or an absolute path: the loader names that
    missing file itself): it names what was looked for and how to point at a recipes
    checkout, not the embedded root's path (a venv's, for a wheel)."""
    from provenance import __version__
    from provenance.errors import UsageError

    given = Path(ref)
    if given.is_absolute():
        return None
    for candidate in (given, root / ref, root / "models" / ref, root / "models" / f"{ref}.yaml"):
        try:
            if candidate.is_file():
                return None
        except (OSError, ValueError):  # a name the system refuses: not found either
            continue
    embedded = sorted(
        f"{p.parent.name}/{p.stem}" for p in (root / "models").glob("*/*.yaml") if p.is_file()
    )
    return UsageError(
        f"recipe {ref} not found: no such file, and the recipes root embedded in provenance "
        f"{__version__} has only {', '.join(embedded) or 'no recipe'}",
        hint="run inside a vllm-project/recipes checkout, or pass --recipes-root DIR",
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
