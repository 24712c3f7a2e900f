"""Which recipes root a command reads and what its reports say about it.

The rules that choose the default root live with the embedded data
(:mod:`provenance.store.embedded`); this module names the choice (``--recipes-root``, the
checkout around the working directory, the embedded root), reads a checkout's commit
through the git seam (:mod:`provenance.sources.git`) and words the error for a recipe the
embedded root lacks. It sits above the store so that the ledger's loader, whose code is
part of its cache key, never reaches git.
"""

from __future__ import annotations

from pathlib import Path

from provenance.errors import UsageError
from provenance.model.recipes_source import EMBEDDED_RECIPES, RecipesChoice, RecipesSource
from provenance.store.embedded import checkout_around, data_dirs


def default_recipes(cwd: Path | None = None) -> tuple[Path, RecipesChoice]:
    """The recipes root when ``--recipes-root`` is not given, and which rule chose it:
    ``current-checkout`` (rules 1 and 2 of :mod:`provenance.store.embedded`) or ``embedded``
    (3, 4)."""
    here = cwd or Path.cwd()
    found = checkout_around(here)
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
