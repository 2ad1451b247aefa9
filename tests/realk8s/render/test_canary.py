"""The rendered canary on the real plane: its objects apply; a Job made from its CronJob the way `kubectl create job
--from=cronjob/...` makes one (the job template, owned by the CronJob, annotated as a manual instantiation) gets its
pod from the real Job controller, admitted by the real PodSecurity plugin at the namespace's level ("restricted",
stricter than the release's baseline); the same Job with a root container is refused. With a real token of the
canary's ServiceAccount, the real authorizer lets `bench --report-configmap`'s write through and nothing else."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from k3deploy.errors import KubeError
from k3deploy.kube.api import KubeApi
from k3deploy.kube.options import KubeOptions
from k3deploy.observe.canary_report import keep, read
from k3deploy.profile import load_profile
from k3deploy.render.manifests import COMPONENT_LABEL, build
from tests.bench.test_ab import _report
from tests.realk8s.client import resource_path, wait_until
from tests.realk8s.plane import Plane
from tests.realk8s.render.test_rbac import _kubeconfig, _token

pytestmark = [pytest.mark.realk8s, pytest.mark.timeout(300)]
K3 = "kimi-k3-gb300-tp16"
API = {
    "ServiceAccount": ("v1", "serviceaccounts"),
    "Role": ("rbac.authorization.k8s.io/v1", "roles"),
    "RoleBinding": ("rbac.authorization.k8s.io/v1", "rolebindings"),
    "ConfigMap": ("v1", "configmaps"),
    "CronJob": ("batch/v1", "cronjobs"),
}


def _canary_set(namespace: str) -> list[dict[str, Any]]:
    """The canary's objects and the profile ConfigMap its pod mounts, rendered for `namespace`."""
    profile = load_profile(
        K3,
        [
            f"kubernetes.namespace={namespace}",
            "observe.canary.enabled=true",
            "observe.pushgateway_url=http://pushgateway.monitoring.svc:9091",
        ],
    )
    objects = [m.obj for m in build(profile)]
    wanted = {"canary", "canary-dataset", "canary-report", "profile"}
    return [o for o in objects if o["metadata"]["labels"].get(COMPONENT_LABEL) in wanted]


def _job_from(cron: dict[str, Any], name: str) -> dict[str, Any]:
    """What `kubectl create job NAME --from=cronjob/CRON` sends (kubectl pkg/cmd/create/create_job.go
    createJobFromCronJob): the job template, the instantiate annotation, the CronJob as controlling owner."""
    template = cron["spec"]["jobTemplate"]
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": name,
            "namespace": cron["metadata"]["namespace"],
            "labels": dict(template["metadata"].get("labels") or {}),
            "annotations": {"cronjob.kubernetes.io/instantiate": "manual"},
            "ownerReferences": [
                {
                    "apiVersion": "batch/v1",
                    "kind": "CronJob",
                    "name": cron["metadata"]["name"],
                    "uid": cron["metadata"]["uid"],
                    "controller": True,
                }
            ],
        },
        "spec": template["spec"],
    }


def _events(realk8s: Plane, namespace: str, job: str) -> str:
    items = realk8s.api.get(f"/api/v1/namespaces/{namespace}/events")["items"]
    return " ".join(e.get("message", "") for e in items if e["involvedObject"].get("name") == job)


def test_a_job_from_the_cronjob_runs_a_pod_admitted_at_restricted_and_the_canary_writes_only_its_report(
    realk8s: Plane, namespace: str, tmp_path: Path
) -> None:
    realk8s.api.apply(
        f"/api/v1/namespaces/{namespace}",
        {
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {"name": namespace, "labels": {"pod-security.kubernetes.io/enforce": "restricted"}},
        },
    )
    created: dict[str, dict[str, Any]] = {}
    for obj in _canary_set(namespace):
        api_version, plural = API[obj["kind"]]
        path = resource_path(api_version, plural, namespace, obj["metadata"]["name"])
        created[f"{obj['kind']}/{obj['metadata']['labels'][COMPONENT_LABEL]}"] = realk8s.api.apply(path, obj)
    cron = created["CronJob/canary"]
    assert cron["spec"]["concurrencyPolicy"] == "Forbid"

    jobs = resource_path("batch/v1", "jobs", namespace)
    realk8s.api.create(jobs, _job_from(cron, "canary-manual"))
    pods = f"/api/v1/namespaces/{namespace}/pods"

    def pod_of(job: str) -> dict[str, Any] | None:
        items = realk8s.api.get(pods + f"?labelSelector=batch.kubernetes.io/job-name%3D{job}")["items"]
        return items[0] if items else None

    pod = wait_until("the Job controller's pod", lambda: pod_of("canary-manual"), 120)
    assert pod["spec"]["serviceAccountName"] == f"{K3}-canary"
    assert pod["spec"]["containers"][0]["args"][0] == "bench"

    # The judge: the same Job with a container that may run as root is refused by the same admission.
    rooted = _job_from(cron, "canary-rooted")
    rooted["spec"]["template"]["spec"]["securityContext"].pop("runAsNonRoot")
    realk8s.api.create(jobs, rooted)
    refused = wait_until(
        "the Job controller's refused create", lambda: _events(realk8s, namespace, "canary-rooted") or None, 120
    )
    assert "violates PodSecurity" in refused and pod_of("canary-rooted") is None

    token = _token(realk8s, namespace, f"{K3}-canary")
    api = KubeApi(
        KubeOptions(kubeconfig=str(_kubeconfig(tmp_path / "kubeconfig", realk8s.url, realk8s.ca_file, token)))
    )
    try:
        report = _report("canary", {1: 352.0})
        keep(api, f"{namespace}/{K3}-canary-report", report, 256 * 1024)
        kept = read(api, namespace, f"{K3}-canary-report")
        assert kept is not None and kept.overall[0].decode_tok_s.median == 352.0
        with pytest.raises(KubeError) as refused_read:
            api.get("v1", "ConfigMap", f"{K3}-profile", namespace)
        assert refused_read.value.status == 403
    finally:
        api.close()
