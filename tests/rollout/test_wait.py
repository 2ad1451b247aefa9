"""Waiting and diagnosing against the test API server: each way a rollout fails, and watches that break."""

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


def test_not_enough_gpus_in_one_clique_is_unschedulable_with_the_scheduler_message(k3: K3, cluster: Any) -> None:
    cluster.store.delete("nodes", "gb300-04")
    cluster.add_gb300_nodes(clique="0a0b0c0d-1111-2222-3333-444455556666.7", count=1, prefix="other")
    result = k3("apply", "--timeout", "60s")
    assert result.returncode == 1, result.stderr
    block = diagnosis(result.stderr)
    assert block.startswith("failed: Pod/kimi-k3-gb300-tp16-0-")
    assert "  reason: Unschedulable\n" in block
    assert "nodes are available" in block and "FailedScheduling" in block
    assert "hint: the group needs nodes with free nvidia.com/gpu in one NVLink clique" in result.stderr


def test_image_pull_failure_fails_fast(k3: K3, cluster: Any) -> None:
    cluster.controllers.kubelet.fail("ImagePullBackOff", image=IMAGE)
    result = k3("apply", "--timeout", "60s")
    assert result.returncode == 1, result.stderr
    block = diagnosis(result.stderr)
    assert "  reason: ImagePullBackOff\n" in block
    assert "error: Pod/kimi-k3-gb300-tp16-0" in result.stderr and ": ImagePullBackOff" in result.stderr
    assert "hint: check vllm.image" in result.stderr


def test_crash_loop_shows_the_crashed_containers_log(k3: K3, cluster: Any) -> None:
    # A real grace period (30 s by default) keeps a recreated group's old pods, and their logs, around for a while.
    cluster.controllers.kubelet.termination_delay = 2.0
    cluster.controllers.kubelet.fail(
        "CrashLoopBackOff",
        image=IMAGE,
        logs=["Loading safetensors shard 12/96", "RuntimeError: NCCL error: unhandled cuda error"],
    )
    result = k3("apply", "--timeout", "60s")
    assert result.returncode == 1, result.stderr
    block = diagnosis(result.stderr)
    assert "  reason: CrashLoop" in block
    assert "    | RuntimeError: NCCL error: unhandled cuda error\n" in block
    assert "last log lines of kimi-k3-gb300-tp16-0" in block


def test_prefetch_job_failure_stops_before_the_leaderworkerset(k3: K3, cluster: Any) -> None:
    cluster.controllers.kubelet.fail(
        "Error",
        pod="prefetch",
        exit_code=1,
        logs=["fetching moonshotai/Kimi-K3@main", "huggingface_hub.errors.GatedRepoError: 401"],
    )
    result = k3("apply", "--timeout", "90s")
    assert result.returncode == 1, result.stderr
    block = diagnosis(result.stderr)
    assert block.startswith("failed: Job/kimi-k3-gb300-tp16-prefetch\n  reason: BackoffLimitExceeded\n")
    assert "    | huggingface_hub.errors.GatedRepoError: 401\n" in block
    assert cluster.store.get("leaderworkersets", "kimi-k3-gb300-tp16", "kimi-k3") is None

    # Once the cause is fixed, a re-run replaces the failed Job instead of waiting on it forever.
    cluster.controllers.kubelet.rules.clear()
    rerun = k3("apply", "--timeout", "60s")
    assert rerun.returncode == 0, rerun.stderr
    assert "kimi-k3/Job/kimi-k3-gb300-tp16-prefetch replaced" in rerun.stderr


def test_failing_node_preflight_pod_stops_before_the_weight_cache_with_its_report(k3: K3, cluster: Any) -> None:
    cluster.controllers.kubelet.fail(
        "Error",
        pod="node-preflight",
        exit_code=1,
        times=1,
        logs=[
            '{"profile": "kimi-k3-gb300-tp16", "status": "fail", "checks": []}',
            "error: preflight failed 1 check(s): fabric.state",
        ],
    )
    result = k3("apply", "--timeout", "90s")
    assert result.returncode == 1, result.stderr
    block = diagnosis(result.stderr)
    assert block.startswith("failed: Job/kimi-k3-gb300-tp16-node-preflight\n  reason: BackoffLimitExceeded\n")
    assert "    | error: preflight failed 1 check(s): fabric.state\n" in block
    # Nothing after it was applied: no weight cache, no download, no serving group.
    assert cluster.store.get("persistentvolumeclaims", "kimi-k3-gb300-tp16-model-cache", "kimi-k3") is None
    assert cluster.store.get("jobs", "kimi-k3-gb300-tp16-prefetch", "kimi-k3") is None
    assert cluster.store.get("leaderworkersets", "kimi-k3-gb300-tp16", "kimi-k3") is None


def test_deadline_exceeded_exits_3_with_what_was_pending(k3: K3, cluster: Any) -> None:
    cluster.controllers.kubelet.fail("NeverReady", image=IMAGE)
    result = k3("apply", "--timeout", "8s")
    assert result.returncode == 3, result.stderr
    assert "error: LeaderWorkerSet/kimi-k3-gb300-tp16 not ready before the deadline (8s)" in result.stderr
    assert "failed: LeaderWorkerSet/kimi-k3-gb300-tp16" in result.stderr
    assert "hint: raise --timeout" in result.stderr


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


def test_a_replaced_job_is_judged_without_the_old_jobs_pods(k3: K3, cluster: Any) -> None:
    """Garbage collection is asynchronous (kubernetes pkg/controller/garbagecollector): the failed node-preflight
    Job's pod is still listed, with the same job-name label, while its replacement runs; it is not the new Job's."""
    cluster.controllers.gc.delay = 60
    cluster.controllers.kubelet.fail("Error", pod="node-preflight", exit_code=1, times=1, logs=["error: fabric.state"])
    first = k3("apply", "--timeout", "90s")
    assert first.returncode == 1, first.stderr
    old = [
        p["metadata"]["name"]
        for p in cluster.store.list("pods", "kimi-k3")
        if p.get("status", {}).get("phase") == "Failed"
    ]
    # The failed Job's other pods may still be terminating when it is replaced (their anti-affinity then holds the
    # new pods back, as in a real cluster): a grace lets the scheduler place them once they go (FAST sets none).
    rerun = k3("apply", "--timeout", "60s", "--set", "kubernetes.unschedulable_grace_s=30")
    assert rerun.returncode == 0, rerun.stderr
    assert "kimi-k3/Job/kimi-k3-gb300-tp16-node-preflight replaced" in rerun.stderr
    assert len(old) == 1 and cluster.store.get("pods", old[0], "kimi-k3") is not None
    assert old[0] not in rerun.stderr


def test_a_claim_on_a_missing_resource_claim_template_is_diagnosed_as_what_it_is(k3: K3, cluster: Any) -> None:
    """kubernetes pkg/controller/resourceclaim/controller.go cannot make the pod's ResourceClaim and records
    FailedResourceClaimCreation; the scheduler's DynamicResources PreEnqueue then holds the pod without any condition
    (pkg/scheduler/framework/plugins/dynamicresources). Miswired here: the channel template has another name."""
    cluster.controllers.compute_domains.enabled = False
    cluster.store.create("namespaces", {"metadata": {"name": "kimi-k3"}})
    cluster.store.create(
        "resourceclaimtemplates", {"metadata": {"name": "kimi-k3-gb300-tp16-channel"}, "spec": {"spec": {}}}, "kimi-k3"
    )
    # Within the grace period the template could still appear (the driver makes it from the ComputeDomain).
    result = k3("apply", "--timeout", "60s", "--set", "kubernetes.unschedulable_grace_s=2")
    assert result.returncode == 1, result.stderr
    block = diagnosis(result.stderr)
    assert block.startswith("failed: Pod/kimi-k3-gb300-tp16-0\n  reason: ResourceClaimTemplateNotFound\n")
    assert (
        'names ResourceClaimTemplate "kimi-k3-gb300-tp16-compute-domain-channel", which does not exist in the '
        "namespace (templates there: kimi-k3-gb300-tp16-channel)"
    ) in block
    assert (
        "Warning FailedResourceClaimCreation Pod/kimi-k3-gb300-tp16-0: PodResourceClaim compute-domain-channel: resource claim "
        'template "kimi-k3-gb300-tp16-compute-domain-channel": resourceclaimtemplate.resource.k8s.io '
        '"kimi-k3-gb300-tp16-compute-domain-channel" not found'
    ) in block
    assert "hint: the pods' resourceClaimTemplateName must be the ComputeDomain's" in result.stderr


def test_an_unschedulable_pod_without_a_gpu_request_is_not_told_to_find_gpus() -> None:
    # What the real scheduler reported for the prefetch Job's pod on a cluster of GPU-tainted nodes only.
    prefetch = {"spec": {"containers": [{"name": "fetch", "resources": {"requests": {"cpu": "2"}}}]}}
    serving = {"spec": {"containers": [{"name": "vllm", "resources": {"limits": {"nvidia.com/gpu": "4"}}}]}}
    assert "needs no GPU" in failure_hint("Unschedulable", prefetch)
    assert "nvidia.com/gpu taint" in failure_hint("Unschedulable", prefetch)
    assert "free nvidia.com/gpu in one NVLink clique" in failure_hint("Unschedulable", serving)
    assert "free nvidia.com/gpu in one NVLink clique" in failure_hint("Unschedulable", None)
