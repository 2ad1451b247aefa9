"""Tests of k3deploy.rollout, the Kubernetes target, the up/down/status pipeline and their commands."""
