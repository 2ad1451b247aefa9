"""The plane's LWS resync (tests/realk8s/resync.py) re-queues exactly the LeaderWorkerSets short of their ready
groups, by its annotation on the leader StatefulSet, and leaves a converged one alone."""

from __future__ import annotations

from typing import Any

import pytest

from tests.realk8s.client import resource_path, wait_until
from tests.realk8s.plane import Plane
from tests.realk8s.resync import ANNOTATION
from tests.realk8s.stages import NEVER_READY_IMAGE

pytestmark = [pytest.mark.realk8s, pytest.mark.timeout(300)]
LWS_API = "leaderworkerset.x-k8s.io/v1"


def _lws(name: str, namespace: str, image: str) -> dict[str, Any]:
    container = {"name": "c", "image": image}
    return {
        "apiVersion": LWS_API,
        "kind": "LeaderWorkerSet",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "replicas": 1,
            "leaderWorkerTemplate": {"size": 1, "workerTemplate": {"spec": {"containers": [container]}}},
        },
    }


def _mark(plane: Plane, namespace: str, name: str) -> str | None:
    sts = plane.api.get(resource_path("apps/v1", "statefulsets", namespace, name))
    return (sts["metadata"].get("annotations") or {}).get(ANNOTATION)


def test_only_an_unconverged_group_is_requeued(realk8s: Plane, namespace: str) -> None:
    assert realk8s.resync is not None
    lws = resource_path(LWS_API, "leaderworkersets", namespace)
    realk8s.api.create(lws, _lws("stuck", namespace, NEVER_READY_IMAGE))
    realk8s.api.create(lws, _lws("fine", namespace, "registry.invalid/realk8s/serves:ok"))
    ready = resource_path(LWS_API, "leaderworkersets", namespace, "fine")
    wait_until("LWS fine ready", lambda: realk8s.api.get(ready).get("status", {}).get("readyReplicas") == 1, 120)
    sts = resource_path("apps/v1", "statefulsets", namespace, "stuck")
    wait_until("the stuck group's leader StatefulSet", lambda: realk8s.api.find(sts), 60)

    stuck, fine = _mark(realk8s, namespace, "stuck"), _mark(realk8s, namespace, "fine")
    realk8s.resync.sync()
    assert _mark(realk8s, namespace, "stuck") not in (None, stuck)
    assert _mark(realk8s, namespace, "fine") == fine
    stuck_lws = realk8s.api.get(resource_path(LWS_API, "leaderworkersets", namespace, "stuck"))
    assert stuck_lws.get("status", {}).get("readyReplicas", 0) == 0
