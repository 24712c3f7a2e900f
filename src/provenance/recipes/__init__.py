"""The recipe engine: what the vllm-project/recipes command builder renders, token for token.

* :mod:`~provenance.recipes.schema` — strict pydantic shapes of taxonomy, strategies,
  kv_store and model recipes; :mod:`~provenance.recipes.loader` loads a recipes root
  and recipes (safe YAML, ``file:line (key.path)`` errors, YAML 1.1/1.2 agreement via
  :mod:`~provenance.recipes.yaml12`).
* :mod:`~provenance.recipes.enumerate` — the selectable cross-product (the builder's UI
  rules, predicates in :mod:`~provenance.recipes.rules`).
* :mod:`~provenance.recipes.synthesis` — argv and env per role; ``render_role`` is a
  pure function of a hashable ``RoleKey``, ``Renderer`` memoises it.
* :mod:`~provenance.recipes.records` — the reference oracle's JSON shape and digests;
  :mod:`~provenance.recipes.combos` — the ``provenance combos`` core.
"""
