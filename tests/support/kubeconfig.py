"""A kubeconfig file for a test: one cluster, one token user, one context, pointing at any URL.

The unit tests that use it point the CLI at something that is not a Kubernetes API server (a closed port, a login
page, a socket that never answers); tests that talk to a real server use the plane's own kubeconfig
(tests/realk8s/plane.py `Plane.kubeconfig`).
"""

from __future__ import annotations

from pathlib import Path

import yaml

#: The kubeconfig's user name (its token is never checked by the fakes these kubeconfigs point at).
USER = "test-user"


def write_kubeconfig(path: Path, server: str, namespace: str = "default", context: str = "test") -> Path:
    """Write a kubeconfig whose current context points at `server` (token auth, the given namespace) to `path`."""
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "preferences": {},
        "current-context": context,
        "clusters": [{"name": "test-cluster", "cluster": {"server": server}}],
        "users": [{"name": USER, "user": {"token": "test-token"}}],
        "contexts": [{"name": context, "context": {"cluster": "test-cluster", "user": USER, "namespace": namespace}}],
    }
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path
