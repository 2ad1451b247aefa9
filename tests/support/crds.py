"""Where the upstream CustomResourceDefinitions of the kinds k3deploy renders are, for tests that hold rendered
objects to their published schemas (LeaderWorkerSet, ComputeDomain, ServiceMonitor, PrometheusRule, InferencePool).

The files are the projects' own (`../shared/crds` beside the checkout, or the folder K3DEPLOY_TEST_CRDS names); a
test that needs them calls `require()`, which fails under CI=true and skips elsewhere.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

#: Upstream CRD file of each kind, as the projects publish them.
FILES = {
    "LeaderWorkerSet": "leaderworkerset.x-k8s.io_leaderworkersets.yaml",
    "ComputeDomain": "resource.nvidia.com_computedomains.yaml",
    "ServiceMonitor": "monitoring.coreos.com_servicemonitors.yaml",
    "PrometheusRule": "monitoring.coreos.com_prometheusrules.yaml",
    "InferencePool": "inference.networking.k8s.io_inferencepools.yaml",
}


def upstream_dir() -> Path:
    """Where the upstream CRDs are: $K3DEPLOY_TEST_CRDS, else `shared/crds` beside the checkout."""
    override = os.environ.get("K3DEPLOY_TEST_CRDS")
    return Path(override) if override else Path(__file__).resolve().parents[2].parent / "shared" / "crds"


def require() -> Path:
    """The upstream CRD folder for a test that needs it: fail under CI=true when missing, else skip."""
    found = upstream_dir()
    if not all((found / name).is_file() for name in FILES.values()):
        message = f"the upstream CRDs are not in {found} (set K3DEPLOY_TEST_CRDS or put them beside the checkout)"
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    return found
