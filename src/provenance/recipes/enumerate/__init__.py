"""The selectable cross-product of a recipe and the builder rules behind it."""
