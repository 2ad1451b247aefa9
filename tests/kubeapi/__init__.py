"""A Kubernetes API server for tests: real HTTP on 127.0.0.1, Kubernetes semantics, simulated controllers."""
