"""The simulated Job controller and kubelet run Jobs as kubernetes does.

Upstream: kubernetes pkg/controller/job/job_controller.go (manageJob: active pods up to parallelism, never more than
the completions still wanted; pastBackoffLimitOnFailure; pods found by batch.kubernetes.io/controller-uid),
pkg/kubelet/kuberuntime/kuberuntime_manager.go (restartPolicy OnFailure restarts the container in place).
"""

from __future__ import annotations

import pytest

from tests.kubeapi.server import KubeApiServer

pytestmark = pytest.mark.timeout(60)
NS = "default"


def _job(name: str = "j", parallelism: int = 1, completions: int = 1, restart: str = "Never", backoff: int = 6) -> dict:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name},
        "spec": {
            "parallelism": parallelism,
            "completions": completions,
            "backoffLimit": backoff,
            "template": {"spec": {"restartPolicy": restart, "containers": [{"name": "c", "image": "busybox"}]}},
        },
    }


def _condition(obj: dict, type_: str) -> dict:
    return next((c for c in (obj.get("status") or {}).get("conditions", []) if c["type"] == type_), {})


def test_parallelism_runs_that_many_pods_at_once_and_no_more_than_wanted(kube: KubeApiServer) -> None:
    kube.add_gb300_nodes(count=4)
    kube.controllers.kubelet.run_time = 1.0
    kube.store.create("jobs", _job(parallelism=4, completions=3), NS)
    pods = kube.wait_for(lambda: len(p := kube.store.list("pods", NS, label="job-name=j")) >= 3 and p)
    assert len(pods) == 3
    job = kube.wait_for(lambda: _condition(j := kube.store.get("jobs", "j", NS), "Complete") and j)
    assert job["status"]["succeeded"] == 3 and len(kube.store.list("pods", NS, label="job-name=j")) == 3


def test_on_failure_restarts_the_container_in_place_until_the_backoff_limit(kube: KubeApiServer) -> None:
    kube.add_gb300_nodes(count=1)
    kube.controllers.kubelet.backoff = 0.1
    kube.controllers.kubelet.fail("Error", pod="^j-", logs=["boom"])
    kube.store.create("jobs", _job(restart="OnFailure", backoff=3), NS)
    job = kube.wait_for(lambda: _condition(j := kube.store.get("jobs", "j", NS), "Failed") and j)
    assert _condition(job, "Failed")["reason"] == "BackoffLimitExceeded"
    created = [e for e in kube.store.list("events", NS, field="reason=SuccessfulCreate")]
    assert len(created) == 1  # one pod, restarted in place
    restarts = [e for e in kube.store.list("events", NS, field="reason=BackOff")]
    assert sum(e.get("count", 1) for e in restarts) >= 3


def test_a_recreated_job_does_not_adopt_the_old_jobs_pods_still_awaiting_collection(kube: KubeApiServer) -> None:
    kube.add_gb300_nodes(count=1)
    kube.controllers.gc.delay = 30
    kube.controllers.kubelet.run_time = 5.0
    kube.store.create("jobs", _job(), NS)
    old = kube.wait_for(lambda: kube.store.list("pods", NS, label="job-name=j"))[0]
    kube.store.delete("jobs", "j", NS)
    kube.store.create("jobs", _job(), NS)
    new_uid = kube.store.get("jobs", "j", NS)["metadata"]["uid"]
    fresh = kube.wait_for(
        lambda: [
            p for p in kube.store.list("pods", NS, label="job-name=j") if p["metadata"]["uid"] != old["metadata"]["uid"]
        ]
    )
    assert [p["metadata"]["labels"]["batch.kubernetes.io/controller-uid"] for p in fresh] == [new_uid]
    # The old pod is still there (garbage collection has not reached it) and still the old Job's.
    assert kube.store.get("pods", old["metadata"]["name"], NS)["metadata"]["ownerReferences"][0]["uid"] != new_uid
