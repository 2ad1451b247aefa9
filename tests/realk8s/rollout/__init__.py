"""Rollout tests on the real plane (mirroring tests/rollout)."""
