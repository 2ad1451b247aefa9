"""The DRA driver stand-in's pure parts (unit tier): which nodes hold a domain's channels, and the domain status the
IMEX daemons would report (cdstatus.go getNextAvailableIndex, computedomain.go calculateGlobalStatus)."""

from __future__ import annotations

from typing import Any

from tests.realk8s.dra import CD_DRIVER, GPU_DRIVER, channel_nodes, domain_status


def _node(name: str, clique: str) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "labels": {"nvidia.com/gpu.clique": clique}},
        "status": {"addresses": [{"type": "InternalIP", "address": "127.0.0.1"}]},
    }


def _claim(domain: str, node: str, driver: str = CD_DRIVER) -> dict[str, Any]:
    config = {"opaque": {"driver": driver, "parameters": {"domainID": domain}}}
    result = {"driver": driver, "pool": node, "device": "channel-0"}
    return {"status": {"allocation": {"devices": {"config": [config], "results": [result]}}}}


def test_channel_nodes_are_grouped_by_the_domain_their_config_names() -> None:
    claims = [_claim("a", "n1"), _claim("a", "n2"), _claim("b", "n3"), _claim("a", "n9", GPU_DRIVER), {"status": {}}]
    assert channel_nodes(claims) == {"a": ["n1", "n2"], "b": ["n3"]}


def test_indices_are_per_clique_kept_for_known_nodes_and_the_first_free_for_new_ones() -> None:
    cd = {"spec": {"numNodes": 0}, "status": {"nodes": [{"name": "n2", "cliqueID": "c1", "index": 0}]}}
    status = domain_status(cd, [_node("n1", "c1"), _node("n2", "c1"), _node("n3", "c2")])
    assert [(n["name"], n["cliqueID"], n["index"]) for n in status["nodes"]] == [
        ("n1", "c1", 1),
        ("n2", "c1", 0),
        ("n3", "c2", 0),
    ]
    assert status["status"] == "Ready"


def test_a_domain_short_of_its_num_nodes_is_not_ready() -> None:
    assert domain_status({"spec": {"numNodes": 4}}, [_node("n1", "c1")])["status"] == "NotReady"
    assert domain_status({"spec": {"numNodes": 1}}, [_node("n1", "c1")])["status"] == "Ready"
