"""Placement at fleet scale (preflight/placement.py): 16 NVL72 cliques of 18 trays, some partly used (trays whose
GPUs other pods hold), some cordoned, one out of the node selector's reach; where each group would land, how many
more groups the fleet could take (each clique's leftover trays, whole groups only), and what `plan --cluster -o json`
and preflight's k8s.placement say of it."""

from __future__ import annotations

from k3deploy.preflight.checks_cluster import cluster_checks
from k3deploy.preflight.facts import NodeFacts
from k3deploy.preflight.placement import index_ranges, place
from k3deploy.profile import load_profile
from k3deploy.profile.model import Profile
from k3deploy.render.manifests import rendered_objects
from tests.preflight.test_checks_cluster import facts, gb300

K3 = "kimi-k3-gb300-tp16"
RACKS = 16
TRAYS = 18


def _name(rack: int) -> str:
    return f"rack-{rack:02d}"


def _fleet() -> list[NodeFacts]:
    """16 racks of 18 trays; rack 0: 8 trays taken whole by other pods (10 free); rack 1: 3 trays with 2 of their 4
    GPUs held (15 free); rack 2: 6 trays cordoned (12 free); rack 3: every tray cordoned; rack 4: one tray not Ready
    (17 free); racks 5-15 untouched (18 free each)."""
    nodes = []
    for rack in range(RACKS):
        for tray in range(TRAYS):
            node = gb300(f"r{rack:02d}t{tray:02d}", _name(rack))
            if rack == 0 and tray < 8:
                node = node.model_copy(update={"requested_gpus": 4})
            elif rack == 1 and tray < 3:
                node = node.model_copy(update={"requested_gpus": 2})
            elif (rack == 2 and tray < 6) or rack == 3:
                node = node.model_copy(update={"unschedulable": True})
            elif rack == 4 and tray == 0:
                node = node.model_copy(update={"ready": False})
            nodes.append(node)
    return nodes


#: Whole groups of 4 each clique holds: 10, 15, 12, 0, 17 free trays, then 18 on each of the 11 untouched racks.
CAPACITY = {_name(0): 2, _name(1): 3, _name(2): 3, _name(3): 0, _name(4): 4} | {_name(r): 4 for r in range(5, RACKS)}


def _profile(replicas: int) -> Profile:
    return load_profile(K3, [f"parallel.replicas={replicas}"])


def test_each_group_lands_on_free_trays_of_one_clique_and_the_rest_is_room_for_more() -> None:
    nodes = _fleet()
    result = place(_profile(40), nodes)
    assert result.fits and result.placed == 40
    assert sum(CAPACITY.values()) == 56 and result.more == 56 - 40
    free = {n.name for n in nodes if n.ready and not n.unschedulable and n.free_gpus == 4}
    clique_of = {n.name: n.labels["nvidia.com/gpu.clique"] for n in nodes}
    homes = result.homes()
    assert [i for i, _, _ in homes] == list(range(40))
    taken = [tray for _, _, trays in homes for tray in trays]
    assert len(taken) == len(set(taken)) == 40 * 4 and set(taken) <= free
    assert all({clique_of[t] for t in trays} == {clique} for _, clique, trays in homes)
    # Dealt to the clique with the most free trays left, ties by name: the 11 untouched racks first, then rack 4
    # (17 free), then rack 1 (15), then the untouched racks again (14 each).
    assert [c for _, c, _ in homes[:13]] == [_name(r) for r in range(5, RACKS)] + [_name(4), _name(1)]
    assert {c.clique: len(c.groups) + result.room(c) for c in result.cliques} == CAPACITY
    assert all(len(c.groups) <= CAPACITY[c.clique] for c in result.cliques)
    cordoned = next(c for c in result.cliques if c.clique == _name(3))
    assert cordoned.trays == [] and len(cordoned.excluded) == TRAYS and result.room(cordoned) == 0
    assert all(why.endswith(": cordoned") for why in cordoned.excluded)
    partly = next(c for c in result.cliques if c.clique == _name(1))
    assert len(partly.trays) == 15 and partly.excluded[0] == "r01t00: 2 of 4 GPUs free, needs 4"


def test_a_fleet_asked_for_more_than_it_holds_places_what_fits_and_has_no_room_left() -> None:
    result = place(_profile(64), _fleet())
    assert not result.fits and result.placed == 56 and result.more == 0
    assert {c.clique: len(c.groups) for c in result.cliques} == CAPACITY


def test_the_count_that_fits_does_not_depend_on_how_many_are_asked() -> None:
    nodes = _fleet()
    for replicas in (1, 16, 32, 56, 57):
        result = place(_profile(replicas), nodes)
        assert result.placed + result.more == 56, replicas


def test_plan_json_names_every_groups_clique_and_trays_and_the_room_left() -> None:
    result = place(_profile(40), _fleet())
    doc = result.as_dict()
    assert doc["placed"] == 40 and doc["fits"] is True and doc["more"] == 16
    assert [g["group"] for g in doc["groups"]] == list(range(40))
    assert all(len(g["trays"]) == 4 for g in doc["groups"])
    rooms = {c["clique"]: c["room"] for c in doc["cliques"]}
    assert sum(rooms.values()) == 16 and rooms[_name(3)] == 0
    by_clique = {c["clique"]: c for c in doc["cliques"]}
    assert len(by_clique) == RACKS
    assert by_clique[_name(0)]["free_after"] == 10 - 4 * len(by_clique[_name(0)]["groups"])


def test_preflight_says_how_many_more_groups_fit_and_where_each_lands_in_ranges() -> None:
    profile = _profile(40)
    check = {r.name: r for r in cluster_checks(profile, facts(_fleet()), rendered_objects(profile))}["k8s.placement"]
    assert check.measured == "40 groups in 15 clique(s), room for 16 more"
    # One entry per clique that takes a group, in the order the cliques are listed (most free trays first).
    assert check.detail.startswith(f"groups 0, 13, 28 in clique {_name(5)}; groups 1, 14, 29 in clique {_name(6)};")
    assert check.detail.endswith(f"group 25 in clique {_name(2)}; group 27 in clique {_name(0)}")
    assert f"in clique {_name(3)}" not in check.detail


def test_index_ranges_run_consecutive_indices_together() -> None:
    assert index_ranges([]) == "-"
    assert index_ranges([3]) == "3"
    assert index_ranges([0, 1, 2, 3, 8, 12, 13]) == "0-3, 8, 12-13"
    assert index_ranges([13, 12, 0]) == "0, 12-13"
