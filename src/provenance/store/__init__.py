"""The store: ledger, evidence store, atomic writes, the writer lock, verify, local caches."""
