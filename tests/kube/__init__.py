"""Tests of k3deploy.kube (connection, retries, raw-dict API)."""
