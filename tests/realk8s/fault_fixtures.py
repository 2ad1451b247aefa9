"""pytest fixtures of the realk8s tier's fault tests (registered by tests/realk8s/fixtures.py).

`fault_proxy`: a FaultProxy (tests/realk8s/faults.py) in front of the session plane, with `fault_proxy.kubeconfig`
(the admin token, the proxy's URL) for the CLI under test; rules are added to `fault_proxy.faults`.
`lone_plane`: a plane of its own for one test (4 GB300 trays in one clique), for tests that stop or kill its
processes by the pids it started; stopped after the test.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.realk8s.binaries import binaries_or_skip
from tests.realk8s.faults import FaultProxy
from tests.realk8s.plane import Plane, PlaneOptions


class ProxiedPlane(FaultProxy):
    """A FaultProxy with the kubeconfig written for it."""

    kubeconfig: Path


@pytest.fixture
def fault_proxy(realk8s: Plane, tmp_path: Path) -> Iterator[ProxiedPlane]:
    """A fault proxy in front of the session plane, for one test."""
    proxy = ProxiedPlane(realk8s.url, realk8s.ca_file, realk8s.serving_pair("fault-proxy"))
    with proxy:
        proxy.kubeconfig = realk8s.kubeconfig(tmp_path / "proxied.kubeconfig", server=proxy.url)
        yield proxy


@pytest.fixture
def lone_plane(tmp_path: Path) -> Iterator[Plane]:
    """A started plane for one test only: 4 GB300 trays in one clique, 1 CPU node."""
    binaries = binaries_or_skip()
    plane = Plane(binaries, PlaneOptions(gb300_nodes=4, cliques=1, cpu_nodes=1, workdir=tmp_path / "plane"))
    (tmp_path / "plane").mkdir()
    with plane:
        plane.admin_kubeconfig = plane.kubeconfig(tmp_path / "admin.kubeconfig")
        yield plane
