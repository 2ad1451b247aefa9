"""A periodic resync of the real LWS controller's LeaderWorkerSets that have not converged: what a controller-runtime
manager's `SyncPeriod` does, which LWS v0.9 leaves at its 10 h default (sigs.k8s.io/lws cmd/main.go sets no cache
SyncPeriod).

Why it is needed: the LWS controller judges a group ready from two informers at once, the leader pod's readiness
and the worker StatefulSet's status (pkg/controllers/leaderworkerset_controller.go, `StatefulsetReady` and
`PodRunningAndReady`), and it is triggered only by StatefulSet events (`Owns` and `Watches` in `SetupWithManager`).
On a loaded 2-core host the last event can be handled while the other informer still holds the older object; the
status then stays "0/1 groups ready" with every pod Ready, until some later event (measured on the tier: all four
pods Ready at 2 s, the LWS still Progressing at 240 s, no reconcile logged in between). On a real cluster the
kubelets' status updates and other controllers give the next event soon; here nothing else moves.

It only triggers a reconcile: for each LeaderWorkerSet whose status has fewer ready groups than it wants, it sets an
annotation of its own on the leader StatefulSet (owned by the LWS, so the controller re-queues the LWS). It never
writes the LeaderWorkerSet, its pods or any status.
"""

from __future__ import annotations

from tests.realk8s.client import Api
from tests.realk8s.poller import Poller

ANNOTATION = "realk8s.k3deploy/resync"


class Resync(Poller):
    """Re-queues unconverged LeaderWorkerSets from a thread every `interval_s` until `stop()`."""

    def __init__(self, api: Api, interval_s: float = 10.0) -> None:
        super().__init__(api, interval_s, "lws resync")
        self.nudged = 0

    def sync(self) -> None:
        """One pass: an annotation bump on the leader StatefulSet of each LWS short of its ready groups."""
        for lws in self.api.get("/apis/leaderworkerset.x-k8s.io/v1/leaderworkersets")["items"]:
            meta = lws["metadata"]
            if meta.get("deletionTimestamp") or lws.get("status", {}).get("readyReplicas", 0) >= lws["spec"].get(
                "replicas", 1
            ):
                continue
            self.nudged += 1
            path = f"/apis/apps/v1/namespaces/{meta['namespace']}/statefulsets/{meta['name']}"
            body = {"metadata": {"annotations": {ANNOTATION: str(self.nudged)}}}
            # 404: the leader StatefulSet is not made yet, or already gone; the next pass looks again.
            self.api.request("PATCH", path, json=body, headers={"Content-Type": "application/merge-patch+json"})
