"""Tests of k3deploy.targets.local: the rehearsal model, the managed vLLM process and the local target."""
