"""A Job controller imitating kubernetes pkg/controller/job/job_controller.go: up to `parallelism` pods at once
(never more than the completions still wanted) until `completions` succeed (Complete), or Failed with reason
BackoffLimitExceeded once failed pods pass `backoffLimit` or, with `restartPolicy: OnFailure` (containers restart in
place, no new pods), once the container restarts of its running pods reach it (pastBackoffLimitOnFailure). Pods are
found by the `batch.kubernetes.io/controller-uid` label, so a re-created Job never adopts a deleted one's leftover
pods. Whether a pod succeeds is the kubelet's call (see Kubelet.fail).
"""

from __future__ import annotations

import copy

from tests.kubeapi.apply import now
from tests.kubeapi.controllers.base import Controller, set_condition
from tests.kubeapi.controllers.events import record


def _finished(job: dict) -> bool:
    return any(
        c["type"] in ("Complete", "Failed") and c["status"] == "True"
        for c in job.get("status", {}).get("conditions", [])
    )


def _past_backoff_limit_on_failure(job: dict, pods: list) -> bool:
    """job_controller.go pastBackoffLimitOnFailure: restarts of running or pending pods' containers, summed."""
    if job["spec"].get("template", {}).get("spec", {}).get("restartPolicy") != "OnFailure":
        return False
    total = sum(
        s.get("restartCount", 0)
        for p in pods
        if p and p.get("status", {}).get("phase") in ("Running", "Pending")
        for s in p["status"].get("containerStatuses", []) + p["status"].get("initContainerStatuses", [])
    )
    limit = job["spec"].get("backoffLimit", 6)
    return total > 0 if limit == 0 else total >= limit


class JobController(Controller):
    """Runs batch/v1 Jobs."""

    name = "job-controller"

    def reconcile(self) -> None:
        """Sync every unfinished Job."""
        for job in self.store.list("jobs"):
            if not _finished(job) and not job["spec"].get("suspend"):
                self._sync(job)

    def _sync(self, job: dict) -> None:
        meta, spec = job["metadata"], job["spec"]
        uid = meta["uid"]
        pods = self.store.list("pods", meta["namespace"], label=f"batch.kubernetes.io/controller-uid={uid}")
        succeeded = sum(1 for p in pods if p.get("status", {}).get("phase") == "Succeeded")
        failed = sum(1 for p in pods if p.get("status", {}).get("phase") == "Failed")
        active = [
            p
            for p in pods
            if p.get("status", {}).get("phase") not in ("Succeeded", "Failed")
            and not p["metadata"].get("deletionTimestamp")
        ]
        ready = sum(
            1
            for p in active
            if any(c["type"] == "Ready" and c["status"] == "True" for c in p.get("status", {}).get("conditions", []))
        )
        completions, backoff_limit = spec.get("completions", 1), spec.get("backoffLimit", 6)
        parallelism = spec.get("parallelism", 1)
        stamp = now()
        outcome = None
        if succeeded >= completions:
            outcome = "Complete"
        elif failed > backoff_limit or _past_backoff_limit_on_failure(job, active):
            outcome = "Failed"
            for pod in active:
                self.store.delete("pods", pod["metadata"]["name"], meta["namespace"])
            active = []
        else:
            want = min(parallelism, completions - succeeded)
            for _ in range(want - len(active)):
                self._create_pod(job)
                active.append(None)

        def write(obj: dict) -> None:
            status = obj.setdefault("status", {})
            status.setdefault("startTime", stamp)
            status.update(
                active=len(active),
                succeeded=succeeded,
                failed=failed,
                ready=ready,
                terminating=0,
                uncountedTerminatedPods={},
            )
            conditions = status.setdefault("conditions", [])
            if outcome == "Complete":
                set_condition(
                    conditions,
                    "SuccessCriteriaMet",
                    "True",
                    "CompletionsReached",
                    "Reached expected number of succeeded pods",
                    stamp,
                )
                set_condition(
                    conditions,
                    "Complete",
                    "True",
                    "CompletionsReached",
                    "Reached expected number of succeeded pods",
                    stamp,
                )
                status["completionTime"] = stamp
            elif outcome == "Failed":
                set_condition(
                    conditions,
                    "FailureTarget",
                    "True",
                    "BackoffLimitExceeded",
                    "Job has reached the specified backoff limit",
                    stamp,
                )
                set_condition(
                    conditions,
                    "Failed",
                    "True",
                    "BackoffLimitExceeded",
                    "Job has reached the specified backoff limit",
                    stamp,
                )

        self.store.update("jobs", meta["name"], meta["namespace"], write, subresource="status", manager=self.name)
        if outcome == "Complete":
            record(self.store, job, "Normal", "Completed", "Job completed", self.name)
        elif outcome == "Failed":
            record(
                self.store,
                job,
                "Warning",
                "BackoffLimitExceeded",
                "Job has reached the specified backoff limit",
                self.name,
            )

    def _create_pod(self, job: dict) -> None:
        meta = job["metadata"]
        template = copy.deepcopy(job["spec"].get("template", {}))
        labels = dict(template.get("metadata", {}).get("labels", {}))
        labels.update(
            {
                "batch.kubernetes.io/controller-uid": meta["uid"],
                "batch.kubernetes.io/job-name": meta["name"],
                "controller-uid": meta["uid"],
                "job-name": meta["name"],
            }
        )
        spec = template.get("spec", {})
        spec.setdefault("restartPolicy", "Never")
        pod = self.store.create(
            "pods",
            {
                "metadata": {
                    "generateName": f"{meta['name']}-",
                    "namespace": meta["namespace"],
                    "labels": labels,
                    "annotations": template.get("metadata", {}).get("annotations", {}),
                    "ownerReferences": [
                        {
                            "apiVersion": "batch/v1",
                            "kind": "Job",
                            "name": meta["name"],
                            "uid": meta["uid"],
                            "controller": True,
                            "blockOwnerDeletion": True,
                        }
                    ],
                },
                "spec": spec,
            },
            meta["namespace"],
            manager=self.name,
        )
        record(self.store, job, "Normal", "SuccessfulCreate", f"Created pod: {pod['metadata']['name']}", self.name)
