"""The waiter's judgement of a pod the scheduler holds for its PersistentVolumeClaim, on the injected clock: waiting
while the claim is provisioned (past the unschedulable grace, bounded only by the deadline), failing at once on what
the provisioner reported, and the grace as before once the claim is Bound or cannot be judged."""

from __future__ import annotations

from typing import Any

import pytest

from k3deploy.rollout.claims import CLAIMS, CLASSES, EVENTS, PROVISIONING_FAILED
from k3deploy.rollout.judge import WaitState, judge, pending
from k3deploy.targets.kubernetes.wait import failure_hint
from tests.rollout.test_claims import CLAIM, DRIVER, EXTERNAL, FAILED, HELD, SHARED, claim

JOB = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "prefetch"}}
GRACE = 120.0
#: The scheduler's message once the claim is Bound but its volume cannot reach any node.
AFFINITY = "0/12 nodes are available: 12 node(s) had volume node affinity conflict."


def _pod(message: str = HELD, uid: str = "jp") -> dict[str, Any]:
    return {
        "metadata": {"name": "prefetch-x", "uid": uid, "ownerReferences": [{"uid": "j1"}], "labels": {}},
        "spec": {"volumes": [{"name": "model-cache", "persistentVolumeClaim": {"claimName": CLAIM}}]},
        "status": {
            "phase": "Pending",
            "conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": message}],
        },
    }


def _state(pod: dict[str, Any], live_claim: dict[str, Any], events: list[dict[str, Any]]) -> WaitState:
    job = {"kind": "Job", "metadata": {"name": "prefetch", "uid": "j1"}, "status": {"active": 1}}
    return WaitState(
        objects={
            "Job": {"prefetch": job},
            "Pod": {"prefetch-x": pod},
            CLAIMS: {CLAIM: live_claim},
            CLASSES: SHARED,
            EVENTS: {e["metadata"]["name"]: e for e in events},
        }
    )


def test_a_pod_held_for_a_claim_being_provisioned_waits_past_the_grace_and_says_for_what() -> None:
    state = _state(_pod(), claim(), [EXTERNAL])
    for now in (0.0, GRACE - 1, GRACE, 10 * GRACE):
        verdict = judge(state, [JOB], now=now, grace_s=GRACE)
        assert verdict.failure is None and not verdict.ready
    rows = {r.name: (r.state, r.detail) for r in verdict.rows}
    assert rows[f"  {CLAIMS}/{CLAIM}"] == ("Pending", f"(waiting for the provisioner {DRIVER})")
    assert rows["  Pod/prefetch-x"] == ("Pending", f"node -, waiting for {CLAIMS}/{CLAIM}")
    # At the deadline, what it waited for is what is told.
    _, _, message, _ = pending([JOB], state)
    assert f"Pod/prefetch-x waits for {CLAIMS}/{CLAIM}: Pending (waiting for the provisioner {DRIVER})" in message
    assert "Unschedulable" not in message


def test_the_claim_is_shown_once_however_many_pods_mount_it() -> None:
    state = _state(_pod(), claim(), [])
    second = _pod(uid="jp2")
    second["metadata"]["name"] = "prefetch-y"
    state.objects["Pod"]["prefetch-y"] = second
    names = [r.name for r in judge(state, [JOB], now=0.0, grace_s=GRACE).rows]
    assert names.count(f"  {CLAIMS}/{CLAIM}") == 1


def test_a_provisioning_failure_fails_at_once_naming_the_claim_and_its_message() -> None:
    state = _state(_pod(), claim(), [EXTERNAL, FAILED])
    failure = judge(state, [JOB], now=0.0, grace_s=GRACE).failure
    assert failure is not None
    assert (failure.subject, failure.reason, failure.message) == (
        f"{CLAIMS}/{CLAIM}",
        PROVISIONING_FAILED,
        FAILED["message"],
    )
    assert failure.names == {"prefetch", "prefetch-x", CLAIM} and failure.pod == "prefetch-x"
    hint = failure_hint(failure.reason, None, failure.subject, "ns")
    assert "StorageClass" in hint and f"`kubectl describe pvc {CLAIM} -n ns`" in hint
    assert "nvidia.com/gpu" not in hint


def test_a_missing_storage_class_fails_at_once() -> None:
    failure = judge(_state(_pod(), claim(storage_class="fast"), []), [JOB], now=0.0, grace_s=GRACE).failure
    assert failure is not None and (failure.subject, failure.reason) == (f"{CLAIMS}/{CLAIM}", "StorageClassNotFound")


def test_once_the_claim_is_bound_an_unschedulable_pod_gets_the_grace_from_then() -> None:
    state = _state(_pod(), claim(), [])
    assert judge(state, [JOB], now=0.0, grace_s=GRACE).failure is None
    assert judge(state, [JOB], now=500.0, grace_s=GRACE).failure is None
    state.objects[CLAIMS][CLAIM] = claim("Bound")
    state.objects["Pod"]["prefetch-x"] = _pod(AFFINITY)
    assert judge(state, [JOB], now=600.0, grace_s=GRACE).failure is None
    assert judge(state, [JOB], now=600.0 + GRACE - 1, grace_s=GRACE).failure is None
    failure = judge(state, [JOB], now=600.0 + GRACE, grace_s=GRACE).failure
    assert failure is not None and (failure.subject, failure.reason) == ("Pod/prefetch-x", "Unschedulable")
    assert failure.message == AFFINITY


@pytest.mark.parametrize("unreadable", [CLAIMS, EVENTS])
def test_claims_or_their_events_that_cannot_be_read_leave_the_grace_as_it_was(unreadable: str) -> None:
    state = _state(_pod(), claim(), [])
    state.unavailable.add(unreadable)
    assert judge(state, [JOB], now=0.0, grace_s=GRACE).failure is None
    assert judge(state, [JOB], now=GRACE - 1, grace_s=GRACE).failure is None
    failure = judge(state, [JOB], now=GRACE, grace_s=GRACE).failure
    assert failure is not None and failure.reason == "Unschedulable"


def test_a_pod_unschedulable_for_want_of_nodes_is_not_held_by_a_claim_pending_beside_it() -> None:
    # The scheduler names what it lacks: nodes, not the claim (as for a claim of a WaitForFirstConsumer class).
    state = _state(_pod("0/12 nodes are available: 12 Insufficient cpu."), claim(), [])
    assert judge(state, [JOB], now=0.0, grace_s=GRACE).failure is None
    assert judge(state, [JOB], now=GRACE - 1, grace_s=GRACE).failure is None
    failure = judge(state, [JOB], now=GRACE, grace_s=GRACE).failure
    assert failure is not None and failure.reason == "Unschedulable"


def test_a_scheduled_pods_claims_are_not_judged() -> None:
    pod = _pod()
    pod["spec"]["nodeName"] = "gb300-01"
    pod["status"]["conditions"] = []
    verdict = judge(_state(pod, claim(), [FAILED]), [JOB], now=0.0, grace_s=GRACE)
    assert verdict.failure is None
    assert f"  {CLAIMS}/{CLAIM}" not in {r.name for r in verdict.rows}
