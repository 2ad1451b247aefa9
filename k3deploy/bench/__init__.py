"""Bench stage: measure an endpoint on SPEED-Bench-style prompt sets and compare runs with the published figures.

Pure modules: datasets (prompt sets), figures (per-cell figures), compare (speedups), series (chart data).
I/O: runner (streams, /metrics), ab (serves variants on the local target), charts (matplotlib: HTML, PNG).
"""
