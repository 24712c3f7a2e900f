"""Load a recipes root and its model recipes (schema, YAML 1.2 agreement)."""
