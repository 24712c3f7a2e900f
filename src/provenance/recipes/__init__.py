"""The recipe engine: what the vllm-project/recipes command builder renders, token for token.

* :mod:`~provenance.recipes.load.schema` — strict pydantic shapes of taxonomy, strategies,
  kv_store and model recipes; :mod:`~provenance.recipes.load.loader` loads a recipes root
  and recipes (safe YAML, ``file:line (key.path)`` errors, YAML 1.1/1.2 agreement via
  :mod:`~provenance.recipes.load.yaml12`).
* :mod:`~provenance.recipes.enumerate.selections` — the selectable cross-product (the builder's UI
  rules, predicates in :mod:`~provenance.recipes.enumerate.rules`).
* :mod:`~provenance.recipes.render.synthesis` — argv and env per role; ``render_role`` is a
  pure function of a hashable ``RoleInputs``, ``Renderer`` memoises it.
* :mod:`~provenance.recipes.render.records` — the reference oracle's JSON shape and digests;
  :mod:`~provenance.recipes.combos` — the ``provenance combos`` core.
"""
