"""Unit tests of the Kubernetes target (k3deploy/targets/kubernetes/): its rollout I/O against recorded or in-memory
answers, its status and its views."""
