"""provenance: prove every flag of an LLM-serving recipe was benchmarked, or say it was not."""

__version__ = "0.1.0"
