"""The two walks over a recipe's cross-product; both feed a :class:`~provenance.audit.tally.Tally`.

The fourth step of the audit's flow (keys → judge → tally → walks → pipeline):

* :mod:`~provenance.audit.walks.selections` — selection by selection: each rendered
  selection is normalised, keyed and tallied on its own (tests, omni recipes,
  ``provenance explain``);
* :mod:`~provenance.audit.walks.cells` — by shape cell: the fast path, which renders
  and keys whole blocks of selections at a time and is proven to give the same report
  (``tests/audit/test_factored.py``).
"""
