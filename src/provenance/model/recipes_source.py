"""Which recipes root a report read, and how it was chosen (docs/audit.md, "Defaults")."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

#: How the recipes root was chosen: the ``--recipes-root`` option, the recipes checkout
#: at or around the current directory, the one provenance embeds, or (a PR audit) the
#: ``--repo`` repository read at its base and head commits.
RecipesChoice = Literal["--recipes-root", "current-checkout", "embedded", "--repo"]

#: The path a report gives the embedded recipes root when it is not under the current
#: directory (where pip put it says nothing about it).
EMBEDDED_RECIPES = "provenance:recipes"


class RecipesSource(BaseModel):
    """The recipes root a report read: where, how it was chosen, and its git commit."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    #: the directory as shown to the user (relative to the working directory when under
    #: it); ``provenance:recipes`` for the embedded one outside the working directory
    path: str
    how: RecipesChoice
    #: the provenance version whose embedded recipes root this is (with ``embedded``)
    embedded_by: str = ""
    #: is the directory the top level of a git work tree (its ``.git`` is there)?
    git_checkout: bool = False
    #: the full SHA of the checkout's ``HEAD`` (of the PR's head with ``--repo``); None
    #: when it is not a git checkout or git could not read it
    commit: str | None = None

    def describe(self) -> str:
        """One line in the style of the ledger's, e.g. ``recipes ../recipes
        (--recipes-root, git 8959cf6f2d1a)`` or ``recipes embedded (provenance 0.1.0)``."""
        if self.how == "embedded":
            return f"recipes embedded (provenance {self.embedded_by})"
        if self.commit is not None:
            git = f"git {self.commit[:12]}"
        elif self.git_checkout:
            git = "git commit unreadable"
        else:
            git = "not a git checkout"
        how: str = self.how
        if self.how == "current-checkout":
            where = "at" if self.path == "." else "around"
            how = f"checkout {where} the current directory"
        return f"recipes {self.path} ({how}, {git})"
