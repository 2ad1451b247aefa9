"""Where the upstream CustomResourceDefinitions of the kinds k3deploy renders are, for tests that hold rendered
objects to their published schemas (LeaderWorkerSet, ComputeDomain, ServiceMonitor, PrometheusRule, InferencePool)
and for the realk8s plane, which serves them.

The files are the projects' own, fetched from the Go modules of pinned versions by `.ci/fetch-crds` into a cache
outside the checkout (or the folder K3DEPLOY_TEST_CRDS names): nothing beside the checkout is read. A test that
needs them calls `require()`, which fails with one line naming the command that fetches them.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
FETCH_SCRIPT = REPO_ROOT / ".ci" / "fetch-crds"

#: Upstream CRD file of each kind, as the projects publish them.
FILES = {
    "LeaderWorkerSet": "leaderworkerset.x-k8s.io_leaderworkersets.yaml",
    "ComputeDomain": "resource.nvidia.com_computedomains.yaml",
    "ServiceMonitor": "monitoring.coreos.com_servicemonitors.yaml",
    "PrometheusRule": "monitoring.coreos.com_prometheusrules.yaml",
    "InferencePool": "inference.networking.k8s.io_inferencepools.yaml",
}


class CrdsMissing(RuntimeError):
    """The upstream CRDs are not fetched (run .ci/fetch-crds)."""


def upstream_dir() -> Path:
    """Where the upstream CRDs are: $K3DEPLOY_TEST_CRDS, else the folder `.ci/fetch-crds` fills for this checkout's
    script (an empty path when the script cannot be asked: `find()` then names the command)."""
    override = os.environ.get("K3DEPLOY_TEST_CRDS")
    if override:
        return Path(override)
    try:
        done = subprocess.run(
            ["bash", str(FETCH_SCRIPT), "--print-dir"], capture_output=True, text=True, timeout=60, check=True
        )
    except (OSError, subprocess.SubprocessError):
        return Path()
    return Path(done.stdout.strip())


def find() -> Path:
    """The folder holding every upstream CRD file, or CrdsMissing naming what is missing and the command."""
    found = upstream_dir()
    missing = [name for name in FILES.values() if not (found / name).is_file()]
    if missing:
        raise CrdsMissing(
            f"the upstream CRDs are not in {found} (missing: {', '.join(missing)}); run: bash .ci/fetch-crds"
        )
    return found


def require() -> Path:
    """The upstream CRD folder for a test that needs it; without it the test fails with one line (no traceback)."""
    try:
        return find()
    except CrdsMissing as exc:
        pytest.fail(str(exc), pytrace=False)
