"""Kueue's view of the groups (k3deploy/rollout/queue.py): Workloads read per group, gated pods recognised."""

from __future__ import annotations

from typing import Any

from k3deploy.rollout.queue import GroupAdmission, gated_by_kueue, group_admissions

LWS = "kimi-k3-gb300-tp16"
NO_ROOM = "couldn't assign flavors to pod set leader: topology \"nvl72\" doesn't allow to fit any of 4 pod(s)"


def _workload(name: str, owner: str, index: str, conditions: list[dict[str, str]]) -> dict[str, Any]:
    return {
        "metadata": {
            "name": name,
            "annotations": {"kueue.x-k8s.io/job-owner-name": owner, "kueue.x-k8s.io/component-workload-index": index},
        },
        "status": {"conditions": conditions},
    }


def test_an_admitted_group_and_a_queued_one_are_told_apart_with_kueues_reason() -> None:
    workloads = [
        _workload(
            "wl-1", LWS, "1", [{"type": "QuotaReserved", "status": "False", "reason": "Pending", "message": NO_ROOM}]
        ),
        _workload(
            "wl-0",
            LWS,
            "0",
            [
                {"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved"},
                {"type": "Admitted", "status": "True"},
            ],
        ),
        _workload("other", "another-release", "0", []),
        _workload("no-index", LWS, "", []),
    ]
    found = group_admissions(workloads, LWS)
    assert found == [
        GroupAdmission(0, "wl-0", True, "", ""),
        GroupAdmission(1, "wl-1", False, "Pending", NO_ROOM),
    ]
    assert found[1].line() == f"group 1: queued by Kueue, Workload/wl-1 (Pending: {NO_ROOM})"
    assert found[0].line() == "group 0: admitted by Kueue, Workload/wl-0"


def test_a_workload_kueue_has_not_looked_at_yet_is_queued_and_says_so() -> None:
    (found,) = group_admissions([_workload("wl-0", LWS, "0", [])], LWS)
    assert not found.admitted
    assert found.reason == "Pending" and found.message == "not yet considered by Kueue"


def test_quota_reserved_but_not_admitted_is_still_queued() -> None:
    conditions = [
        {"type": "QuotaReserved", "status": "True"},
        {"type": "Admitted", "status": "False", "reason": "NoChecks", "message": "waiting for admission checks"},
    ]
    (found,) = group_admissions([_workload("wl-0", LWS, "0", conditions)], LWS)
    assert not found.admitted and found.message == "waiting for admission checks"


def test_only_kueues_own_gates_mark_a_pod_as_queued() -> None:
    assert gated_by_kueue({"spec": {"schedulingGates": [{"name": "kueue.x-k8s.io/admission"}]}})
    assert gated_by_kueue({"spec": {"schedulingGates": [{"name": "kueue.x-k8s.io/topology"}]}})
    assert not gated_by_kueue({"spec": {"schedulingGates": [{"name": "example.com/other"}]}})
    assert not gated_by_kueue({"spec": {}})
