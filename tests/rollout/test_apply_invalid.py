"""What `apply` does with the refusals a strict API server gives: immutable fields (a ComputeDomain's spec, a Job's
template), admission webhook denials and apply configurations the installed CRD does not know.
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
from tests.rollout.conftest import K3, NAMESPACE, PROFILE

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


def test_a_compute_domain_made_from_other_settings_is_an_error_naming_the_field_and_down(k3: K3, cluster: Any) -> None:
    """The ComputeDomain CRD's `self == oldSelf` rule (NVIDIA k8s-dra-driver-gpu, computedomains CRD) refuses the
    change; apply must not delete a domain the workers use, so it stops with the object, the field and `down`."""
    crds.require()
    cd = _rendered("ComputeDomain")
    cd["spec"]["numNodes"] = 4  # as an older k3deploy release rendered it
    cluster.store.create("namespaces", {"metadata": {"name": NAMESPACE}})
    cluster.store.apply("computedomains", cd, NAMESPACE, manager="k3deploy")
    result = k3("apply", "--timeout", "30s")
    assert result.returncode == 2, result.stderr
    error = next(line for line in result.stderr.splitlines() if line.startswith("error:"))
    assert error.startswith(
        f"error: apply {NAMESPACE}/ComputeDomain/{cd['metadata']['name']}: spec cannot change in place: "
    )
    assert "A computeDomain.spec is immutable" in error
    assert "`k3deploy down`" in next(line for line in result.stderr.splitlines() if line.startswith("hint:"))
    assert cluster.store.get("computedomains", cd["metadata"]["name"], NAMESPACE)["spec"]["numNodes"] == 4
    assert cluster.store.get("leaderworkersets", PROFILE, NAMESPACE) is None


def test_a_job_with_a_changed_template_is_recreated(api: KubeApi, cluster: Any) -> None:
    """A Job's template is immutable (kubernetes pkg/apis/batch/validation ValidateJobSpecUpdate): k3deploy's own
    run-to-completion Jobs are deleted and created again."""
    job = _rendered("Job")
    apply_object(api, job)
    job["spec"]["template"]["metadata"].setdefault("labels", {})["changed"] = "yes"
    assert apply_object(api, job).action == "replaced"
    live = cluster.store.get("jobs", job["metadata"]["name"], NAMESPACE)
    assert live["spec"]["template"]["metadata"]["labels"]["changed"] == "yes"


def test_a_webhook_denial_is_a_usage_error_not_a_permission_problem(api: KubeApi) -> None:
    """kubernetes-sigs/lws pkg/webhooks/leaderworkerset_webhook.go denies size 0 with a 403 that is no RBAC refusal."""
    lws = _rendered("LeaderWorkerSet")
    lws["spec"]["leaderWorkerTemplate"]["size"] = 0
    with pytest.raises(UsageError) as exc:
        apply_object(api, lws)
    assert "rejected by an admission webhook" in str(exc.value)
    assert "size must be equal or greater than 1" in str(exc.value)
    assert "RBAC" not in exc.value.hint


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
