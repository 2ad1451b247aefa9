"""Pure readiness predicates over raw objects."""

from __future__ import annotations

from k3deploy.rollout.readiness import is_fatal, job_readiness, lws_readiness, pod_phase_label, pod_problems, restarts


def lws(
    generation: int = 2,
    observed: int | None = 2,
    available: str = "True",
    ready: int = 1,
    updated: int = 1,
    replicas: int = 1,
    cond_generation: int | None = None,
) -> dict:
    cond = {
        "type": "Available",
        "status": available,
        "reason": "AllGroupsReady" if available == "True" else "GroupsNotReady",
    }
    if cond_generation is not None:
        cond["observedGeneration"] = cond_generation
    status = {"conditions": [cond], "readyReplicas": ready, "updatedReplicas": updated}
    if observed is not None:
        status["observedGeneration"] = observed
    return {
        "kind": "LeaderWorkerSet",
        "metadata": {"name": "k3", "generation": generation},
        "spec": {"replicas": replicas},
        "status": status,
    }


def test_lws_ready_when_available_observed_and_counts_match() -> None:
    verdict = lws_readiness(lws())
    assert (verdict.ready, verdict.reason, verdict.message) == (True, "Available", "1/1 groups ready, 1 updated")


def test_lws_not_ready_on_an_old_generation_even_if_available() -> None:
    verdict = lws_readiness(lws(generation=3, observed=2))
    assert (verdict.ready, verdict.reason) == (False, "Progressing")
    assert "generation 3" in verdict.message
    assert lws_readiness(lws(generation=3, observed=None, cond_generation=2)).ready is False


def test_lws_not_ready_until_every_group_is_updated() -> None:
    assert lws_readiness(lws(replicas=2, ready=2, updated=1)).ready is False
    verdict = lws_readiness(lws(available="False", ready=0))
    assert (verdict.ready, verdict.failed, verdict.reason) == (False, False, "GroupsNotReady")


def test_job_complete_failed_and_running() -> None:
    complete = {"status": {"succeeded": 1, "conditions": [{"type": "Complete", "status": "True"}]}}
    failed = {
        "status": {
            "failed": 7,
            "conditions": [
                {
                    "type": "Failed",
                    "status": "True",
                    "reason": "BackoffLimitExceeded",
                    "message": "Job has reached the specified backoff limit",
                }
            ],
        }
    }
    running = {"status": {"active": 1}}
    assert job_readiness(complete).ready is True
    verdict = job_readiness(failed)
    assert (verdict.ready, verdict.failed, verdict.reason) == (False, True, "BackoffLimitExceeded")
    assert (job_readiness(running).ready, job_readiness(running).reason) == (False, "Running")


def pod(**status: object) -> dict:
    return {"metadata": {"name": "p"}, "spec": {}, "status": status}


def test_pod_problems_name_the_reason() -> None:
    unsched = pod(
        phase="Pending",
        conditions=[
            {
                "type": "PodScheduled",
                "status": "False",
                "reason": "Unschedulable",
                "message": "0/4 nodes are available: 4 Insufficient nvidia.com/gpu.",
            }
        ],
    )
    assert pod_problems(unsched)[0].reason == "Unschedulable"
    assert pod_problems(unsched)[0].message == "0/4 nodes are available: 4 Insufficient nvidia.com/gpu."
    assert is_fatal(pod_problems(unsched)[0]) is False
    pull = pod(
        containerStatuses=[
            {"name": "vllm", "state": {"waiting": {"reason": "ImagePullBackOff", "message": "Back-off"}}}
        ]
    )
    assert [(p.reason, p.container, p.crashed, is_fatal(p)) for p in pod_problems(pull)] == [
        ("ImagePullBackOff", "vllm", False, True)
    ]
    crash = pod(
        containerStatuses=[{"name": "vllm", "restartCount": 3, "state": {"waiting": {"reason": "CrashLoopBackOff"}}}]
    )
    assert [(p.reason, p.crashed) for p in pod_problems(crash)] == [("CrashLoopBackOff", True)]
    assert restarts(crash) == 3
    oom = pod(
        containerStatuses=[
            {
                "name": "vllm",
                "restartCount": 1,
                "state": {"running": {}},
                "lastState": {"terminated": {"reason": "OOMKilled", "exitCode": 137}},
            }
        ]
    )
    assert [(p.reason, p.crashed, is_fatal(p)) for p in pod_problems(oom)] == [("OOMKilled", True, True)]
    exited = pod(containerStatuses=[{"name": "vllm", "state": {"terminated": {"reason": "Error", "exitCode": 1}}}])
    assert [(p.reason, p.crashed, is_fatal(p)) for p in pod_problems(exited)] == [("Error", True, False)]


def test_pod_phase_label() -> None:
    ready = pod(phase="Running", conditions=[{"type": "Ready", "status": "True"}])
    assert pod_phase_label(ready) == "Ready"
    creating = {"metadata": {"name": "p"}, "spec": {"nodeName": "n1"}, "status": {"phase": "Pending"}}
    assert pod_phase_label(creating) == "ContainerCreating"
    assert pod_phase_label({"metadata": {"name": "p", "deletionTimestamp": "x"}}) == "Terminating"
