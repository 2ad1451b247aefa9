"""The rendered serving LeaderWorkerSet, created as it is and left to the real LWS controller: its StatefulSets make
the leader and worker pods, the real scheduler places them on a real kubelet node, and they start there with only
the image replaced by a local stand-in of the same name (tests/realk8s/standins.py `VLLM`).

The built-in GB300 profile is rendered with a group a real node can hold: two pods of 2 GPUs (TP4) instead of four
of 4, the vllm container's CPU and memory requests cut to what one test node has, and no ComputeDomain (the real
node publishes one IMEX channel, tests/realk8s/dra.py, and two pods of one group on it would each claim one; the
channel claim on a real kubelet is tests/realk8s/test_real_node_dra.py and test_rendered_serving_pods.py). The GB300
node selector is swapped for the real node's label and toleration, as for the rendered Jobs; the templates' pod
affinity (one group in one NVLink clique) is kept, the node carrying a clique label as GPU feature discovery sets."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import run_cli
from tests.realk8s.client import resource_path, wait_until
from tests.realk8s.plane import Plane
from tests.realk8s.realnode import RealNode
from tests.realk8s.standins import bind_claim, on_real_node
from tests.realk8s.test_rendered_serving_pods import _check_security, _label_clique, _report

pytestmark = [pytest.mark.realk8s, pytest.mark.timeout(300)]

PROFILE = "kimi-k3-gb300-tp16"
LWS_API = "leaderworkerset.x-k8s.io/v1"
LWS_LABEL = "leaderworkerset.sigs.k8s.io"
GROUP_READY_S = 120.0
#: A group of two 2-GPU pods (a real node has 4 GPUs), on a checkpoint that fits 4 GPUs, placed on a test node.
SMALL_GROUP = (
    "production=false",
    "parallel.nodes=2",
    "parallel.gpus_per_node=2",
    "parallel.tensor_parallel_size=4",
    "model.checkpoint_bytes=400000000000",
    "kubernetes.cpu_request=100m",
    "kubernetes.memory_request=64Mi",
    "kubernetes.compute_domain=false",
    # No smoke runs here to gate the leader into the API Service (tests/realk8s/test_traffic_gate.py does that):
    # the Service selects every leader, as before the traffic gate.
    "smoke.gate_traffic=false",
)


def render(namespace: str, out: Path, *sets: str) -> dict[str, dict[str, Any]]:
    """`k3deploy render` of the GB300 profile into `out`: the objects by kind and name (`Kind/name`)."""
    args = [a for s in (*SMALL_GROUP, f"kubernetes.namespace={namespace}", *sets) for a in ("--set", s)]
    done = run_cli("render", "-p", PROFILE, *args, "-o", str(out))
    assert done.returncode == 0, done.stderr
    objects = [yaml.safe_load(p.read_text()) for p in sorted(out.glob("*.yaml")) if p.name != "kustomization.yaml"]
    return {f"{o['kind']}/{o['metadata']['name']}": o for o in objects}


def _placed(template: dict[str, Any]) -> None:
    spec = template["spec"]
    assert spec.pop("nodeSelector") == {"kubernetes.io/arch": "arm64", "nvidia.com/gpu.product": "NVIDIA-GB300"}
    template["spec"] = on_real_node(spec)


def _group(plane: Plane, namespace: str, name: str) -> list[dict[str, Any]] | None:
    lws = plane.api.get(resource_path(LWS_API, "leaderworkersets", namespace, name))
    if (lws.get("status") or {}).get("readyReplicas") != 1:
        return None
    pods = plane.api.get(resource_path("v1", "pods", namespace) + f"?labelSelector={LWS_LABEL}/name={name}")["items"]
    return sorted(pods, key=lambda p: p["metadata"]["name"]) if len(pods) == 2 else None


def test_the_rendered_leaderworkerset_runs_on_a_real_kubelet_through_the_lws_controller(
    realk8s: Plane, real_node: RealNode, namespace: str, tmp_path: Path
) -> None:
    objects = render(namespace, tmp_path / "set")
    lws = objects[f"LeaderWorkerSet/{PROFILE}"]
    template = lws["spec"]["leaderWorkerTemplate"]
    assert template["size"] == 2 and not {k for k in objects if k.startswith("ComputeDomain/")}
    for role in ("leaderTemplate", "workerTemplate"):
        _placed(template[role])
    export = tmp_path / "export"
    export.mkdir()
    export.chmod(0o777)
    api = realk8s.api
    for key in ("ConfigMap/kimi-k3-gb300-tp16-profile", "ServiceAccount/k3deploy", "Service/kimi-k3-gb300-tp16-api"):
        kind = key.split("/")[0]
        api.create(resource_path("v1", kind.lower() + "s", namespace), objects[key])
    pv_name = bind_claim(api, objects["PersistentVolumeClaim/kimi-k3-gb300-tp16-model-cache"], namespace, export)
    wait_env = template["leaderTemplate"]["spec"]["initContainers"][1]["env"]
    marker = export / Path(next(e["value"] for e in wait_env if e["name"] == "K3DEPLOY_PREFETCH_MARKER")).relative_to(
        "/models"
    )
    marker.parent.mkdir(parents=True)
    marker.write_text("done\n")  # as the prefetch Job leaves it
    (export / ".k3deploy" / "compile-cache").mkdir(parents=True)
    (export / ".k3deploy" / "compile-cache").chmod(0o1777)
    _label_clique(realk8s, real_node, "real-clique.0")
    try:
        api.create(resource_path(LWS_API, "leaderworkersets", namespace), lws)
        try:
            pods = wait_until(
                "the LWS controller's group to be ready", lambda: _group(realk8s, namespace, PROFILE), GROUP_READY_S
            )
        except TimeoutError:
            events = api.get(resource_path("v1", "events", namespace))["items"]
            raise AssertionError(
                "\n".join(f"{e['involvedObject']['name']} {e['reason']}: {e['message']}" for e in events)
                + "\n"
                + real_node.tail()
            ) from None
        _check_group(realk8s, namespace, real_node, pods, lws)
    finally:
        api.request("DELETE", resource_path(LWS_API, "leaderworkersets", namespace, PROFILE))
        # The stand-in ignores SIGTERM as PID 1: no need to wait out the templates' 60 s grace.
        for pod in api.get(resource_path("v1", "pods", namespace))["items"]:
            path = resource_path("v1", "pods", namespace, pod["metadata"]["name"])
            api.request("DELETE", path, json={"gracePeriodSeconds": 0})
        wait_until(
            "the group's pods to be gone",
            lambda: not api.get(resource_path("v1", "pods", namespace))["items"],
            90,
        )
        _label_clique(realk8s, real_node, None)
        api.request("DELETE", f"/api/v1/persistentvolumes/{pv_name}")


def _check_group(plane: Plane, namespace: str, node: RealNode, pods: list[dict[str, Any]], lws: dict[str, Any]) -> None:
    leader, worker = pods
    assert [p["metadata"]["name"] for p in pods] == [f"{PROFILE}-0", f"{PROFILE}-0-1"]
    # Made by the controller: the leader by the LWS's StatefulSet, the worker by the group's.
    owners = [(p["metadata"]["ownerReferences"][0]["kind"], p["metadata"]["ownerReferences"][0]["name"]) for p in pods]
    assert owners == [("StatefulSet", PROFILE), ("StatefulSet", f"{PROFILE}-0")]
    for pod in pods:
        assert pod["spec"]["nodeName"] == node.name and pod["status"]["phase"] == "Running"
        inits = pod["status"]["initContainerStatuses"]
        assert [(s["name"], s["state"]["terminated"]["exitCode"]) for s in inits] == [
            ("gpu-check", 0),
            ("wait-for-weights", 0),
        ]
        serving = pod["status"]["containerStatuses"][0]
        assert serving["ready"] is True and serving["started"] is True
        role = "leaderTemplate" if pod is leader else "workerTemplate"
        spec = lws["spec"]["leaderWorkerTemplate"][role]["spec"]
        report = _report(plane, namespace, pod["metadata"]["name"], "vllm")
        _check_security(report, spec, spec["containers"][0], gpus=2)
        args = report["args"].split(" ")
        env = {e["name"]: e.get("value") for e in pod["spec"]["containers"][0]["env"]}
        index = pod["metadata"]["labels"][f"{LWS_LABEL}/worker-index"]
        assert args[args.index("--node-rank") + 1] == index == env["LWS_WORKER_INDEX"]
        assert args[args.index("--master-addr") + 1] == env["LWS_LEADER_ADDRESS"]
        assert args[args.index("--nnodes") + 1] == "2" and args[args.index("--tensor-parallel-size") + 1] == "4"
    assert worker["metadata"]["annotations"][f"{LWS_LABEL}/leader-name"] == f"{PROFILE}-0"
    log = plane.api.request("GET", resource_path("v1", "pods", namespace, f"{PROFILE}-0") + "/log?container=vllm")
    assert "url:/health" in log.text  # the kubelet's startup and readiness probes reached the leader
    events = plane.api.get(resource_path("v1", "events", namespace))["items"]
    started = {
        (e["involvedObject"]["name"], e["involvedObject"].get("fieldPath", ""))
        for e in events
        if e["reason"] == "Started" and (e.get("source") or {}).get("host") == node.name
    }
    for pod in pods:
        name = pod["metadata"]["name"]
        assert {
            f"spec.{k}" for k in ("initContainers{gpu-check}", "initContainers{wait-for-weights}", "containers{vllm}")
        } <= {f for n, f in started if n == name}, started
    # The rendered API Service selects the leader; the group's headless Service (the controller's, behind
    # LWS_LEADER_ADDRESS) every pod of the group.
    assert _ready_endpoints(plane, namespace, f"{PROFILE}-api") == [f"{PROFILE}-0"]
    assert _ready_endpoints(plane, namespace, PROFILE) == [f"{PROFILE}-0", f"{PROFILE}-0-1"]


def _ready_endpoints(plane: Plane, namespace: str, service: str) -> list[str]:
    path = resource_path("discovery.k8s.io/v1", "endpointslices", namespace)
    slices = plane.api.get(f"{path}?labelSelector=kubernetes.io/service-name={service}")["items"]
    return sorted(
        e["targetRef"]["name"]
        for s in slices
        for e in s.get("endpoints") or []
        if (e.get("conditions") or {}).get("ready")
    )
