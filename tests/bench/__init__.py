"""Benchmark scripts: they print ratios and figures; nothing here is a test with a timed assert."""
