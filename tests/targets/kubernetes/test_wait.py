"""The hint a failed wait gives, from what the real scheduler reported (pure); waiting itself is tested on the real
plane: each way a rollout fails in tests/realk8s/rollout/test_wait.py, broken watches and watching rather than
polling in tests/realk8s/test_faults.py."""

from __future__ import annotations

from k3deploy.targets.kubernetes.wait import failure_hint


def test_an_unschedulable_pod_without_a_gpu_request_is_not_told_to_find_gpus() -> None:
    # What the real scheduler reported for the prefetch Job's pod on a cluster of GPU-tainted nodes only.
    prefetch = {"spec": {"containers": [{"name": "fetch", "resources": {"requests": {"cpu": "2"}}}]}}
    serving = {"spec": {"containers": [{"name": "vllm", "resources": {"limits": {"nvidia.com/gpu": "4"}}}]}}
    assert "needs no GPU" in failure_hint("Unschedulable", prefetch)
    assert "nvidia.com/gpu taint" in failure_hint("Unschedulable", prefetch)
    assert "free nvidia.com/gpu in one NVLink clique" in failure_hint("Unschedulable", serving)
    assert "free nvidia.com/gpu in one NVLink clique" in failure_hint("Unschedulable", None)
