"""Fixtures of the preflight --cluster tests on a real plane of their own (tests/realk8s/preflight/cluster.py).

`preflight_plane`: the package's plane, started by the first test that asks for it, stopped after the package.
`cluster`: one test's PreflightCluster on it, its namespace created (with the `hf-token` Secret) unless the test
asks for `bare_cluster`; every change is undone after the test.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.realk8s.plane import Plane
from tests.realk8s.preflight.cluster import PreflightCluster, preflight_plane_started


@pytest.fixture(scope="package")
def preflight_plane(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Plane]:
    """8 GB300 trays in 2 cliques, someone else's pod on gb300-01, the DRA driver's workloads (cluster.py)."""
    with preflight_plane_started(tmp_path_factory.mktemp("preflight-plane")) as plane:
        yield plane


@pytest.fixture
def bare_cluster(preflight_plane: Plane, tmp_path: Path) -> Iterator[PreflightCluster]:
    """A PreflightCluster whose namespace does not exist yet."""
    cluster = PreflightCluster(preflight_plane, tmp_path)
    try:
        yield cluster
    finally:
        cluster.teardown()


@pytest.fixture
def cluster(bare_cluster: PreflightCluster) -> PreflightCluster:
    """A PreflightCluster with its namespace and the `hf-token` Secret (key `token`)."""
    bare_cluster.create_namespace()
    return bare_cluster
