"""Ingest: extract evidence and write it to the store."""
