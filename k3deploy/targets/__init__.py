"""Where a deployment runs: a Kubernetes cluster (LeaderWorkerSet) or a vLLM process on this host."""
