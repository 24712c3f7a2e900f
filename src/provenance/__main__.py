"""``python -m provenance``: the same entry as the ``provenance`` console script."""

from provenance.cli.main import main

if __name__ == "__main__":
    main()
