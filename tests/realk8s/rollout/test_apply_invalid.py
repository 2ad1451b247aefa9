"""What `apply` does with the refusals the real API server gives: the ComputeDomain CRD's own CEL rule on an
immutable spec, a Job's immutable template (the real batch validation), the real LWS admission webhook's denial."""

from __future__ import annotations

import pytest

from k3deploy.errors import UsageError
from k3deploy.kube.api import KubeApi
from k3deploy.kube.client import KubeOptions
from k3deploy.profile import load_profile
from k3deploy.render.manifests import build
from k3deploy.targets.kubernetes.apply import apply_object
from tests.realk8s.client import resource_path
from tests.realk8s.cluster_fixtures import LWS, NO_DRA, PROFILE, Deployment

pytestmark = [pytest.mark.realk8s, pytest.mark.timeout(300)]


def _rendered(deploy: Deployment, kind: str, *sets: str) -> dict:
    profile = load_profile(PROFILE, [f"kubernetes.namespace={deploy.namespace}", *sets])
    return next(m.obj for m in build(profile) if m.obj["kind"] == kind)


def _api(deploy: Deployment) -> KubeApi:
    deploy.create_namespace()
    return KubeApi(KubeOptions(kubeconfig=str(deploy.plane.admin_kubeconfig)))


def test_a_compute_domain_made_from_other_settings_is_an_error_naming_the_field_and_down(deploy: Deployment) -> None:
    """The ComputeDomain CRD's `self == oldSelf` rule (NVIDIA k8s-dra-driver-gpu, computedomains CRD), evaluated by
    the real API server, refuses the change; apply must not delete a domain the workers use, so it stops with the
    object, the field and `down`."""
    ns = deploy.namespace
    cd = _rendered(deploy, "ComputeDomain")
    cd["spec"]["numNodes"] = 4  # as an older k3deploy release rendered it
    deploy.create_namespace()
    path = resource_path(cd["apiVersion"], "computedomains", ns, cd["metadata"]["name"])
    deploy.plane.api.apply(path, cd, manager="k3deploy")
    result = deploy.k3("apply", "--timeout", "30s", dra=True)
    assert result.returncode == 2, result.stderr
    error = next(line for line in result.stderr.splitlines() if line.startswith("error:"))
    assert error.startswith(f"error: apply {ns}/ComputeDomain/{cd['metadata']['name']}: spec cannot change in place: ")
    assert "A computeDomain.spec is immutable" in error
    assert "`k3deploy down`" in next(line for line in result.stderr.splitlines() if line.startswith("hint:"))
    assert deploy.plane.api.get(path)["spec"]["numNodes"] == 4
    assert deploy.get("leaderworkersets", LWS) is None


def test_a_job_with_a_changed_template_is_recreated(deploy: Deployment) -> None:
    """A Job's template is immutable (kubernetes pkg/apis/batch/validation ValidateJobSpecUpdate): k3deploy's own
    run-to-completion Jobs are deleted and created again."""
    api = _api(deploy)
    job = _rendered(deploy, "Job", NO_DRA[1])
    apply_object(api, job)
    job["spec"]["template"]["metadata"].setdefault("labels", {})["changed"] = "yes"
    assert apply_object(api, job).action == "replaced"
    live = deploy.get("jobs", job["metadata"]["name"])
    assert live is not None and live["spec"]["template"]["metadata"]["labels"]["changed"] == "yes"


def test_a_webhook_denial_is_a_usage_error_not_a_permission_problem(deploy: Deployment) -> None:
    """The real LWS validating webhook (kubernetes-sigs/lws pkg/webhooks/leaderworkerset_webhook.go) denies size 0
    with a 403 that is no RBAC refusal."""
    api = _api(deploy)
    lws = _rendered(deploy, "LeaderWorkerSet", NO_DRA[1])
    lws["spec"]["leaderWorkerTemplate"]["size"] = 0
    with pytest.raises(UsageError) as exc:
        apply_object(api, lws)
    assert "rejected by an admission webhook" in str(exc.value)
    assert "size must be equal or greater than 1" in str(exc.value)
    assert "RBAC" not in exc.value.hint
