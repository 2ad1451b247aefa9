"""The waiter's pure judgement, driven by hand-made watch state and an injected clock."""

from __future__ import annotations

from k3deploy.rollout.judge import WaitState, judge, owned_by_job
from tests.support.lws_revision import REVISION_KEY, new_revision

LWS_TARGET = {"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet", "metadata": {"name": "k3"}}


def _lws(image: str, generation: int, observed: int | None = None) -> dict:
    """An LWS whose status says Available with every group ready and updated; observedGeneration only when given
    (without it: a controller before v0.9.0)."""
    lws = {
        "apiVersion": "leaderworkerset.x-k8s.io/v1",
        "kind": "LeaderWorkerSet",
        "metadata": {"name": "k3", "namespace": "ns", "uid": "u-1", "generation": generation},
        "spec": {
            "replicas": 1,
            "leaderWorkerTemplate": {
                "size": 1,
                "workerTemplate": {"spec": {"containers": [{"name": "vllm", "image": image}]}},
            },
        },
        "status": {
            "readyReplicas": 1,
            "updatedReplicas": 1,
            "conditions": [{"type": "Available", "status": "True", "reason": "AllGroupsReady"}],
        },
    }
    if observed is not None:
        lws["status"]["observedGeneration"] = observed
    return lws


def _pod(name: str, key: str = "", scheduled: bool = True, uid: str = "p") -> dict:
    conditions = (
        [{"type": "Ready", "status": "True"}]
        if scheduled
        else [
            {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": "0/4 nodes are available"}
        ]
    )
    return {
        "metadata": {
            "name": name,
            "uid": uid,
            "labels": {
                "leaderworkerset.sigs.k8s.io/name": "k3",
                "leaderworkerset.sigs.k8s.io/group-index": "0",
                "leaderworkerset.sigs.k8s.io/worker-index": "0",
                REVISION_KEY: key,
            },
        },
        "status": {"phase": "Running" if scheduled else "Pending", "conditions": conditions},
    }


def _state(lws: dict, revisions: list[dict], pods: list[dict]) -> WaitState:
    return WaitState(
        objects={
            "LeaderWorkerSet": {"k3": lws},
            "ControllerRevision": {r["metadata"]["name"]: r for r in revisions},
            "Pod": {p["metadata"]["name"]: p for p in pods},
        }
    )


def test_a_stale_available_is_progressing_until_the_controller_observes_the_new_generation() -> None:
    state = _state(_lws("vllm:2", 2, observed=1), [], [_pod("k3-0")])
    first = judge(state, [LWS_TARGET], now=0.0, grace_s=10)
    assert (first.ready, first.rows[0].state) == (False, "Progressing")
    assert "controller has not seen generation 2 yet (observedGeneration 1)" in first.rows[0].detail

    state.objects["LeaderWorkerSet"]["k3"] = _lws("vllm:2", 2, observed=2)
    done = judge(state, [LWS_TARGET], now=2.0, grace_s=10)
    assert done.ready and done.rows[0].state == "Available"
    assert done.accepted == [("LeaderWorkerSet/k3", "status.observedGeneration 2 = metadata.generation")]
    # The proof is announced once; the row remembers since when it has been Available.
    again = judge(state, [LWS_TARGET], now=5.0, grace_s=10)
    assert again.accepted == [] and again.rows[0].since == 2.0


def test_unschedulable_fails_only_after_the_grace_period_on_the_injected_clock() -> None:
    lws = _lws("vllm:1", 1)
    lws["status"]["observedGeneration"] = 1
    state = _state(lws, [], [_pod("k3-0", scheduled=False)])
    assert judge(state, [LWS_TARGET], now=100.0, grace_s=30).failure is None
    assert judge(state, [LWS_TARGET], now=129.0, grace_s=30).failure is None
    failure = judge(state, [LWS_TARGET], now=130.0, grace_s=30).failure
    assert failure is not None and (failure.subject, failure.reason) == ("Pod/k3-0", "Unschedulable")


def test_a_recreated_jobs_leftover_pods_are_not_adopted() -> None:
    """Garbage collection is asynchronous (kubernetes pkg/controller/garbagecollector): a deleted Job's pods linger
    with the same job-name label; only the owner uid (or batch.kubernetes.io/controller-uid) tells them apart."""
    job = {"kind": "Job", "metadata": {"name": "prefetch", "uid": "new"}}
    old_owned = {"metadata": {"ownerReferences": [{"uid": "old"}], "labels": {"job-name": "prefetch"}}}
    old_labelled = {"metadata": {"labels": {"job-name": "prefetch", "batch.kubernetes.io/controller-uid": "old"}}}
    mine = {"metadata": {"ownerReferences": [{"uid": "new"}], "labels": {"job-name": "prefetch"}}}
    assert [owned_by_job(p, job) for p in (old_owned, old_labelled, mine)] == [False, False, True]


def test_a_failing_pod_of_the_outgoing_template_is_not_the_rollouts_failure() -> None:
    """After a rollback restores the old template, the failed template's pod is still there until the controller
    replaces it (kubernetes-sigs/lws pkg/controllers/leaderworkerset_controller.go rolls by revision key)."""
    lws = _lws("vllm:1", 3)
    lws["status"]["observedGeneration"] = 3
    good, bad = new_revision(lws, 3), new_revision(_lws("vllm:no-such-tag", 2), 2)
    pulling = _pod("k3-0", bad["metadata"]["labels"][REVISION_KEY], uid="p-bad")
    pulling["status"]["containerStatuses"] = [{"name": "vllm", "state": {"waiting": {"reason": "ImagePullBackOff"}}}]
    state = _state(lws, [good, bad], [pulling])
    verdict = judge(state, [LWS_TARGET], now=0.0, grace_s=0)
    assert verdict.failure is None and verdict.rows[1].state == "ImagePullBackOff"
    # The same pod on the current template is a failure at once.
    pulling["metadata"]["labels"][REVISION_KEY] = good["metadata"]["labels"][REVISION_KEY]
    failure = judge(state, [LWS_TARGET], now=1.0, grace_s=0).failure
    assert failure is not None and failure.reason == "ImagePullBackOff"
