"""The rendered serving LeaderWorkerSet's pod templates (leader and worker, the committed set under manifests/) start
on a real kubelet as bare Pods with only the image replaced by a local stand-in of the same name
(tests/realk8s/standins.py `VLLM`): the gpu-check init container gets its 4 GPUs from the device plugin stand-in and
its compute-domain channel from the DRA kubelet plugin stand-in, wait-for-weights holds the pod until the prefetch
marker appears, the kubelet's startup and readiness probes reach the leader's /health, the weights mount is
read-only (EROFS) and the compile cache (one volume, a subPathExpr mount) writable.

What the LWS controller adds is added by hand (its labels and the size and leader-name annotations; the real LWS
pod webhook then injects the LWS_* env as it does for the controller's pods), and placement is
changed as for the rendered Jobs: the GB300 node selector is replaced by the real node's, and the vllm container's
CPU and memory requests (32 CPUs, 512Gi) are cut to what one test node has. The node has 4 GPUs, so the leader and
the worker run one after the other. The templates' pod affinity (one group in one NVLink clique) is kept: the real node
carries a `nvidia.com/gpu.clique` label for the test, as a GB300 node does from GPU feature discovery. The leader
rendered with node-local weight staging (not in the committed set: tests/realk8s/rendered_options.py) runs the same
way with its pick-weights init container and the tray folder's hostPath.

The endpoint picker's Deployment (kubernetes.routing: inference-pool, which the committed set does not render:
tests/realk8s/rendered_options.py) goes through the real Deployment controller with only its image replaced
(tests/realk8s/standin_epp.py) and its CPU and memory requests (8 CPUs, 8Gi) cut: the kubelet's gRPC probes reach
its health port with the declared service, its config mount is read-only, /tmp writable, the root file system
read-only, and its rendered Service's named ports resolve on the pod."""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.realk8s.binaries import REPO_ROOT
from tests.realk8s.client import resource_path, wait_until
from tests.realk8s.plane import Plane
from tests.realk8s.realnode import RealNode
from tests.realk8s.rendered_options import in_namespace, rendered_options
from tests.realk8s.standin_epp import EPP
from tests.realk8s.standins import bind_claim, on_real_node

pytestmark = [pytest.mark.realk8s, pytest.mark.timeout(300)]

SET = REPO_ROOT / "manifests" / "kimi-k3-gb300-tp16"
POD_START_S = 90.0
LWS = "leaderworkerset.sigs.k8s.io"
RESOURCE = "resource.k8s.io/v1"
CLIQUE = "nvidia.com/gpu.clique"


def _rendered(name: str) -> dict[str, Any]:
    return yaml.safe_load((SET / name).read_text())


def _env(container: dict[str, Any], name: str) -> str:
    return next(str(e["value"]) for e in container["env"] if e["name"] == name)


def _objects(
    plane: Plane, namespace: str, lws: dict[str, Any], export: Path, profile: dict[str, Any] | None = None
) -> str:
    """The profile ConfigMap (the committed set's unless given), the ServiceAccount, the channel claim template and
    the weight claim bound to `export`."""
    profile = profile or _rendered("02-configmap-kimi-k3-gb300-tp16-profile.yaml")
    profile["metadata"]["namespace"] = namespace
    plane.api.create(resource_path("v1", "configmaps", namespace), profile)
    account = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "k3deploy"}}
    plane.api.create(resource_path("v1", "serviceaccounts", namespace), account)
    spec = lws["spec"]["leaderWorkerTemplate"]["leaderTemplate"]["spec"]
    template = {
        "apiVersion": RESOURCE,
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": spec["resourceClaims"][0]["resourceClaimTemplateName"]},
        "spec": {
            "spec": {
                "devices": {
                    "requests": [
                        {"name": "channel", "exactly": {"deviceClassName": "compute-domain-default-channel.nvidia.com"}}
                    ]
                }
            }
        },
    }
    plane.api.create(resource_path(RESOURCE, "resourceclaimtemplates", namespace), template)
    claim = _rendered("04-persistentvolumeclaim-kimi-k3-gb300-tp16-model-cache.yaml")
    return bind_claim(plane.api, claim, namespace, export)


def _pod(lws: dict[str, Any], role: str, index: int, namespace: str) -> dict[str, Any]:
    """The `role` template as the LWS controller would make its pod `index` of group 0 (labels and annotations)."""
    template = lws["spec"]["leaderWorkerTemplate"][f"{role}Template"]
    name = lws["metadata"]["name"]
    labels = {
        **template["metadata"]["labels"],
        f"{LWS}/name": name,
        f"{LWS}/group-index": "0",
        f"{LWS}/worker-index": str(index),
    }
    pod_name = f"{name}-0" if role == "leader" else f"{name}-0-{index}"
    annotations = {
        **template["metadata"]["annotations"],
        f"{LWS}/size": str(lws["spec"]["leaderWorkerTemplate"]["size"]),
    }
    if role == "worker":
        annotations[f"{LWS}/leader-name"] = f"{name}-0"
    spec = template["spec"]
    assert spec.pop("nodeSelector") == {"kubernetes.io/arch": "arm64", "nvidia.com/gpu.product": "NVIDIA-GB300"}
    requests = spec["containers"][0]["resources"]["requests"]
    assert (requests["cpu"], requests["memory"]) == ("32", "512Gi")
    requests |= {"cpu": "100m", "memory": "64Mi"}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": pod_name, "labels": labels, "annotations": annotations},
        "spec": on_real_node(spec),
    }


def _label_clique(plane: Plane, node: RealNode, value: str | None) -> None:
    patch = {"metadata": {"labels": {CLIQUE: value}}}
    plane.api.request(
        "PATCH",
        f"/api/v1/nodes/{node.name}",
        content=json.dumps(patch),
        headers={"Content-Type": "application/merge-patch+json"},
    ).raise_for_status()


def _report(plane: Plane, namespace: str, pod: str, container: str) -> dict[str, str]:
    log = plane.api.request("GET", resource_path("v1", "pods", namespace, pod) + f"/log?container={container}")
    lines = [line.split(" ", 1) for line in log.text.splitlines() if " " in line]
    return {key: value for key, value in lines if key != "write"} | {
        value.split(" ", 1)[0]: value.split(" ", 1)[1] for key, value in lines if key == "write"
    }


def _live(plane: Plane, namespace: str, name: str) -> dict[str, Any]:
    return plane.api.get(resource_path("v1", "pods", namespace, name))  # type: ignore[no-any-return]


def _failure(plane: Plane, namespace: str, node: RealNode) -> str:
    events = plane.api.get(resource_path("v1", "events", namespace))["items"]
    return "\n".join(f"{e['reason']}: {e['message']}" for e in events) + "\n" + node.tail()


def _check_security(report: dict[str, str], spec: dict[str, Any], container: dict[str, Any], gpus: int = 4) -> None:
    assert container["securityContext"]["capabilities"]["drop"] == ["ALL"] and report["CapEff"] == "0000000000000000"
    assert container["securityContext"]["allowPrivilegeEscalation"] is False and report["NoNewPrivs"] == "1"
    assert spec["securityContext"]["seccompProfile"]["type"] == "RuntimeDefault" and report["Seccomp"] == "2"
    assert report["gpus"].count(",") == gpus - 1, report  # the devices from the device plugin stand-in


def _run(
    plane: Plane,
    namespace: str,
    node: RealNode,
    pod: dict[str, Any],
    export: Path,
    marker: Path,
    more: Callable[[dict[str, Any]], None] = lambda live: None,
) -> None:
    """Start `pod`, hold it at wait-for-weights until the marker is written, check what it ran with (and `more` of
    the live pod), delete it."""
    name = pod["metadata"]["name"]
    spec = pod["spec"]
    plane.api.create(resource_path("v1", "pods", namespace), pod)

    def gated() -> dict[str, Any] | None:
        live = _live(plane, namespace, name)
        statuses = live["status"].get("initContainerStatuses") or []
        states = [next(iter(s.get("state") or {"none": 0})) for s in statuses]
        return live if states[:2] == ["terminated", "running"] else None

    if not marker.exists():
        # Init containers in order: gpu-check has finished, wait-for-weights holds the pod until the marker.
        try:
            live = wait_until(f"{name}'s wait-for-weights to wait", gated, POD_START_S)
        except TimeoutError:
            raise AssertionError(_failure(plane, namespace, node)) from None
        assert live["status"]["initContainerStatuses"][0]["state"]["terminated"]["exitCode"] == 0
        assert live["status"]["containerStatuses"][0]["state"]["waiting"]["reason"] == "PodInitializing"
        marker.parent.mkdir(parents=True, exist_ok=True)
        marker.write_text("done\n")

    def ready() -> dict[str, Any] | None:
        live = _live(plane, namespace, name)
        conditions = {c["type"]: c["status"] for c in live["status"].get("conditions", [])}
        return live if conditions.get("Ready") == "True" else None

    try:
        live = wait_until(f"{name} to be Ready", ready, POD_START_S)
    except TimeoutError:
        raise AssertionError(_failure(plane, namespace, node)) from None
    assert live["spec"]["nodeName"] == node.name and live["status"]["phase"] == "Running"
    inits = live["status"]["initContainerStatuses"]
    assert [s["name"] for s in inits] == [c["name"] for c in spec["initContainers"]]
    assert [s["name"] for s in inits][:2] == ["gpu-check", "wait-for-weights"]
    assert [s["state"]["terminated"]["exitCode"] for s in inits] == [0] * len(inits)
    for first, second in itertools.pairwise(inits):
        assert first["state"]["terminated"]["finishedAt"] <= second["state"]["terminated"]["startedAt"]
    serving = live["status"]["containerStatuses"][0]
    assert serving["started"] is True and serving["ready"] is True

    check = _report(plane, namespace, name, "gpu-check")
    gpu_check = spec["initContainers"][0]
    assert check["args"] == "/etc/k3deploy/gpu-check.py"
    assert (check["uid"], check["gid"]) == ("10001", "10001")
    _check_security(check, spec, gpu_check)

    report = _report(plane, namespace, name, "vllm")
    vllm = spec["containers"][0]
    _check_security(report, spec, vllm)
    args = report["args"].split(" ")
    index = pod["metadata"]["labels"][f"{LWS}/worker-index"]
    assert args[args.index("--node-rank") + 1] == index  # $(LWS_WORKER_INDEX) expanded by the kubelet
    injected = live["spec"]["containers"][0]
    assert args[args.index("--master-addr") + 1] == _env(injected, "LWS_LEADER_ADDRESS")
    assert _env(injected, "LWS_WORKER_INDEX") == index
    mounts = {m["mountPath"]: m for m in vllm["volumeMounts"]}
    assert mounts["/models"]["readOnly"] is True and report["/models"] == "Read-only file system"
    cache_root = _env(vllm, "VLLM_CACHE_ROOT")
    assert report[cache_root] == "ok"
    # The compile cache is the one weight volume's subPathExpr, expanded per pod.
    subpath = mounts["/var/cache/k3deploy-compile"]["subPathExpr"]
    expanded = subpath.replace("$(K3DEPLOY_LWS_NAME)", pod["metadata"]["labels"][f"{LWS}/name"])
    expanded = expanded.replace("$(K3DEPLOY_GROUP_INDEX)", "0").replace("$(LWS_WORKER_INDEX)", index)
    assert (export / expanded / Path(cache_root).name).is_dir()
    if "--headless" not in args:
        log = plane.api.request("GET", resource_path("v1", "pods", namespace, name) + "/log?container=vllm").text
        assert "url:/health" in log  # the kubelet's startup and readiness probes
    more(live)
    plane.api.request("DELETE", resource_path("v1", "pods", namespace, name), json={"gracePeriodSeconds": 0})
    wait_until(f"{name} to be gone", lambda: plane.api.find(resource_path("v1", "pods", namespace, name)) is None, 60)


def test_the_rendered_serving_pods_start_on_a_real_kubelet(
    realk8s: Plane, real_node: RealNode, namespace: str, tmp_path: Path
) -> None:
    lws = _rendered("10-leaderworkerset-kimi-k3-gb300-tp16.yaml")
    export = tmp_path / "export"
    export.mkdir()
    export.chmod(0o777)
    pv_name = _objects(realk8s, namespace, lws, export)
    affinity = lws["spec"]["leaderWorkerTemplate"]["leaderTemplate"]["spec"]["affinity"]
    assert affinity["podAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][0]["topologyKey"] == CLIQUE
    _label_clique(realk8s, real_node, "real-clique.0")
    try:
        leader = _pod(lws, "leader", 0, namespace)
        wait_env = leader["spec"]["initContainers"][1]
        marker = export / Path(_env(wait_env, "K3DEPLOY_PREFETCH_MARKER")).relative_to("/models")
        (export / ".k3deploy" / "compile-cache").mkdir(parents=True)
        (export / ".k3deploy" / "compile-cache").chmod(0o1777)  # as the prefetch Job leaves it
        _run(realk8s, namespace, real_node, leader, export, marker)
        _run(realk8s, namespace, real_node, _pod(lws, "worker", 1, namespace), export, marker)
    finally:
        _label_clique(realk8s, real_node, None)
        realk8s.api.request("DELETE", f"/api/v1/persistentvolumes/{pv_name}")


def test_the_rendered_serving_pod_with_node_local_weights_starts_on_a_real_kubelet(
    realk8s: Plane, real_node: RealNode, namespace: str, tmp_path: Path
) -> None:
    """kubernetes.weight_staging: node-local adds pick-weights (after wait-for-weights), the tray folder by hostPath
    and the links' emptyDir to the serving pods: the leader runs them in order, pick-weights under its own uid."""
    objects = rendered_options()
    lws = objects["LeaderWorkerSet/kimi-k3-gb300-tp16"]
    export = tmp_path / "export"
    export.mkdir()
    export.chmod(0o777)
    profile = in_namespace(objects["ConfigMap/kimi-k3-gb300-tp16-profile"], namespace)
    pv_name = _objects(realk8s, namespace, lws, export, profile)
    _label_clique(realk8s, real_node, "real-clique.0")
    try:
        leader = _pod(lws, "leader", 0, namespace)
        spec = leader["spec"]
        assert [c["name"] for c in spec["initContainers"]] == ["gpu-check", "wait-for-weights", "pick-weights"]
        pick = spec["initContainers"][2]
        [host_path] = [Path(v["hostPath"]["path"]) for v in spec["volumes"] if "hostPath" in v]
        on_host = host_path.exists()
        marker = export / Path(_env(spec["initContainers"][1], "K3DEPLOY_PREFETCH_MARKER")).relative_to("/models")
        (export / ".k3deploy" / "compile-cache").mkdir(parents=True)
        (export / ".k3deploy" / "compile-cache").chmod(0o1777)
        # The prefetch is done before the pod starts (the hold at wait-for-weights is the test above's): no wait for
        # its 15 s loop.
        marker.write_text("done\n")

        def picked(live: dict[str, Any]) -> None:
            name = live["metadata"]["name"]
            report = _report(realk8s, namespace, name, "pick-weights")
            assert report["args"] == " ".join(pick["command"][1:])
            context = pick["securityContext"]
            assert (report["uid"], report["gid"]) == (str(context["runAsUser"]), str(context["runAsGroup"]))
            assert context["capabilities"]["drop"] == ["ALL"] and report["CapEff"] == "0000000000000000"
            assert context["allowPrivilegeEscalation"] is False and report["NoNewPrivs"] == "1"
            assert report["Seccomp"] == "2"
            vllm = _report(realk8s, namespace, name, "vllm")["args"].split(" ")
            assert vllm[:2] == ["serve", "/k3deploy-weights/target"]  # the links pick-weights makes
            # The kubelet made the tray folder (DirectoryOrCreate) in the node's own /var/lib, not on this machine.
            assert (real_node.dir / "fs" / "var-lib" / host_path.relative_to("/var/lib")).is_dir()
            assert host_path.exists() == on_host

        _run(realk8s, namespace, real_node, leader, export, marker, picked)
    finally:
        _label_clique(realk8s, real_node, None)
        realk8s.api.request("DELETE", f"/api/v1/persistentvolumes/{pv_name}")


def _ready_pod(plane: Plane, namespace: str, selector: dict[str, str]) -> dict[str, Any] | None:
    query = ",".join(f"{key}={value}" for key, value in selector.items())
    pods = plane.api.get(resource_path("v1", "pods", namespace) + f"?labelSelector={query}")["items"]
    for pod in pods:
        conditions = {c["type"]: c["status"] for c in pod["status"].get("conditions", [])}
        if conditions.get("Ready") == "True":
            return pod  # type: ignore[no-any-return]
    return None


def _probe_failures(plane: Plane, namespace: str, pod: str, node: RealNode) -> list[str] | None:
    events = plane.api.get(f"/api/v1/namespaces/{namespace}/events?fieldSelector=involvedObject.name={pod}")["items"]
    found = [
        e["message"]
        for e in events
        if e["reason"] == "Unhealthy"
        and (e.get("source") or {}).get("host") == node.name
        and "NOT_SERVING" in e["message"]
    ]
    return found or None


def test_the_rendered_endpoint_picker_starts_on_a_real_kubelet(
    realk8s: Plane, real_node: RealNode, namespace: str
) -> None:
    objects = rendered_options()
    name = "kimi-k3-gb300-tp16-epp"
    for kind in ("ConfigMap", "ServiceAccount", "Service"):
        realk8s.api.create(
            resource_path("v1", kind.lower() + "s", namespace), in_namespace(objects[f"{kind}/{name}"], namespace)
        )
    deployment = in_namespace(objects[f"Deployment/{name}"], namespace)
    template = deployment["spec"]["template"]
    spec = template["spec"]
    epp = spec["containers"][0]
    assert epp["image"] == EPP and "command" not in epp  # the image's entrypoint runs the rendered args
    requests = epp["resources"]["requests"]
    assert (requests["cpu"], requests["memory"]) == ("8", "8Gi")
    requests |= {"cpu": "100m", "memory": "64Mi"}
    template["spec"] = on_real_node(spec)
    api = realk8s.api
    api.create(resource_path("apps/v1", "deployments", namespace), deployment)
    try:
        try:
            live = wait_until(
                "the endpoint picker to be Ready",
                lambda: _ready_pod(realk8s, namespace, deployment["spec"]["selector"]["matchLabels"]),
                POD_START_S,
            )
        except TimeoutError:
            raise AssertionError(_failure(realk8s, namespace, real_node)) from None
        _check_epp(realk8s, namespace, real_node, live, epp, spec)
        # The rendered Service resolves its named target ports on the picker's pod (the EndpointSlice controller).
        slices = wait_until("the picker's ready endpoint", lambda: _endpoints(realk8s, namespace, name), 30)
        assert [(e["targetRef"]["name"], e["conditions"]["ready"]) for s in slices for e in s["endpoints"]] == [
            (live["metadata"]["name"], True)
        ]
        ports = {p["name"]: p["port"] for s in slices for p in s["ports"]}
        assert ports == {"grpc-ext-proc": 9002, "http-metrics": 9090}
    finally:
        api.request("DELETE", resource_path("apps/v1", "deployments", namespace, name))
        # The stand-in stops on SIGTERM, but the template's grace is 130 s: no need to wait it out.
        for pod in api.get(resource_path("v1", "pods", namespace))["items"]:
            path = resource_path("v1", "pods", namespace, pod["metadata"]["name"])
            api.request("DELETE", path, json={"gracePeriodSeconds": 0})
        wait_until(
            "the picker's pod to be gone", lambda: not api.get(resource_path("v1", "pods", namespace))["items"], 60
        )


def _endpoints(plane: Plane, namespace: str, service: str) -> list[dict[str, Any]] | None:
    path = resource_path("discovery.k8s.io/v1", "endpointslices", namespace)
    slices = plane.api.get(f"{path}?labelSelector=kubernetes.io/service-name={service}")["items"]
    ready = [e for s in slices for e in s.get("endpoints") or [] if (e.get("conditions") or {}).get("ready")]
    return slices if ready else None


def _check_epp(
    plane: Plane, namespace: str, node: RealNode, live: dict[str, Any], epp: dict[str, Any], spec: dict[str, Any]
) -> None:
    name = live["metadata"]["name"]
    assert live["spec"]["nodeName"] == node.name and live["status"]["phase"] == "Running"
    assert live["metadata"]["ownerReferences"][0]["kind"] == "ReplicaSet"  # made by the Deployment controller
    # The kubelet's gRPC probes: the first check answered NOT_SERVING (an Unhealthy event of the kubelet naming it),
    # a later one SERVING (Ready); each asked for the service the probes declare.
    failures = wait_until("the kubelet's Unhealthy event", lambda: _probe_failures(plane, namespace, name, node), 30)
    assert all("probe failed: service unhealthy" in message for message in failures), failures
    service = epp["readinessProbe"]["grpc"]["service"]
    assert epp["livenessProbe"]["grpc"] == epp["readinessProbe"]["grpc"] == {"port": 9003, "service": service}
    log = plane.api.request("GET", resource_path("v1", "pods", namespace, name) + "/log").text
    checks = [line for line in log.splitlines() if line.startswith("grpc-health ")]
    assert checks[0] == f"grpc-health service={service} status=2", log
    assert f"grpc-health service={service} status=1" in checks, log
    lines = [line.split(" ", 1) for line in log.splitlines() if " " in line and not line.startswith("grpc-health ")]
    report = {key: value for key, value in lines if key != "write"}
    writes = dict(value.split(" ", 1) for key, value in lines if key == "write")
    assert report["args"] == " ".join(epp["args"])
    assert report["pod"] == f"{namespace}/{name}"  # the downward-API env, expanded by the kubelet
    pod_context, context = spec["securityContext"], epp["securityContext"]
    assert (
        (report["uid"], report["gid"])
        == (str(pod_context["runAsUser"]), str(pod_context["runAsGroup"]))
        == (
            "65532",
            "65532",
        )
    )
    assert context["capabilities"]["drop"] == ["ALL"] and report["CapEff"] == "0000000000000000"
    assert context["allowPrivilegeEscalation"] is False and report["NoNewPrivs"] == "1"
    assert pod_context["seccompProfile"]["type"] == "RuntimeDefault" and report["Seccomp"] == "2"
    assert context["readOnlyRootFilesystem"] is True and writes["/"] == "Read-only file system"
    mounts = {m["mountPath"]: m.get("readOnly", False) for m in epp["volumeMounts"]}
    assert mounts == {"/config": True, "/tmp": False}
    for path, read_only in mounts.items():
        assert writes[path] == ("Read-only file system" if read_only else "ok"), path
