"""Live states recorded from the real control plane (tests/realk8s) and their replay: `record.py` writes them,
`replay.py` answers k3deploy's reads from them."""
