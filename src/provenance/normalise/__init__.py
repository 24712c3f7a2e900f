"""Normalise every spelling of a flag to its canonical form, and class it (the policy)."""
