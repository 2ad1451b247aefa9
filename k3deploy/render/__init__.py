"""Render stage: the capacity plan, the vLLM command line and the Kubernetes manifest set."""
