"""What k3deploy's read commands ask the API server as the fleet grows, counted by the server's audit log for the
CLI's own user (tests/realk8s/cost.py): one fleet plane for the module, 2 NVL72 racks (36 trays) and then 4 (72).

- `preflight --cluster` and `plan --cluster` make the very same requests on 72 trays as on 36: the nodes are one
  list, never a read per node.
- `status` grows at most linearly in groups, with the slope asserted (`STATUS_PER_GROUP`: the leaders' logs), and
  reads the trays' Nodes by one list.

Request counts are deterministic for these read-only commands; the timing figures live in tests/bench/bench_fleet.py.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.realk8s import objects
from tests.realk8s.binaries import binaries_or_skip
from tests.realk8s.cluster_fixtures import QUICK
from tests.realk8s.cost import Cost
from tests.realk8s.fleet import TRAYS_PER_RACK, Fleet, fleet_plane
from tests.realk8s.plane import Plane

pytestmark = [pytest.mark.realk8s, pytest.mark.timeout(1200)]

#: Requests `status` adds per serving group: one, the leader's log (there is no list of logs); everything else it
#: reads per release (the objects, one list of the pods, one of the nodes, the history).
STATUS_PER_GROUP = 1


@pytest.fixture(scope="module")
def fleet_plane_2(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Plane]:
    """A fleet plane of 2 racks (tests grow it to 4 with `grow`), stopped after the module."""
    binaries = binaries_or_skip()
    with fleet_plane(binaries, 2, tmp_path_factory.mktemp("fleet") / "plane") as plane:
        yield plane


def grow(plane: Plane, racks: int) -> None:
    """Add the racks past the plane's current ones up to `racks` (each its own clique), once."""
    have = len([n for n in plane.api.get("/api/v1/nodes")["items"] if n["metadata"]["name"].startswith("gb300-r")])
    version = plane.binaries.versions["K8S_VERSION"]
    plane.add_nodes(objects.nvl72_racks(racks, TRAYS_PER_RACK, version)[have:])


def _fleet(plane: Plane, replicas: int, directory: Path) -> Fleet:
    return Fleet(plane, f"fleet-{uuid.uuid4().hex[:6]}", replicas, directory)


def _reads(cost: Cost) -> list[tuple[str, str]]:
    return sorted(key for key in cost.requests if key[1] == "nodes")


def test_preflight_and_plan_ask_the_same_of_72_trays_as_of_36(fleet_plane_2: Plane, tmp_path: Path) -> None:
    fleet = _fleet(fleet_plane_2, 2, tmp_path)
    small = {step: fleet.run(step, "--cluster") for step in ("preflight", "plan")}
    grow(fleet_plane_2, 4)
    large = {step: fleet.run(step, "--cluster") for step in ("preflight", "plan")}
    for step in ("preflight", "plan"):
        assert small[step].returncode in (0, 1), small[step].stderr
        assert large[step].returncode in (0, 1), large[step].stderr
        # The nodes: one list, no get of any node.
        assert _reads(small[step]) == [("list", "nodes")]
        assert small[step].of("list", "nodes") == 1
        assert large[step].requests == small[step].requests, (step, small[step].requests, large[step].requests)


def test_status_grows_at_most_linearly_in_groups(fleet_plane_2: Plane, tmp_path: Path) -> None:
    grow(fleet_plane_2, 4)
    costs: dict[int, Cost] = {}
    for groups in (1, 4):
        fleet = _fleet(fleet_plane_2, groups, tmp_path)
        up = fleet.run("up", *QUICK, "--timeout", "600s")
        assert up.returncode == 0, up.stderr[-3000:]
        costs[groups] = fleet.run("status")
        assert costs[groups].returncode == 0, costs[groups].stderr
        assert _reads(costs[groups]) == [("list", "nodes")]
    added = costs[4].requests - costs[1].requests
    assert costs[4].total - costs[1].total <= STATUS_PER_GROUP * (4 - 1), added
    assert set(added) <= {("get", "pods/log")}, added
