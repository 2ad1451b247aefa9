"""Preflight reads the installed LWS controller's and NVIDIA DRA driver's versions from their real workloads on the
API server (the plane's `lws-controller-manager` Deployment, the DRA driver's Deployment and DaemonSet as its chart
names them) and compares them with what the rendered set needs (the pure comparison: tests/preflight/test_versions.py)."""

from __future__ import annotations

import pytest

from k3deploy.report.model import Status
from tests.realk8s.client import resource_path
from tests.realk8s.preflight.cluster import DRA_NAMESPACE, DRA_WORKLOADS, PreflightCluster

pytestmark = [pytest.mark.realk8s, pytest.mark.timeout(300)]
LWS_DEPLOYMENT = resource_path("apps/v1", "deployments", "lws-system", "lws-controller-manager")


def _versions(cluster: PreflightCluster) -> dict:
    return {n: r for n, r in cluster.preflight().items() if n.endswith("_version")}


def test_preflight_fails_old_controllers_and_warns_when_none_is_found(cluster: PreflightCluster) -> None:
    assert {n: r.status for n, r in _versions(cluster).items()} == {
        "k8s.lws_version": Status.PASS,
        "k8s.dra_driver_version": Status.PASS,
    }

    live = cluster.api.get(LWS_DEPLOYMENT)
    containers = live["spec"]["template"]["spec"]["containers"]
    old = [{**containers[0], "image": "registry.k8s.io/lws/lws:v0.3.0"}]
    cluster.patch(LWS_DEPLOYMENT, {"spec": {"template": {"spec": {"containers": old}}}})
    cluster.on_teardown(
        lambda: cluster.patch(LWS_DEPLOYMENT, {"spec": {"template": {"spec": {"containers": containers}}}})
    )
    for name, plural in DRA_WORKLOADS:
        cluster.remove(resource_path("apps/v1", plural, DRA_NAMESPACE, name))
    results = _versions(cluster)
    lws, dra = results["k8s.lws_version"], results["k8s.dra_driver_version"]
    assert (lws.status, lws.measured, lws.target) == (Status.FAIL, "v0.3.0", ">= v0.9.0")
    assert "flat resourceClaims[].resourceClaimTemplateName needs v0.4.0" in lws.detail
    assert (dra.status, dra.measured) == (Status.WARN, "not found")
