"""What k3deploy's read commands ask the API server as the fleet grows, counted by the server's audit log for the
CLI's own user (tests/realk8s/cost.py): one fleet plane for the module, 2 NVL72 racks (36 trays) and then 4 (72).

- `preflight --cluster` and `plan --cluster` make the very same requests on 72 trays as on 36: the nodes are one
  list, never a read per node.
- `status` grows at most linearly in groups, with the slope asserted (`STATUS_PER_GROUP`: the leaders' logs), and
  reads the trays' Nodes by one list.
- One interval of `watch --groups` is one list of the release's pods and one of the nodes, at 1 group as at 4.
- `plan --cluster` places new groups around the trays the releases hold and the trays cordoned here: each group on
  free trays of one clique, and the room left is each clique's whole groups.
- `up` (first install, no smoke), a rolling template change and `down --purge`, at 1 group and at 4 (the roll and
  `down` of the 4-group release on a plane grown by a rack since the 1-group one's): their structural requests
  (tests/realk8s/run_time.py) grow by exactly one per group for `up` and the roll (the traffic mark on each leader)
  and not at all for `down`, and not with the trays; no get or watch of a node (at most one list); their Lease
  renewals and watch re-opens within what the run's duration allows.

Request counts are deterministic for the read-only commands and for the write commands' structural requests; the
timing figures live in tests/bench/bench_fleet.py.
"""

from __future__ import annotations

import json
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from k3deploy.lws import NAME_LABEL
from tests.realk8s import objects
from tests.realk8s.binaries import binaries_or_skip
from tests.realk8s.cluster_fixtures import NEW_IMAGE, QUICK
from tests.realk8s.cost import Cost
from tests.realk8s.fleet import TRAYS_PER_GROUP, TRAYS_PER_RACK, WATCH, Fleet, fleet_plane, watch_endpoint
from tests.realk8s.plane import Plane
from tests.realk8s.run_time import over_run_time, split

pytestmark = [pytest.mark.realk8s, pytest.mark.timeout(1200)]

#: Requests `status` adds per serving group: one, the leader's log (there is no list of logs); everything else it
#: reads per release (the objects, one list of the pods, one of the nodes, the history).
STATUS_PER_GROUP = 1
#: Structural requests `up` and a roll add per serving group: one, the traffic mark on its leader pod (the API has
#: no patch of many objects).
MARK_PER_GROUP: Counter[tuple[str, str]] = Counter({("patch", "pods"): 1})
CLIQUE_LABEL = "nvidia.com/gpu.clique"


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
    """The requests on Nodes or any of their subresources."""
    return sorted(key for key in cost.requests if key[1].split("/")[0] == "nodes")


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


@pytest.fixture(scope="module")
def installs(fleet_plane_2: Plane, tmp_path_factory: pytest.TempPathFactory) -> dict[int, tuple[Fleet, Cost]]:
    """On the plane grown to 4 racks, a release of 1 group and one of 4, installed (no smoke) and kept for the
    module, each with what its `up` cost."""
    grow(fleet_plane_2, 4)
    installed = {}
    for groups in (1, 4):
        fleet = _fleet(fleet_plane_2, groups, tmp_path_factory.mktemp("release"))
        up = fleet.run("up", *QUICK, "--timeout", "600s")
        assert up.returncode == 0, up.stderr[-3000:]
        installed[groups] = (fleet, up)
    return installed


@pytest.fixture(scope="module")
def releases(installs: dict[int, tuple[Fleet, Cost]]) -> dict[int, Fleet]:
    """The module's two releases (1 group and 4) by their groups."""
    return {groups: fleet for groups, (fleet, _) in installs.items()}


def test_status_grows_at_most_linearly_in_groups(releases: dict[int, Fleet]) -> None:
    costs: dict[int, Cost] = {}
    for groups, fleet in releases.items():
        costs[groups] = fleet.run("status")
        assert costs[groups].returncode == 0, costs[groups].stderr
        assert _reads(costs[groups]) == [("list", "nodes")]
    added = costs[4].requests - costs[1].requests
    assert costs[4].total - costs[1].total <= STATUS_PER_GROUP * (4 - 1), added
    assert set(added) <= {("get", "pods/log")}, added


def _watch(fleet: Fleet, intervals: int) -> Cost:
    with watch_endpoint("watch") as endpoint:
        cost = fleet.run("watch", *WATCH, "--count", str(intervals), *endpoint)
    assert cost.returncode == 0, cost.stderr[-3000:]
    lines = [json.loads(line) for line in cost.stdout.splitlines() if line.strip()]
    assert len(lines) == intervals and all(line["groups_error"] is None for line in lines), cost.stdout[-2000:]
    assert {len(line["groups"]) for line in lines} == {fleet.replicas}
    return cost


def test_one_watch_interval_is_one_list_of_pods_and_one_of_nodes_at_any_size(releases: dict[int, Fleet]) -> None:
    for groups, fleet in releases.items():
        one, three = _watch(fleet, 1), _watch(fleet, 3)
        # What the command costs to start (discovery, the profile) is the same for 1 interval as for 3.
        assert not one.requests - three.requests, (groups, one.requests, three.requests)
        two_intervals = three.requests - one.requests
        assert two_intervals == Counter({("list", "pods"): 2, ("list", "nodes"): 2}), (groups, two_intervals)


def _node_names(plane: Plane) -> dict[str, str]:
    """Each tray's clique."""
    return {
        n["metadata"]["name"]: n["metadata"]["labels"][CLIQUE_LABEL]
        for n in plane.api.get("/api/v1/nodes")["items"]
        if n["metadata"]["labels"].get(CLIQUE_LABEL)
    }


def test_plan_places_new_groups_around_held_and_cordoned_trays(
    fleet_plane_2: Plane, releases: dict[int, Fleet], tmp_path: Path
) -> None:
    trays = _node_names(fleet_plane_2)
    pods = [
        p
        for fleet in releases.values()
        for p in fleet_plane_2.api.get(f"/api/v1/namespaces/{fleet.namespace}/pods")["items"]
    ]
    # The serving pods hold their trays' GPUs (the releases' other pods, such as the weight staging's, hold none).
    serving = [p for p in pods if NAME_LABEL in (p["metadata"].get("labels") or {})]
    held = {p["spec"]["nodeName"] for p in serving if p["spec"].get("nodeName") in trays}
    assert len(held) == 5 * TRAYS_PER_GROUP, sorted(held)
    # Three free trays of the clique the releases hold most of, cordoned for this test.
    busiest = max(set(trays.values()), key=lambda c: sum(trays[t] == c for t in held))
    cordoned = sorted(t for t, c in trays.items() if c == busiest and t not in held)[:3]
    free = {t for t in trays if t not in held and t not in cordoned}
    whole = {c: sum(trays[t] == c for t in free) // TRAYS_PER_GROUP for c in set(trays.values())}
    for tray in cordoned:
        _cordon(fleet_plane_2, tray, True)
    try:
        plan = _fleet(fleet_plane_2, 8, tmp_path).run("plan", "--cluster", "-o", "json")
    finally:
        for tray in cordoned:
            _cordon(fleet_plane_2, tray, False)
    assert plan.returncode == 0, plan.stderr
    placement = json.loads(plan.stdout)["placement"]
    assert (placement["placed"], placement["more"]) == (8, sum(whole.values()) - 8)
    assert {c["clique"]: len(c["groups"]) + c["room"] for c in placement["cliques"]} == whole
    for group in placement["groups"]:
        assert set(group["trays"]) <= free and {trays[t] for t in group["trays"]} == {group["clique"]}, group
    excluded = dict(e.split(": ", 1) for c in placement["cliques"] for e in c["excluded"])
    assert all(excluded[t] == "cordoned" for t in cordoned)
    assert all(excluded[t] == "0 of 4 GPUs free, needs 4" for t in held)


def _cordon(plane: Plane, node: str, on: bool) -> None:
    response = plane.api.request(
        "PATCH",
        f"/api/v1/nodes/{node}",
        content=json.dumps({"spec": {"unschedulable": True if on else None}}),
        headers={"Content-Type": "application/merge-patch+json"},
    )
    assert response.status_code == 200, response.text


# The write commands, last in the module (`down` removes the releases): their structural requests (run_time.py) at 1
# group and at 4, and their run-time ones against how long each ran.


def _write_bounds(step: str, costs: dict[int, Cost], per_group: Counter[tuple[str, str]]) -> None:
    structural = {}
    for groups, cost in costs.items():
        assert cost.returncode == 0, (step, groups, cost.stderr[-3000:])
        # The nodes: at most one list, never a get or watch of one.
        assert _reads(cost) in ([], [("list", "nodes")]) and cost.of("list", "nodes") <= 1, (step, _reads(cost))
        # Nor a read per tray of anything else: no request is made as often as there are trays (72).
        assert max(cost.requests.values()) < 4 * TRAYS_PER_RACK, (step, cost.requests.most_common(3))
        structural[groups] = split(cost.requests)[0]
        assert not over_run_time(cost.requests, cost.wall_s), (step, groups, over_run_time(cost.requests, cost.wall_s))
    added = structural[4] - structural[1]
    assert added == Counter({key: n * (4 - 1) for key, n in per_group.items()}), (step, added)
    # What 1 group makes and 4 do not: the in-place question `up` asks of a one-group release reads its
    # LeaderWorkerSet (targets/kubernetes/bluegreen.py).
    assert structural[1] - structural[4] <= Counter({("get", "leaderworkersets"): 1}), (
        step,
        structural[1] - structural[4],
    )


def test_up_makes_one_structural_request_more_per_group(installs: dict[int, tuple[Fleet, Cost]]) -> None:
    _write_bounds("up", {groups: cost for groups, (_, cost) in installs.items()}, MARK_PER_GROUP)


def _one_then_grown_then_four(installs: dict[int, tuple[Fleet, Cost]], racks: int, *args: str) -> dict[int, Cost]:
    """`args` run for the 1-group release, then, on the plane grown to `racks` racks, for the 4-group one: a per-node
    request would show as 18 more of it per rack."""
    one = installs[1][0].run(*args)
    grow(installs[1][0].plane, racks)
    return {1: one, 4: installs[4][0].run(*args)}


def test_a_roll_makes_one_structural_request_more_per_group_and_none_per_tray(
    installs: dict[int, tuple[Fleet, Cost]],
) -> None:
    # --yes: the one-group release's roll replaces its only group in place, which `up` asks before.
    costs = _one_then_grown_then_four(installs, 5, "up", *QUICK, *NEW_IMAGE, "--yes", "--timeout", "600s")
    _write_bounds("roll (72 trays, then 90)", costs, MARK_PER_GROUP)


def test_down_makes_the_same_structural_requests_at_any_size(installs: dict[int, tuple[Fleet, Cost]]) -> None:
    costs = _one_then_grown_then_four(installs, 6, "down", "--yes", "--purge", "--timeout", "300s")
    _write_bounds("down (90 trays, then 108)", costs, Counter())
