"""Benchmarks: each prints its figures as a table and as JSON (`python -m bench NAME [--json]`)."""
