"""`apply` with an apply configuration the installed CRD does not know: one request, then a clear error (the request
count needs the test API server's request log until the fault proxy serves one). Immutable fields and webhook
denials are tested on the real plane (tests/realk8s/rollout/test_apply_invalid.py).
"""

from __future__ import annotations

from typing import Any

import pytest

from k3deploy.errors import UsageError
from k3deploy.kube.api import KubeApi
from k3deploy.kube.client import KubeOptions
from k3deploy.profile import load_profile
from k3deploy.render.manifests import build
from k3deploy.rollout.apply import apply_object
from tests.kubeapi import crds
from tests.rollout.conftest import NAMESPACE, PROFILE

pytestmark = pytest.mark.timeout(180)


def _rendered(kind: str) -> dict:
    return next(m.obj for m in build(load_profile(PROFILE, [])) if m.obj["kind"] == kind)


@pytest.fixture
def api(cluster: Any) -> KubeApi:
    """KubeApi on the strict test cluster (upstream CRDs required), the profile's namespace created."""
    crds.require()
    cluster.controllers.disable()
    cluster.store.create("namespaces", {"metadata": {"name": NAMESPACE}})
    return KubeApi(KubeOptions(kubeconfig=str(cluster.kubeconfig)))


def test_a_field_the_installed_crd_lacks_is_a_usage_error_at_once(api: KubeApi, cluster: Any) -> None:
    """An apply configuration with an undeclared field fails the typed conversion with a 500 (structured-merge-diff
    typed/validate.go; kubernetes/kubernetes#139253) that no retry changes: one request, then a clear error."""
    lws = _rendered("LeaderWorkerSet")
    lws["spec"]["leaderWorkerTemplate"]["restartPolicyV2"] = "RecreateGroupAfterStart"
    before = len(cluster.faults.requests)
    with pytest.raises(UsageError) as exc:
        apply_object(api, lws)
    assert ".spec.leaderWorkerTemplate.restartPolicyV2: field not declared in schema" in str(exc.value)
    patches = [r for r in cluster.faults.requests[before:] if r.startswith("PATCH ")]
    assert len(patches) == 1
