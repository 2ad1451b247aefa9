"""Preflight tests on the real plane (mirroring tests/preflight)."""
