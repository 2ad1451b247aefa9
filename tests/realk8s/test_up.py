"""`k3deploy up` on the real plane: preflight against the real API (RBAC, nodes, storage, the LWS release), apply,
wait on the real controllers, smoke through --endpoint against a scripted server; then a template change rolls out
through the real LWS controller."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest

from tests.pin.distribution import Distribution
from tests.preflight.test_checks_pinning import PINNED
from tests.realk8s.client import resource_path
from tests.realk8s.cluster_fixtures import QUICK, UP
from tests.realk8s.plane import Plane
from tests.realk8s.stages import CRASH_LOOP_IMAGE, PULL_FAILS_IMAGE, serving_image
from tests.realk8s.test_rollout import LWS, k3
from tests.smoke.scripted_server import Script, scripted_server

pytestmark = [pytest.mark.realk8s, pytest.mark.timeout(600)]


def test_up_with_preflight_and_smoke_then_a_template_change_rolls_out(
    realk8s: Plane,
    registry: Distribution,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("K3DEPLOY_REGISTRY_URL", registry.url)
    digest = registry.push_index("vllm/vllm-openai", "kimi-k3-aarch64-cu130", ["amd64", "arm64"])
    lws_version = realk8s.binaries.versions["LWS_VERSION"].lstrip("v")
    pinned = [
        arg
        for s in [
            *PINNED,
            f"vllm.image=vllm/vllm-openai:kimi-k3-aarch64-cu130@{digest}",
            f"kubernetes.lws_version={lws_version}",
        ]
        for arg in ("--set", s)
    ]
    namespace = f"k3-{uuid.uuid4().hex[:8]}"
    with scripted_server(Script(models=["moonshotai/Kimi-K3"], tokens_per_chunk=[4, 4, 4, 4])) as endpoint:
        first = k3(realk8s, namespace, "up", *UP, *pinned, "--endpoint", endpoint.url, "-o", "json")
        assert first.returncode == 0, first.stderr
        report = json.loads(first.stdout)
        assert [(s["name"], s["status"]) for s in report["stages"]] == [
            ("preflight", "pass"),
            ("render", "pass"),
            ("apply", "pass"),
            ("wait", "pass"),
            ("smoke", "pass"),
        ]
        assert endpoint.counters.requests >= 2

    api = realk8s.api
    path = resource_path("leaderworkerset.x-k8s.io/v1", "leaderworkersets", namespace, LWS)
    before = {p["metadata"]["name"]: p["metadata"]["uid"] for p in _group_pods(realk8s, namespace)}
    changed = k3(realk8s, namespace, "apply", *UP[:2], *pinned, "--yes", "--set", "vllm.max_model_len=524288")
    assert changed.returncode == 0, changed.stderr
    live = api.get(path)
    assert live["status"]["updatedReplicas"] == 1 and live["status"]["readyReplicas"] == 1
    args = json.dumps(live["spec"]["leaderWorkerTemplate"]["leaderTemplate"]["spec"]["containers"][0])
    assert "524288" in args
    after = {p["metadata"]["name"]: p["metadata"]["uid"] for p in _group_pods(realk8s, namespace)}
    # The real LWS controller recreated the group: same names, new pods.
    assert sorted(after) == sorted(before) and not set(after.values()) & set(before.values())
    revisions = api.get(resource_path("apps/v1", "controllerrevisions", namespace))["items"]
    assert len([r for r in revisions if r["metadata"]["name"].startswith(LWS)]) >= 2

    state = json.loads(k3(realk8s, namespace, "status", "-o", "json").stdout)
    assert state["ready"] is True and state["revision"]["current"] == 2
    assert k3(realk8s, namespace, "down", "--yes", "--purge", "--timeout", "120s").returncode == 0


def _group_pods(plane: Plane, namespace: str) -> list[dict]:
    pods = plane.api.get(resource_path("v1", "pods", namespace))["items"]
    return [
        p
        for p in pods
        if p["metadata"]["labels"].get("leaderworkerset.sigs.k8s.io/name") == LWS
        and not p["metadata"].get("deletionTimestamp")
    ]


def test_an_upgrade_whose_image_never_pulls_rolls_back_through_the_real_controllers(realk8s: Plane) -> None:
    namespace = f"k3-{uuid.uuid4().hex[:8]}"
    quick = QUICK
    assert k3(realk8s, namespace, "up", *quick).returncode == 0
    path = resource_path("leaderworkerset.x-k8s.io/v1", "leaderworkersets", namespace, LWS)
    before = realk8s.api.get(path)["spec"]["leaderWorkerTemplate"]

    upgrade = k3(realk8s, namespace, "up", *quick, "--yes", *serving_image(PULL_FAILS_IMAGE))
    assert upgrade.returncode == 1, upgrade.stderr
    assert "ImagePullBackOff" in upgrade.stderr, upgrade.stderr
    assert "==> rollback (revision 1) because wait failed" in upgrade.stderr, upgrade.stderr
    assert "rollback: restored revision 1" in upgrade.stderr, upgrade.stderr
    live = realk8s.api.get(path)
    assert live["spec"]["leaderWorkerTemplate"] == before
    assert live["status"]["readyReplicas"] == 1
    images = {c["image"] for p in _group_pods(realk8s, namespace) for c in p["spec"]["containers"]}
    assert PULL_FAILS_IMAGE not in images
    assert k3(realk8s, namespace, "down", "--yes", "--purge", "--timeout", "120s").returncode == 0


def test_a_crash_looping_first_install_is_diagnosed_with_its_log_and_removed(realk8s: Plane, tmp_path: Path) -> None:
    namespace = f"k3-{uuid.uuid4().hex[:8]}"
    api = realk8s.api
    api.create("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
    # KWOK serves the leader's log (current and previous) through the real kube-apiserver's pod log proxy.
    log = tmp_path / "vllm.log"
    log.write_text(
        "2026-12-01T10:00:00.000000000Z stdout F loading weights\n"
        "2026-12-01T10:00:01.000000000Z stderr F RuntimeError: CUDA error: out of memory\n"
    )
    logs = {
        "apiVersion": "kwok.x-k8s.io/v1alpha1",
        "kind": "Logs",
        "metadata": {"name": f"{LWS}-0", "namespace": namespace},
        "spec": {"logs": [{"containers": ["vllm"], "logsFile": str(log), "previousLogsFile": str(log)}]},
    }
    api.create(resource_path("kwok.x-k8s.io/v1alpha1", "logs", namespace), logs)

    result = k3(realk8s, namespace, "up", "--skip-preflight", "--skip-smoke", *UP, *serving_image(CRASH_LOOP_IMAGE))
    assert result.returncode == 1, result.stderr
    assert "CrashLoopBackOff" in result.stderr, result.stderr
    assert "RuntimeError: CUDA error: out of memory" in result.stderr
    assert "==> rollback (first install) because wait failed" in result.stderr
    assert api.find(resource_path("leaderworkerset.x-k8s.io/v1", "leaderworkersets", namespace, LWS)) is None
    jobs = api.get(resource_path("batch/v1", "jobs", namespace))["items"]
    assert not [j for j in jobs if j["metadata"]["name"].startswith(f"{LWS}-prefetch-")]
    assert api.find(resource_path("v1", "services", namespace, f"{LWS}-api")) is None
    # The weights are kept (and so is their namespace).
    assert api.find(resource_path("v1", "persistentvolumeclaims", namespace, f"{LWS}-model-cache")) is not None
    assert api.find(f"/api/v1/namespaces/{namespace}") is not None
    assert k3(realk8s, namespace, "down", "--yes", "--purge", "--timeout", "120s").returncode == 0


def test_no_rollback_leaves_the_failed_revision_live(realk8s: Plane) -> None:
    namespace = f"k3-{uuid.uuid4().hex[:8]}"
    quick = QUICK
    result = k3(realk8s, namespace, "up", *quick, "--no-rollback", *serving_image(PULL_FAILS_IMAGE))
    assert result.returncode == 1, result.stderr
    assert "rollback: skipped (--no-rollback)" in result.stderr
    live = realk8s.api.get(resource_path("leaderworkerset.x-k8s.io/v1", "leaderworkersets", namespace, LWS))
    assert PULL_FAILS_IMAGE in json.dumps(live["spec"]["leaderWorkerTemplate"])
    not_ready = k3(realk8s, namespace, "status", "--exit-code", "-o", "json")
    assert not_ready.returncode == 1 and json.loads(not_ready.stdout)["ready"] is False, not_ready.stderr
    assert k3(realk8s, namespace, "down", "--yes", "--purge", "--timeout", "120s").returncode == 0
