"""Kubernetes client tests judged on the real plane (mirroring tests/kube)."""
