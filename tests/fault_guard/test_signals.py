"""What marks a tray sick (k3deploy/fault_guard/signals.py), read from objects shaped as the API server sends them."""

from __future__ import annotations

from typing import Any

from k3deploy.fault_guard.signals import (
    compute_domain_faults,
    condition_faults,
    cordoned,
    group_started,
    leader_unready,
    unschedulable,
)
from k3deploy.profile.guard_spec import DEFAULT_FAULT_CONDITIONS


def node(*conditions: dict[str, Any], unschedulable: bool | None = None) -> dict[str, Any]:
    spec = {} if unschedulable is None else {"unschedulable": unschedulable}
    return {"metadata": {"name": "n"}, "spec": spec, "status": {"conditions": list(conditions)}}


def test_a_configured_condition_that_is_true_is_a_fault_with_its_reason_and_message() -> None:
    n = node(
        {"type": "Ready", "status": "True"},
        {"type": "GpuNvlinkWatch", "status": "True", "reason": "GpuNvlinkWatchIsNotHealthy", "message": "link 3"},
        {"type": "SysLogsSXIDError", "status": "False", "reason": "NoHealthFailure"},
        {"type": "SysLogsXIDError", "status": "True"},
    )
    assert condition_faults(n, DEFAULT_FAULT_CONDITIONS) == [
        "GpuNvlinkWatch: GpuNvlinkWatchIsNotHealthy: link 3",
        "SysLogsXIDError",
    ]


def test_only_the_configured_types_count() -> None:
    n = node({"type": "MyFault", "status": "True"}, {"type": "GpuNvlinkWatch", "status": "True"})
    assert condition_faults(n, ["MyFault"]) == ["MyFault"]
    assert condition_faults(n, []) == []
    assert condition_faults({"metadata": {}}, DEFAULT_FAULT_CONDITIONS) == []


def test_unknown_status_is_not_a_fault() -> None:
    assert condition_faults(node({"type": "GpuNvlinkWatch", "status": "Unknown"}), DEFAULT_FAULT_CONDITIONS) == []


def test_compute_domain_nodes_not_ready_are_faults_of_their_node() -> None:
    cd = {
        "metadata": {"name": "k3-cd"},
        "status": {
            "status": "NotReady",
            "nodes": [
                {"name": "a0", "status": "Ready"},
                {"name": "a1", "status": "NotReady"},
                {"name": "a2"},
            ],
        },
    }
    assert compute_domain_faults([cd, {"metadata": {"name": "empty"}}]) == {
        "a1": ["ComputeDomain k3-cd reports the node NotReady"],
        "a2": ["ComputeDomain k3-cd reports the node no status"],
    }


def _pod(phase: str = "Running", started: bool | None = True, deleting: bool = False) -> dict[str, Any]:
    meta = {"name": "p", **({"deletionTimestamp": "2026-01-01T00:00:00Z"} if deleting else {})}
    statuses = [] if started is None else [{"name": "vllm", "started": started}]
    return {"metadata": meta, "status": {"phase": phase, "containerStatuses": statuses}}


def test_a_group_is_started_when_every_pod_runs_and_every_container_started() -> None:
    assert group_started([_pod(), _pod()])
    assert not group_started([])
    assert not group_started([_pod(), _pod(phase="Pending")])
    assert not group_started([_pod(), _pod(started=False)])
    assert not group_started([_pod(started=None)])
    assert not group_started([_pod(deleting=True)])


def test_cordoned_reads_spec_unschedulable() -> None:
    assert cordoned(node(unschedulable=True))
    assert not cordoned(node(unschedulable=False))
    assert not cordoned(node())


def _leader(ready: str, *, started: bool = True) -> dict[str, Any]:
    pod = _pod(started=started)
    pod["metadata"]["name"] = "k3-0"
    pod["status"]["conditions"] = [{"type": "Ready", "status": ready}]
    return pod


def test_a_started_group_whose_leader_is_not_ready_has_an_unhealthy_leader() -> None:
    worker = _pod()
    assert leader_unready([_leader("False"), worker], "k3-0")
    assert not leader_unready([_leader("True"), worker], "k3-0")
    # Still loading (startup probe not passed): not a fault.
    assert not leader_unready([_leader("False", started=False), worker], "k3-0")
    # A worker not running yet: the group is not started.
    assert not leader_unready([_leader("False"), _pod(phase="Pending")], "k3-0")
    assert not leader_unready([_leader("False"), worker], "k3-9")


def test_a_pod_the_scheduler_cannot_place_makes_the_group_unschedulable() -> None:
    placed = _pod()
    placed["spec"] = {"nodeName": "a0"}
    pending = {
        "metadata": {"name": "w"},
        "spec": {},
        "status": {
            "phase": "Pending",
            "conditions": [
                {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": "0/14 nodes"}
            ],
        },
    }
    assert unschedulable([placed, pending])
    assert not unschedulable([placed])
    # Not yet looked at by the scheduler, or being deleted: not counted.
    assert not unschedulable([{"metadata": {"name": "w"}, "spec": {}, "status": {"phase": "Pending"}}])
    assert not unschedulable([{**pending, "metadata": {"name": "w", "deletionTimestamp": "2026-01-01T00:00:00Z"}}])


def test_a_placed_pod_is_not_unschedulable_whatever_its_condition_says() -> None:
    stale = {"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}
    placed = {"metadata": {"name": "w"}, "spec": {"nodeName": "a0"}, "status": {"conditions": [stale]}}
    assert not unschedulable([placed])
