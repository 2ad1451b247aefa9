"""Waiting and diagnosing on the real plane: each way a rollout fails, produced the real way (cordoned nodes for
the real scheduler, KWOK Stages for image pulls, crash loops, failing and never-ready containers, the real Job,
resourceclaim and garbage collector controllers)."""

from __future__ import annotations

import re

import pytest

from tests.realk8s.cluster_fixtures import LWS, TIMEOUT, UNSCHEDULABLE_GRACE, Deployment
from tests.realk8s.stages import CRASH_LOOP_IMAGE, EXITS_IMAGE, NEVER_READY_IMAGE, PULL_FAILS_IMAGE, serving_image

pytestmark = [pytest.mark.realk8s, pytest.mark.timeout(600)]
#: The last GB300 tray of each of the plane's three cliques of four (tests/realk8s/objects.gb300_nodes).
ONE_PER_CLIQUE = ("gb300-04", "gb300-08", "gb300-12")


def diagnosis(stderr: str) -> str:
    """The diagnosis block of a failed run (from `failed:` to the summary)."""
    start = stderr.index("failed: ")
    return stderr[start : stderr.index("summary (", start)]


def test_not_enough_gpus_in_one_clique_is_unschedulable_with_the_scheduler_message(deploy: Deployment) -> None:
    deploy.cordon(*ONE_PER_CLIQUE)
    result = deploy.k3("apply", *TIMEOUT, *UNSCHEDULABLE_GRACE)
    assert result.returncode == 1, result.stderr
    block = diagnosis(result.stderr)
    assert block.startswith(f"failed: Pod/{LWS}-0-")
    assert "  reason: Unschedulable\n" in block
    assert "nodes are available" in block and "FailedScheduling" in block
    assert "hint: the group needs nodes with free nvidia.com/gpu in one NVLink clique" in result.stderr


def test_image_pull_failure_fails_fast(deploy: Deployment) -> None:
    result = deploy.k3("apply", *TIMEOUT, *serving_image(PULL_FAILS_IMAGE))
    assert result.returncode == 1, result.stderr
    block = diagnosis(result.stderr)
    assert "  reason: ImagePullBackOff\n" in block
    assert f"error: Pod/{LWS}-0" in result.stderr and ": ImagePullBackOff" in result.stderr
    assert "hint: check vllm.image" in result.stderr


def test_crash_loop_shows_the_crashed_containers_log(deploy: Deployment) -> None:
    deploy.logs(["vllm"], ["Loading safetensors shard 12/96", "RuntimeError: NCCL error: unhandled cuda error"])
    result = deploy.k3("apply", *TIMEOUT, *serving_image(CRASH_LOOP_IMAGE))
    assert result.returncode == 1, result.stderr
    block = diagnosis(result.stderr)
    assert "  reason: CrashLoop" in block
    assert "    | RuntimeError: NCCL error: unhandled cuda error\n" in block
    assert f"last log lines of {LWS}-0" in block


def test_prefetch_job_failure_stops_before_the_leaderworkerset(deploy: Deployment) -> None:
    # restartPolicy OnFailure: the container restarts in place until the real Job controller counts its restarts
    # past backoffLimit.
    deploy.logs(["prefetch"], ["fetching moonshotai/Kimi-K3@main", "huggingface_hub.errors.GatedRepoError: 401"])
    result = deploy.k3("apply", *TIMEOUT, "--set", f"kubernetes.prefetch_image={CRASH_LOOP_IMAGE}")
    assert result.returncode == 1, result.stderr
    block = diagnosis(result.stderr)
    assert re.match(rf"failed: Job/{LWS}-prefetch-[0-9a-f]{{8}}\n  reason: BackoffLimitExceeded\n", block), block
    assert "    | huggingface_hub.errors.GatedRepoError: 401\n" in block
    assert deploy.get("leaderworkersets", LWS) is None

    # Once the cause is fixed (another image: another spec, so another Job), a re-run completes the download.
    rerun = deploy.k3("apply", *TIMEOUT)
    assert rerun.returncode == 0, rerun.stderr
    assert re.search(rf"{deploy.namespace}/Job/{LWS}-prefetch-[0-9a-f]{{8}} created", rerun.stderr), rerun.stderr


def test_failing_node_preflight_pod_stops_before_the_weight_cache_with_its_report(deploy: Deployment) -> None:
    deploy.logs(
        ["node-preflight"],
        [
            '{"profile": "kimi-k3-gb300-tp16", "status": "fail", "checks": []}',
            "error: preflight failed 1 check(s): fabric.state",
        ],
    )
    result = deploy.k3("apply", *TIMEOUT, "--set", f"kubernetes.smoke_image={EXITS_IMAGE}")
    assert result.returncode == 1, result.stderr
    block = diagnosis(result.stderr)
    assert block.startswith(f"failed: Job/{LWS}-node-preflight\n  reason: BackoffLimitExceeded\n")
    assert "    | error: preflight failed 1 check(s): fabric.state\n" in block
    # Nothing after it was applied: no weight cache, no download, no serving group.
    assert deploy.get("persistentvolumeclaims", f"{LWS}-model-cache") is None
    assert not [j for j in deploy.list("jobs") if j["metadata"]["name"].startswith(f"{LWS}-prefetch-")]
    assert deploy.get("leaderworkersets", LWS) is None


def test_deadline_exceeded_exits_3_with_what_was_pending(deploy: Deployment) -> None:
    result = deploy.k3("apply", "--timeout", "60s", *serving_image(NEVER_READY_IMAGE))
    assert result.returncode == 3, result.stderr
    assert f"error: LeaderWorkerSet/{LWS} not ready before the deadline (60s)" in result.stderr
    assert f"failed: LeaderWorkerSet/{LWS}" in result.stderr
    assert "hint: raise --timeout" in result.stderr


def test_a_replaced_job_is_judged_without_the_old_jobs_pods(deploy: Deployment) -> None:
    """Garbage collection is asynchronous (kubernetes pkg/controller/garbagecollector): the failed node-preflight
    Job's pods are still listed, with the same job-name label, while its replacement runs; they are not the new
    Job's. A finalizer of the test's own holds them for the real garbage collector as a slow one would."""
    deploy.logs(["node-preflight"], ["error: fabric.state"])
    first = deploy.k3("apply", *TIMEOUT, "--set", f"kubernetes.smoke_image={EXITS_IMAGE}")
    assert first.returncode == 1, first.stderr
    old = [p["metadata"]["name"] for p in deploy.pods(f"{LWS}-node-preflight") if p["status"]["phase"] == "Failed"]
    assert old
    for name in old:
        path = deploy.path("pods", name)
        deploy.patch(path, {"metadata": {"finalizers": ["realk8s.k3deploy.test/hold"]}})
        deploy.on_teardown(lambda p=path: deploy.patch(p, {"metadata": {"finalizers": None}}))
    rerun = deploy.k3("apply", *TIMEOUT, "--set", "kubernetes.unschedulable_grace_s=30")
    assert rerun.returncode == 0, rerun.stderr
    assert f"{deploy.namespace}/Job/{LWS}-node-preflight replaced" in rerun.stderr
    assert all(deploy.get("pods", name) is not None for name in old)
    assert not [name for name in old if name in rerun.stderr]


def test_a_claim_on_a_missing_resource_claim_template_is_diagnosed_as_what_it_is(deploy: Deployment) -> None:
    """The real resourceclaim controller (kubernetes pkg/controller/resourceclaim/controller.go) cannot make the
    pod's ResourceClaim and records FailedResourceClaimCreation; the real scheduler's DynamicResources PreEnqueue
    holds the pod without any condition. Miswired here: the channel template has another name (no DRA driver runs
    to make the ComputeDomain's: the DRA stand-in is paused for the test)."""
    deploy.create_namespace()
    template = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": f"{LWS}-channel", "namespace": deploy.namespace},
        "spec": {"spec": {}},
    }
    deploy.plane.api.create(deploy.path("resourceclaimtemplates"), template)
    # Within the grace period the template could still appear (the driver makes it from the ComputeDomain).
    assert deploy.plane.dra is not None
    with deploy.plane.dra.paused():
        result = deploy.k3("apply", *TIMEOUT, "--set", "kubernetes.unschedulable_grace_s=2", dra=True)
    assert result.returncode == 1, result.stderr
    block = diagnosis(result.stderr)
    assert block.startswith(f"failed: Pod/{LWS}-0\n  reason: ResourceClaimTemplateNotFound\n")
    assert (
        f'names ResourceClaimTemplate "{LWS}-compute-domain-channel", which does not exist in the '
        f"namespace (templates there: {LWS}-channel)"
    ) in block
    assert (
        f"Warning FailedResourceClaimCreation Pod/{LWS}-0: PodResourceClaim compute-domain-channel: resource claim "
        f'template "{LWS}-compute-domain-channel": resourceclaimtemplate.resource.k8s.io '
        f'"{LWS}-compute-domain-channel" not found'
    ) in block
    assert "hint: the pods' resourceClaimTemplateName must be the ComputeDomain's" in result.stderr
