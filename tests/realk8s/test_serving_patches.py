"""The profile's serving pod and container patches reach the cluster on the `apply`/`up` path: the LeaderWorkerSet
the real API server holds carries them, its pods run (the Namespace enforces the level the patch needs), and the
compile cache is mounted from the weight PVC."""

from __future__ import annotations

import pytest

from tests.realk8s.cluster_fixtures import LWS, TIMEOUT, Deployment

pytestmark = [pytest.mark.realk8s, pytest.mark.timeout(600)]

PATCH = (
    'kubernetes.serving_container_patch={"securityContext": {"capabilities": {"add": ["IPC_LOCK", "SYS_RESOURCE"]}}}'
)


def test_apply_carries_the_patches_to_the_live_set(deploy: Deployment) -> None:
    result = deploy.k3("apply", *TIMEOUT, "--set", PATCH, "--set", "kubernetes.pod_security_level=privileged")
    assert result.returncode == 0, result.stderr
    lws = deploy.get("leaderworkersets", LWS)
    assert lws is not None
    for role in ("leaderTemplate", "workerTemplate"):
        spec = lws["spec"]["leaderWorkerTemplate"][role]["spec"]
        [vllm] = [c for c in spec["containers"] if c["name"] == "vllm"]
        assert vllm["securityContext"]["capabilities"]["add"] == ["IPC_LOCK", "SYS_RESOURCE"]
        assert any(m["name"] == "model-cache" and "subPathExpr" in m for m in vllm["volumeMounts"])
    leader = deploy.get("pods", f"{LWS}-0")
    assert leader is not None and leader["status"]["phase"] == "Running"
    namespace = deploy.plane.api.find(f"/api/v1/namespaces/{deploy.namespace}")
    assert namespace["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "privileged"
