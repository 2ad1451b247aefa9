"""Blue-green cut short on the real plane: leftovers past the switch are cleared by the next `up`, an abandoned roll
puts the previous revision's profile ConfigMap back, and an API 5xx during the apply (a real admission webhook that
cannot be called) is rolled back like any rollout failure."""

from __future__ import annotations

import pytest

from k3deploy.rollout.colours import preview_name, preview_service
from tests.realk8s import release
from tests.realk8s.client import resource_path
from tests.realk8s.cluster_fixtures import NEW_IMAGE
from tests.realk8s.plane import Plane
from tests.realk8s.release import LWS_API, live_lws, up
from tests.realk8s.test_rollout import LWS
from tests.smoke.scripted_server import Script, scripted_server

release_ns = release.release_ns  # the fixture, used by name
pytestmark = [pytest.mark.realk8s, pytest.mark.timeout(600)]
GREEN = LWS + "-green"
API_SERVICE = f"{LWS}-api"
PROFILE_MAP = f"{LWS}-profile"
GOOD = Script(models=["moonshotai/Kimi-K3"], tokens_per_chunk=[4, 4, 4, 4])
ADMISSION = "admissionregistration.k8s.io/v1"


def _blue_green(plane: Plane, namespace: str, group_url: str, endpoint: str) -> object:
    return up(
        plane, namespace, "--strategy", "blue-green", *NEW_IMAGE, "--endpoint", endpoint, "--group-endpoint", group_url
    )


def _bare(obj: dict) -> dict:
    """An object as a client would create it again: no server-set metadata, no status."""
    meta = obj["metadata"]
    keep = {k: meta[k] for k in ("name", "namespace", "labels", "annotations") if k in meta}
    return {"apiVersion": obj["apiVersion"], "kind": obj["kind"], "metadata": keep, "spec": obj["spec"]}


def test_leftovers_past_the_switch_are_cleared_by_the_next_up(realk8s: Plane, release_ns: str) -> None:
    namespace = release_ns
    assert up(realk8s, namespace, "--skip-smoke").returncode == 0
    blue = _bare(live_lws(realk8s, namespace))
    with scripted_server(GOOD) as server:
        switched = _blue_green(realk8s, namespace, server.url, server.url)
    assert switched.returncode == 0, switched.stderr
    # What an interrupt between the switch and the clean-up leaves: the old group and the new group's preview.
    api = realk8s.api
    api.create(resource_path(LWS_API, "leaderworkersets", namespace), blue)
    service = _bare(api.get(resource_path("v1", "services", namespace, API_SERVICE)))
    service["spec"] = {k: v for k, v in service["spec"].items() if k not in ("clusterIP", "clusterIPs")}
    api.create(resource_path("v1", "services", namespace), preview_service(service, GREEN))
    rerun = up(realk8s, namespace, "--skip-smoke", *NEW_IMAGE)
    assert rerun.returncode == 0, rerun.stderr
    assert f"blue-green leftover: deleted {namespace}/LeaderWorkerSet/{LWS}" in rerun.stderr, rerun.stderr
    assert live_lws(realk8s, namespace) is None
    assert api.find(resource_path("v1", "services", namespace, preview_name(GREEN))) is None
    assert live_lws(realk8s, namespace, GREEN) is not None


def test_an_abandoned_roll_restores_the_profile_configmap(realk8s: Plane, release_ns: str) -> None:
    namespace = release_ns
    assert up(realk8s, namespace, "--skip-smoke").returncode == 0
    before = realk8s.api.get(resource_path("v1", "configmaps", namespace, PROFILE_MAP))["data"]
    with scripted_server(GOOD) as good, scripted_server(Script(models=["someone-else/model"])) as bad:
        rejected = _blue_green(realk8s, namespace, bad.url, good.url)
    assert rejected.returncode == 1, rejected.stderr
    assert "blue-green abandoned" in rejected.stderr, rejected.stderr
    assert realk8s.api.get(resource_path("v1", "configmaps", namespace, PROFILE_MAP))["data"] == before
    assert live_lws(realk8s, namespace, GREEN) is None and live_lws(realk8s, namespace) is not None


def _refuse_services(plane: Plane, namespace: str, operation: str) -> str:
    """A webhook nobody serves, failurePolicy Fail: the API server answers 500 (failed calling webhook) to every
    `operation` (CREATE, UPDATE) of a Service in `namespace`; its name (cluster-scoped: the caller deletes it)."""
    webhook = f"deny-services-{operation.lower()}-{namespace}"
    rule = {"apiGroups": [""], "apiVersions": ["v1"], "operations": [operation], "resources": ["services"]}
    plane.api.create(
        resource_path(ADMISSION, "validatingwebhookconfigurations"),
        {
            "apiVersion": ADMISSION,
            "kind": "ValidatingWebhookConfiguration",
            "metadata": {"name": webhook},
            "webhooks": [
                {
                    "name": "deny.services.k3deploy.test",
                    "clientConfig": {"url": "https://127.0.0.1:1/deny"},
                    "rules": [rule],
                    "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": namespace}},
                    "failurePolicy": "Fail",
                    "sideEffects": "None",
                    "admissionReviewVersions": ["v1"],
                    "timeoutSeconds": 2,
                }
            ],
        },
    )
    return webhook


def test_an_api_5xx_during_the_blue_green_apply_is_rolled_back(realk8s: Plane, release_ns: str) -> None:
    namespace = release_ns
    assert up(realk8s, namespace, "--skip-smoke").returncode == 0
    # The preview Service, applied after the new group, is refused.
    webhook = _refuse_services(realk8s, namespace, "CREATE")
    try:
        with scripted_server(GOOD) as server:
            failed = _blue_green(realk8s, namespace, server.url, server.url)
    finally:
        realk8s.api.delete(resource_path(ADMISSION, "validatingwebhookconfigurations", name=webhook))
    assert failed.returncode == 3, failed.stderr
    assert "blue-green apply of " in failed.stderr and "==> rollback" in failed.stderr, failed.stderr
    assert "blue-green abandoned" in failed.stderr, failed.stderr
    assert live_lws(realk8s, namespace, GREEN) is None
    assert live_lws(realk8s, namespace) is not None


def test_a_persistent_5xx_on_the_api_service_still_removes_the_new_group_then_reports(
    realk8s: Plane, release_ns: str
) -> None:
    """Every write of a Service in the namespace answered 500 once the first install is up: the blue-green's
    writes of the API Service fail, and so does the rollback's restore of it. Before: the restore came first and
    the rollback stopped there, the new group left beside the live one; now it is deleted (the API Service does
    not select it), then the failure is reported."""
    namespace = release_ns
    assert up(realk8s, namespace, "--skip-smoke").returncode == 0
    webhook = _refuse_services(realk8s, namespace, "UPDATE")
    try:
        with scripted_server(GOOD) as server:
            failed = _blue_green(realk8s, namespace, server.url, server.url)
    finally:
        realk8s.api.delete(resource_path(ADMISSION, "validatingwebhookconfigurations", name=webhook))
    assert failed.returncode == 3, failed.stderr
    line = next(line for line in failed.stderr.splitlines() if "FAIL rollback:" in line)
    assert f"LeaderWorkerSet/{GREEN}" in line and "deny.services.k3deploy.test" in line, line
    assert live_lws(realk8s, namespace, GREEN) is None
    assert live_lws(realk8s, namespace) is not None
    service = realk8s.api.get(resource_path("v1", "services", namespace, API_SERVICE))
    assert service["spec"]["selector"]["leaderworkerset.sigs.k8s.io/name"] == LWS
