"""`apply` with an apply configuration the installed CRD does not know, against the real API server: the typed
conversion of a server-side apply fails with a 500 (structured-merge-diff typed/validate.go;
kubernetes/kubernetes#139253) that no retry changes, so one request, then a usage error naming the field. The fault
proxy, with no rule, only counts the requests."""

from __future__ import annotations

import pytest

from k3deploy.errors import UsageError
from k3deploy.kube.api import KubeApi
from k3deploy.kube.client import KubeOptions
from k3deploy.profile import load_profile
from k3deploy.render.manifests import build
from k3deploy.targets.kubernetes.apply import apply_object
from tests.realk8s.client import resource_path
from tests.realk8s.cluster_fixtures import NO_DRA, PROFILE
from tests.realk8s.fault_fixtures import ProxiedPlane
from tests.realk8s.plane import Plane

pytestmark = [pytest.mark.realk8s, pytest.mark.timeout(180)]


def test_a_field_the_installed_crd_lacks_is_a_usage_error_at_once(
    realk8s: Plane, fault_proxy: ProxiedPlane, namespace: str
) -> None:
    profile = load_profile(PROFILE, [f"kubernetes.namespace={namespace}", NO_DRA[1]])
    lws = next(m.obj for m in build(profile) if m.obj["kind"] == "LeaderWorkerSet")
    lws["spec"]["leaderWorkerTemplate"]["restartPolicyV2"] = "RecreateGroupAfterStart"
    api = KubeApi(KubeOptions(kubeconfig=str(fault_proxy.kubeconfig)))
    before = len(fault_proxy.faults.requests)
    with pytest.raises(UsageError) as exc:
        apply_object(api, lws)
    assert ".spec.leaderWorkerTemplate.restartPolicyV2: field not declared in schema" in str(exc.value)
    patches = [r for r in fault_proxy.faults.requests[before:] if r.startswith("PATCH ")]
    assert len(patches) == 1, patches
    # Nothing was created.
    path = resource_path("leaderworkerset.x-k8s.io/v1", "leaderworkersets", namespace, lws["metadata"]["name"])
    assert realk8s.api.find(path) is None
