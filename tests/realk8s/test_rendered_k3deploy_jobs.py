"""The rendered node-preflight and smoke Jobs of the built-in GB300 profile (the committed set under manifests/) run
on a real kubelet with its image replaced by a stand-in of the same name that reports what the kubelet gave it
(tests/realk8s/standins.py `K3DEPLOY`; it does not reach a server, the smoke itself is tested elsewhere): the pod's
uid and gid, no capabilities, no_new_privs, the RuntimeDefault seccomp profile, a read-only root file system (EROFS),
writable /tmp (and /dev/shm) and a read-only profile mount.

Placement is the one change besides the image: the real node is an amd64 machine without a GB300 (the kubelet owns
`kubernetes.io/arch`), so the node-preflight Job's node selector is replaced by the real nodes' own, and one node runs
one of its pods (completions and parallelism 1)."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from tests.realk8s.binaries import REPO_ROOT
from tests.realk8s.client import resource_path, wait_until
from tests.realk8s.plane import Plane
from tests.realk8s.realnode import RealNode
from tests.realk8s.standins import on_real_node

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
    log = realk8s.api.request("GET", resource_path("v1", "pods", namespace, pods[0]["metadata"]["name"]) + "/log")
    report = dict(line.split(" ", 1) for line in log.text.splitlines() if not line.startswith("write "))
    writes = dict(line.split(" ", 2)[1:] for line in log.text.splitlines() if line.startswith("write "))
    assert report["args"] == " ".join(container["args"])
    pod_context, context = spec["securityContext"], container["securityContext"]
    assert (report["uid"], report["gid"]) == (str(pod_context["runAsUser"]), str(pod_context["runAsGroup"]))
    assert context["capabilities"]["drop"] == ["ALL"] and report["CapEff"] == "0000000000000000"
    assert context["allowPrivilegeEscalation"] is False and report["NoNewPrivs"] == "1"
    assert pod_context["seccompProfile"]["type"] == "RuntimeDefault" and report["Seccomp"] == "2"
    assert context["readOnlyRootFilesystem"] is True
    assert writes["/"] == "Read-only file system"
    read_only = {m["mountPath"] for m in container["volumeMounts"] if m.get("readOnly")}
    assert read_only == {"/etc/k3deploy"}
    for path in mounts:
        assert writes[path] == ("Read-only file system" if path in read_only else "ok"), path
