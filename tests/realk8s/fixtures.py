"""pytest fixtures of the realk8s tier (registered as a plugin by tests/conftest.py).

`realk8s`: one real control plane per test session, so one per xdist worker (tests/realk8s/plane.py); tests keep
apart by their own namespaces and node names. Without the binaries the fixture skips, and fails under CI=true.
`real_node`: one real kubelet node joined to that plane, for the tests that run pods for real.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.realk8s.binaries import BinariesMissing, binaries_or_skip
from tests.realk8s.cluster_fixtures import deploy  # noqa: F401 - per-test deployments of the profile
from tests.realk8s.fault_fixtures import fault_proxy, lone_plane  # noqa: F401 - the fault tests' fixtures
from tests.realk8s.plane import Plane, PlaneOptions
from tests.realk8s.realnode import RealNode
from tests.realk8s.standins import STANDIN_IMAGES
from tests.support import crds


@pytest.fixture(scope="session")
def realk8s(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Plane]:
    """A started plane: 12 GB300 nodes in 3 cliques, 2 CPU nodes, the CRDs, storage classes, RuntimeClass nvidia, LWS webhooks.

    `realk8s.admin_kubeconfig` and `realk8s.user_kubeconfig` are written for the CLI under test.
    """
    binaries = binaries_or_skip()
    crds.require()  # without the upstream CRDs: one line naming .ci/fetch-crds, not a start-up timeout
    directory = tmp_path_factory.mktemp("realk8s")
    # Three cliques: room for a blue-green second group or a surge beside two groups and what other tests left.
    plane = Plane(binaries, PlaneOptions(gb300_nodes=12, cliques=3, workdir=directory))
    with plane:
        plane.admin_kubeconfig = plane.kubeconfig(Path(directory) / "admin.kubeconfig")
        plane.user_kubeconfig = plane.kubeconfig(Path(directory) / "user.kubeconfig", "realk8s-user")
        yield plane


@pytest.fixture(scope="module")
def real_node(realk8s: Plane) -> Iterator[RealNode]:
    """One real kubelet node on the session's plane (tests/realk8s/realnode.py) with the stand-in images imported,
    for the tests of one module, then stopped and its Node deleted: a node with allocatable nvidia.com/gpu but no
    GPU Feature Discovery labels FAILs the preflight of the GB300 releases later tests deploy on the same plane.
    Without its binaries the test skips, and fails under CI=true."""
    try:
        node = realk8s.add_real_node(images=STANDIN_IMAGES)
    except BinariesMissing as exc:
        if os.environ.get("CI") == "true":
            pytest.fail(f"realk8s tier under CI=true: {exc}", pytrace=False)
        pytest.skip(str(exc))
    yield node
    node.stop()
