"""The rendered node-preflight and smoke Jobs of the built-in GB300 profile (the committed set under manifests/) run
on a real kubelet with its image replaced by a stand-in of the same name that reports what the kubelet gave it
(tests/realk8s/standins.py `K3DEPLOY`; it does not reach a server, the smoke itself is tested elsewhere): the pod's
uid and gid, no capabilities, no_new_privs, the RuntimeDefault seccomp profile, a read-only root file system (EROFS),
writable /tmp (and /dev/shm) and a read-only profile mount.

Placement is the one change besides the image: the real node is an amd64 machine without a GB300 (the kubelet owns
`kubernetes.io/arch`), so the node-preflight Job's node selector is replaced by the real nodes' own, and one node runs
one of its pods (completions and parallelism 1).

The optional k3deploy pods, which the committed set does not render (tests/realk8s/rendered_options.py), run the
same way: the in-cluster guard's Deployment (through the real Deployment controller, its pod serving until stopped),
the canary CronJob's pod (a Job made from its jobTemplate, as `kubectl create job --from=cronjob/...` does: the
schedule is the CronJob controller's, not the pod's) and the weight-staging DaemonSet (through the real DaemonSet
controller onto the real node, which carries a clique label as a tray does): its staging container as root writes
the tray folder, a hostPath the kubelet makes inside the node's own /var/lib, not the host's, and its prepull
container runs as declared."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.realk8s.binaries import REPO_ROOT
from tests.realk8s.client import resource_path, wait_until
from tests.realk8s.plane import Plane
from tests.realk8s.realnode import RealNode
from tests.realk8s.rendered_options import in_namespace, rendered_options
from tests.realk8s.standins import bind_claim, on_real_node
from tests.realk8s.test_rendered_serving_pods import _label_clique

pytestmark = [pytest.mark.realk8s, pytest.mark.timeout(300)]

SET = REPO_ROOT / "manifests" / "kimi-k3-gb300-tp16"
JOB_DONE_S = 120.0


def _rendered(name: str) -> dict[str, Any]:
    return yaml.safe_load((SET / name).read_text())


@pytest.mark.parametrize(
    "manifest", ["03-job-kimi-k3-gb300-tp16-node-preflight.yaml", "20-job-kimi-k3-gb300-tp16-smoke.yaml"]
)
def test_the_rendered_k3deploy_jobs_run_under_their_security_context(
    realk8s: Plane, real_node: RealNode, namespace: str, manifest: str
) -> None:
    job = _rendered(manifest)
    profile = _rendered("02-configmap-kimi-k3-gb300-tp16-profile.yaml")
    profile["metadata"]["namespace"] = namespace
    realk8s.api.create(resource_path("v1", "configmaps", namespace), profile)
    spec = job["spec"]["template"]["spec"]
    # The Job's own account: the set's, or the smoke gate's (which labels the leaders it gated: it has a token).
    account = {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": {"name": spec.get("serviceAccountName", "k3deploy")},
    }
    realk8s.api.create(resource_path("v1", "serviceaccounts", namespace), account)
    assert spec.pop("nodeSelector", None) in (
        None,
        {"kubernetes.io/arch": "arm64", "nvidia.com/gpu.product": "NVIDIA-GB300"},
    )
    container = spec["containers"][0]
    mounts = [m["mountPath"] for m in container["volumeMounts"]]
    container["env"].append({"name": "K3DEPLOY_STANDIN_PATHS", "value": " ".join(["/", *mounts])})
    job["spec"] |= {"completions": 1, "parallelism": 1}
    job["spec"]["template"]["spec"] = on_real_node(spec)
    job["metadata"]["namespace"] = namespace
    realk8s.api.create(resource_path("batch/v1", "jobs", namespace), job)

    def finished() -> dict[str, Any] | None:
        live = realk8s.api.get(resource_path("batch/v1", "jobs", namespace, job["metadata"]["name"]))
        status = live.get("status", {})
        return live if status.get("succeeded") or status.get("failed") else None

    live = wait_until(f"the Job of {manifest} to finish", finished, JOB_DONE_S)
    assert live["status"].get("succeeded") == 1, live["status"]
    pods = realk8s.api.get(resource_path("v1", "pods", namespace))["items"]
    assert [p["spec"]["nodeName"] for p in pods] == [real_node.name]
    assert pods[0]["spec"].get("runtimeClassName") == spec.get("runtimeClassName")
    _check_report(realk8s, namespace, pods[0]["metadata"]["name"], spec, container, {"/etc/k3deploy"})


def _check_report(
    plane: Plane,
    namespace: str,
    pod: str,
    spec: dict[str, Any],
    container: dict[str, Any],
    read_only: set[str],
) -> None:
    """What the stand-in in `pod` reported is what `container` of `spec` declares: its args (or command), uid and
    gid, no capability, no_new_privs, RuntimeDefault seccomp, a read-only root and exactly `read_only` read-only."""
    path = resource_path("v1", "pods", namespace, pod) + f"/log?container={container['name']}"
    log = plane.api.request("GET", path)
    report = dict(line.split(" ", 1) for line in log.text.splitlines() if not line.startswith("write "))
    writes = dict(line.split(" ", 2)[1:] for line in log.text.splitlines() if line.startswith("write "))
    assert report["args"] == " ".join(container.get("args") or container["command"][1:])
    pod_context, context = spec["securityContext"], container["securityContext"]
    ids = [context.get(k, pod_context.get(k)) for k in ("runAsUser", "runAsGroup")]
    assert [report["uid"], report["gid"]] == [str(i) for i in ids] and None not in ids
    assert context["capabilities"]["drop"] == ["ALL"] and report["CapEff"] == "0000000000000000"
    assert context["allowPrivilegeEscalation"] is False and report["NoNewPrivs"] == "1"
    assert pod_context["seccompProfile"]["type"] == "RuntimeDefault" and report["Seccomp"] == "2"
    assert context["readOnlyRootFilesystem"] is True
    assert writes["/"] == "Read-only file system"
    assert read_only == {m["mountPath"] for m in container["volumeMounts"] if m.get("readOnly")}
    for mount in container["volumeMounts"]:
        assert writes[mount["mountPath"]] == ("Read-only file system" if mount.get("readOnly") else "ok"), mount


NAME = "kimi-k3-gb300-tp16"
GB300 = {"kubernetes.io/arch": "arm64", "nvidia.com/gpu.product": "NVIDIA-GB300"}
POD_START_S = 90.0


def _pods(plane: Plane, namespace: str) -> list[dict[str, Any]]:
    return plane.api.get(resource_path("v1", "pods", namespace))["items"]  # type: ignore[no-any-return]


def _running(plane: Plane, namespace: str) -> dict[str, Any] | None:
    """The namespace's one pod once every container of it is ready (a Deployment's or a DaemonSet's)."""
    pods = _pods(plane, namespace)
    statuses = pods[0]["status"].get("containerStatuses") or [] if len(pods) == 1 else []
    return pods[0] if statuses and all(s["ready"] for s in statuses) else None


def _succeeded(plane: Plane, namespace: str) -> dict[str, Any] | None:
    pods = _pods(plane, namespace)
    return pods[0] if len(pods) == 1 and pods[0]["status"].get("phase") in ("Succeeded", "Failed") else None


@pytest.mark.parametrize(
    "key", [f"Deployment/{NAME}-guard", f"CronJob/{NAME}-canary", f"DaemonSet/{NAME}-weight-staging"]
)
def test_the_optional_k3deploy_pods_run_under_their_security_context(
    realk8s: Plane, real_node: RealNode, namespace: str, tmp_path: Path, key: str
) -> None:
    objects = rendered_options()
    kind = key.split("/")[0]
    api = realk8s.api
    obj = in_namespace(objects[key], namespace)
    job_spec = obj["spec"]["jobTemplate"]["spec"] if kind == "CronJob" else obj["spec"]
    spec = job_spec["template"]["spec"]
    configs = [v["configMap"]["name"] for v in spec["volumes"] if "configMap" in v]
    for config in configs:
        api.create(
            resource_path("v1", "configmaps", namespace), in_namespace(objects[f"ConfigMap/{config}"], namespace)
        )
    account = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": spec["serviceAccountName"]}}
    api.create(resource_path("v1", "serviceaccounts", namespace), account)
    container = spec["containers"][0]
    mounts = [m["mountPath"] for m in container["volumeMounts"]]
    container.setdefault("env", []).append({"name": "K3DEPLOY_STANDIN_PATHS", "value": " ".join(["/", *mounts])})
    pv_name = None
    host_path = None
    if kind == "DaemonSet":
        assert spec.pop("nodeSelector") == GB300
        export = tmp_path / "export"
        export.mkdir()
        claim = objects[f"PersistentVolumeClaim/{NAME}-model-cache"]
        pv_name = bind_claim(api, claim, namespace, export)
        [host_path] = [Path(v["hostPath"]["path"]) for v in spec["volumes"] if "hostPath" in v]
        on_host = host_path.exists()
        _label_clique(realk8s, real_node, "real-clique.0")
    job_spec["template"]["spec"] = on_real_node(spec)
    try:
        if kind == "CronJob":
            job = {
                "apiVersion": "batch/v1",
                "kind": "Job",
                "metadata": {
                    "name": f"{obj['metadata']['name']}-manual",
                    "labels": obj["spec"]["jobTemplate"]["metadata"]["labels"],
                    "annotations": {"cronjob.kubernetes.io/instantiate": "manual"},
                },
                "spec": job_spec,
            }
            api.create(resource_path("batch/v1", "jobs", namespace), job)
            live = wait_until("the canary's pod to finish", lambda: _succeeded(realk8s, namespace), JOB_DONE_S)
            assert live["status"]["phase"] == "Succeeded", live["status"]
        else:
            api.create(resource_path("apps/v1", kind.lower() + "s", namespace), obj)
            live = wait_until(f"the {kind}'s pod to run", lambda: _running(realk8s, namespace), POD_START_S)
            assert live["metadata"]["ownerReferences"][0]["kind"] == ("ReplicaSet" if kind == "Deployment" else kind)
            assert [s["restartCount"] for s in live["status"]["containerStatuses"]] == [0] * len(spec["containers"])
        assert live["spec"]["nodeName"] == real_node.name
        read_only = {m["mountPath"] for m in container["volumeMounts"] if m.get("readOnly")}
        _check_report(realk8s, namespace, live["metadata"]["name"], spec, container, read_only)
        if host_path is not None:
            # The kubelet made the tray folder (DirectoryOrCreate) in the node's own /var/lib, not on this machine.
            assert (real_node.dir / "fs" / "var-lib" / host_path.relative_to("/var/lib")).is_dir()
            assert host_path.exists() == on_host
    finally:
        if kind != "CronJob":
            api.request("DELETE", resource_path("apps/v1", kind.lower() + "s", namespace, obj["metadata"]["name"]))
        for pod in _pods(realk8s, namespace):
            path = resource_path("v1", "pods", namespace, pod["metadata"]["name"])
            api.request("DELETE", path, json={"gracePeriodSeconds": 0})
        wait_until("the pods to be gone", lambda: not _pods(realk8s, namespace), 60)
        if pv_name is not None:
            _label_clique(realk8s, real_node, None)
            api.request("DELETE", f"/api/v1/persistentvolumes/{pv_name}")
