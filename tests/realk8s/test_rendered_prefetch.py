"""The rendered prefetch Job of the built-in GB300 profile (the committed set under manifests/, which a render test
keeps equal to the render) runs on a real kubelet with only its image replaced by a local stand-in of the same name
(tests/realk8s/standins.py): its own script checks the weight cache is writable as its uid, makes the compile cache
and writes the marker the serving pods wait for, under the securityContext the kubelet applied (read-only root file
system, uid and gid 65534)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.realk8s.binaries import REPO_ROOT
from tests.realk8s.client import resource_path, wait_until
from tests.realk8s.plane import Plane
from tests.realk8s.realnode import RealNode
from tests.realk8s.standins import bind_claim, on_real_node

pytestmark = [pytest.mark.realk8s, pytest.mark.timeout(300)]

SET = REPO_ROOT / "manifests" / "kimi-k3-gb300-tp16"
JOB_DONE_S = 120.0


def _rendered(name: str) -> dict[str, Any]:
    return yaml.safe_load((SET / name).read_text())


def _env(job: dict[str, Any], name: str) -> str:
    container = job["spec"]["template"]["spec"]["containers"][0]
    return next(e["value"] for e in container["env"] if e["name"] == name)


def test_the_rendered_prefetch_job_writes_the_marker_on_a_real_kubelet(
    realk8s: Plane, real_node: RealNode, namespace: str, tmp_path: Path
) -> None:
    [job_file] = SET.glob("06-job-kimi-k3-gb300-tp16-prefetch-*.yaml")  # named after its spec's hash
    job = _rendered(job_file.name)
    claim = _rendered("04-persistentvolumeclaim-kimi-k3-gb300-tp16-model-cache.yaml")
    export = tmp_path / "export"
    export.mkdir()
    export.chmod(0o777)  # a shared export writable by the prefetch's uid (fsGroup is not applied to it)
    pv_name = bind_claim(realk8s.api, claim, namespace, export)
    try:
        account = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "k3deploy"}}
        realk8s.api.create(resource_path("v1", "serviceaccounts", namespace), account)
        job["metadata"]["namespace"] = namespace
        spec = job["spec"]["template"]["spec"]
        # The kubelet owns kubernetes.io/arch: the real node says amd64 where the trays say arm64.
        assert spec.pop("nodeSelector") == {"kubernetes.io/arch": "arm64"}
        job["spec"]["template"]["spec"] = on_real_node(spec)
        realk8s.api.create(resource_path("batch/v1", "jobs", namespace), job)

        def finished() -> dict[str, Any] | None:
            live = realk8s.api.get(resource_path("batch/v1", "jobs", namespace, job["metadata"]["name"]))
            status = live.get("status", {})
            return live if status.get("succeeded") or status.get("failed") else None

        live = wait_until("the prefetch Job to finish", finished, JOB_DONE_S)
        assert live["status"].get("succeeded") == 1, live["status"]
        marker = export / Path(_env(job, "K3DEPLOY_PREFETCH_MARKER")).relative_to("/models")
        compile_cache = export / Path(_env(job, "K3DEPLOY_COMPILE_CACHE")).relative_to("/models")
        assert marker.is_file()
        # Written as the pod's uid and gid, as the kubelet ran it.
        assert (marker.stat().st_uid, marker.stat().st_gid) == (65534, 65534)
        assert compile_cache.stat().st_mode & 0o7777 == 0o1777
        pods = realk8s.api.get(resource_path("v1", "pods", namespace))["items"]
        assert [p["spec"]["nodeName"] for p in pods] == [real_node.name]
        log = realk8s.api.request("GET", resource_path("v1", "pods", namespace, pods[0]["metadata"]["name"]) + "/log")
        # The vLLM image's own python3 ran the download (nothing installed at run time).
        assert "args -" in log.text and "pip" not in log.text
    finally:
        realk8s.api.request("DELETE", f"/api/v1/persistentvolumes/{pv_name}")
