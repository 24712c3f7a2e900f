"""``python -I -m provenance.cli.action_args``: the Action's extra audit arguments, each
followed by a NUL byte on stdout (read back with ``mapfile -d ''``), from the step's
environment (see :mod:`provenance.github.action`: relative paths made absolute against
``$REPO``, a ``sarif-file`` through a symbolic link refused). Exit 2 with a diagnostic
on bad input."""

from __future__ import annotations

import os
import sys

from provenance.cli.runner import run


def main() -> None:
    def action() -> int:
        from provenance.github.action import action_arguments

        sys.stdout.write("".join(f"{arg}\0" for arg in action_arguments(os.environ)))
        return 0

    run(action)


if __name__ == "__main__":
    main()
