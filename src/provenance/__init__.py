"""provenance: prove every flag of an LLM-serving recipe was benchmarked, or say it was not."""

__version__ = "0.1.0"

#: The project's home, the one URL every surface names (README, the Action, the
#: pre-commit hook, SARIF ``helpUri``; ``[project.urls] Homepage`` in pyproject.toml).
HOME_URL = "https://github.com/provenance-recipes/provenance"
