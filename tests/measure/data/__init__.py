"""Recorded vLLM stream transcripts and /metrics texts, and the script that records them."""
