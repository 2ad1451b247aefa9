"""Waiting against the test API server where it needs faults on demand (watches that break, the requests a wait
makes); each way a rollout fails is diagnosed on the real plane (tests/realk8s/rollout/test_wait.py)."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from k3deploy.rollout.wait import failure_hint
from tests.rollout.conftest import K3

pytestmark = pytest.mark.timeout(180)
IMAGE = "vllm/vllm-openai"


def diagnosis(stderr: str) -> str:
    """The diagnosis block of a failed run (from `failed:` to the summary)."""
    start = stderr.index("failed: ")
    return stderr[start : stderr.index("summary (", start)]


def test_dropped_watches_and_410_gone_mid_wait_still_complete(k3: K3, cluster: Any) -> None:
    cluster.controllers.kubelet.ready_delay = 2.0
    # The pod watch is cut twice after one event (resumed from the last version seen); the third watch is held
    # back 0.5 s while the history is compacted, so it resumes from a version that is gone (410) and re-lists.
    dropped = cluster.faults.add("GET", r"/pods\?.*watch=true", drop=True, drop_after=1, times=2)
    held = cluster.faults.add("GET", r"/pods\?.*watch=true", delay=0.5, times=1)
    stop = threading.Event()

    def write_and_compact() -> None:
        tick = 0
        while not stop.wait(0.1):
            tick += 1
            cluster.store.create("namespaces", {"metadata": {"name": f"tick-{tick}"}})
            cluster.store.compact()

    compactor = threading.Thread(target=write_and_compact, daemon=True)
    compactor.start()
    try:
        result = k3("apply", "--timeout", "60s")
    finally:
        stop.set()
        compactor.join()
    assert result.returncode == 0, result.stderr
    assert (dropped.hits, held.hits) == (2, 1)
    assert "watch of Pod expired (410 Gone): re-listing" in result.stderr
    assert cluster.store.get("leaderworkersets", "kimi-k3-gb300-tp16", "kimi-k3")["status"]["readyReplicas"] == 1


def test_waiting_watches_instead_of_polling(k3: K3, cluster: Any) -> None:
    cluster.controllers.kubelet.ready_delay = 3.0
    result = k3("apply", "--timeout", "60s")
    assert result.returncode == 0, result.stderr
    served = [
        r
        for r in cluster.faults.requests
        if r.startswith("GET /apis/leaderworkerset.x-k8s.io/v1/namespaces/kimi-k3/leaderworkersets")
    ]
    lists = [r for r in served if "?" not in r or "watch=true" not in r.split("?", 1)[1]]
    watches = [r for r in served if "watch=true" in r]
    # However long the pods take: one GET of the other colour's group (a blue-green leftover to clear,
    # rollout/bluegreen_repair.py), one for the outage question (does the apply replace the only group?), one
    # before the apply, one list, one watch.
    green = "GET /apis/leaderworkerset.x-k8s.io/v1/namespaces/kimi-k3/leaderworkersets/kimi-k3-gb300-tp16-green"
    assert [r.split("?")[0] for r in lists].count(green) == 1
    assert [r.split("?")[0] for r in lists if r.split("?")[0] != green] == [
        "GET /apis/leaderworkerset.x-k8s.io/v1/namespaces/kimi-k3/leaderworkersets/kimi-k3-gb300-tp16",
        "GET /apis/leaderworkerset.x-k8s.io/v1/namespaces/kimi-k3/leaderworkersets/kimi-k3-gb300-tp16",
        "GET /apis/leaderworkerset.x-k8s.io/v1/namespaces/kimi-k3/leaderworkersets",
    ]
    assert len(watches) == 1


def test_an_unschedulable_pod_without_a_gpu_request_is_not_told_to_find_gpus() -> None:
    # What the real scheduler reported for the prefetch Job's pod on a cluster of GPU-tainted nodes only.
    prefetch = {"spec": {"containers": [{"name": "fetch", "resources": {"requests": {"cpu": "2"}}}]}}
    serving = {"spec": {"containers": [{"name": "vllm", "resources": {"limits": {"nvidia.com/gpu": "4"}}}]}}
    assert "needs no GPU" in failure_hint("Unschedulable", prefetch)
    assert "nvidia.com/gpu taint" in failure_hint("Unschedulable", prefetch)
    assert "free nvidia.com/gpu in one NVLink clique" in failure_hint("Unschedulable", serving)
    assert "free nvidia.com/gpu in one NVLink clique" in failure_hint("Unschedulable", None)
