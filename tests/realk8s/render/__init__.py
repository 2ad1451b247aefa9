"""Render tests judged on the real plane (mirroring tests/render)."""
