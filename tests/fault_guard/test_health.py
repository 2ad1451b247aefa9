"""Per group health rows (fault_guard/health.py), pure: which trays a group holds, each tray's verdict from the
fault conditions guard is told to read (and only those), and the texts `status` prints."""

from __future__ import annotations

from typing import Any

from k3deploy.fault_guard.health import domain_text, group_health, tray_text


def pod(name: str, group: str, node: str | None) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "labels": {"leaderworkerset.sigs.k8s.io/group-index": group}},
        "spec": {"nodeName": node} if node else {},
    }


def node(name: str, *conditions: tuple[str, str]) -> dict[str, Any]:
    return {
        "metadata": {"name": name},
        "spec": {},
        "status": {"conditions": [{"type": t, "status": s} for t, s in conditions]},
    }


def test_groups_in_index_order_with_their_trays_and_only_listed_conditions_count() -> None:
    pods = [pod("a-10", "10", "n3"), pod("a-2", "2", "n1"), pod("a-2-1", "2", "n2"), pod("a-2-2", "2", None)]
    nodes = {"n1": node("n1", ("SysLogsXIDError", "True")), "n2": node("n2", ("Custom", "True")), "n3": node("n3")}
    rows = group_health(pods, nodes, [], ["SysLogsXIDError", "GpuNvlinkWatch"])
    assert [r["group"] for r in rows] == ["2", "10"]
    assert [(t["node"], t["health"]) for t in rows[0]["trays"]] == [("n1", "sick"), ("n2", "healthy")]
    assert rows[0]["compute_domain"] is None and domain_text(None) == "-"
    assert rows[0]["trays"][0]["faults"] == ["SysLogsXIDError"]


def test_a_condition_that_is_false_is_healthy_and_the_texts_say_what_is_known() -> None:
    nodes = {"n1": node("n1", ("GpuNvlinkWatch", "False"))}
    [row] = group_health([pod("a-0", "0", "n1")], nodes, [], ["GpuNvlinkWatch"])
    assert tray_text(row["trays"][0]) == "n1 healthy"
    assert tray_text({"node": "n2", "health": "unknown", "faults": [], "cordoned": None}) == "n2 unknown"
    cordoned = {"node": "n3", "health": "sick", "faults": ["X", "Y"], "cordoned": True, "guard_cordoned": False}
    assert tray_text(cordoned) == "n3 sick (X; Y) cordoned"
