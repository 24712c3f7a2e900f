"""provenance suggest."""
