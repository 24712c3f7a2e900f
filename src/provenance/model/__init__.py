"""The vocabulary: flags, evidence records, topology, scope, reasons, ledger files, combinations.

Imports nothing of provenance but :mod:`provenance.errors`."""
