"""The objects the plane creates besides its components: GB300 nodes for KWOK, the storage the tests use, the
`nvidia` RuntimeClass, the LWS webhook configurations (by URL, as envtest registers webhooks) and RBAC."""

from __future__ import annotations

import base64
import copy
import uuid
from pathlib import Path
from typing import Any

import yaml

from tests.realk8s import stages

#: The annotation KWOK is told to manage nodes by (--manage-nodes-with-annotation-selector).
KWOK_NODE_ANNOTATION = "kwok.x-k8s.io/node"
GPU_TAINT = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}
DRIVER = "580.95.05"


def clique_ids(cliques: int) -> list[str]:
    """`nvidia.com/gpu.clique` values: <ClusterUUID>.<CliqueId>, one NVL72 domain, cliques 1..C."""
    cluster = uuid.uuid5(uuid.NAMESPACE_DNS, "realk8s.nvl72")
    return [f"{cluster}.{i + 1}" for i in range(cliques)]


def gb300_node(name: str, clique: str, k8s_version: str) -> dict[str, Any]:
    """A GB300 compute tray as GPU Feature Discovery labels it (the reference doc's labels): 4 GPUs, the GPU taint."""
    major, minor, revision = DRIVER.split(".")
    labels = {
        "kubernetes.io/arch": "arm64",
        "kubernetes.io/os": "linux",
        "kubernetes.io/hostname": name,
        "type": "kwok",
        "nvidia.com/gpu.present": "true",
        "nvidia.com/gpu.product": "NVIDIA-GB300",
        "nvidia.com/gpu.count": "4",
        "nvidia.com/gpu.memory": "284208",
        "nvidia.com/gpu.family": "blackwell",
        "nvidia.com/gpu.compute.major": "10",
        "nvidia.com/gpu.compute.minor": "3",
        "nvidia.com/gpu.clique": clique,
        "nvidia.com/gpu.machine": "GB300-NVL72",
        "nvidia.com/cuda.driver-version.major": major,
        "nvidia.com/cuda.driver-version.minor": minor,
        "nvidia.com/cuda.driver-version.revision": revision,
        "nvidia.com/cuda.driver-version.full": DRIVER,
        "nvidia.com/cuda.runtime-version.major": "13",
        "nvidia.com/cuda.runtime-version.minor": "0",
        "nvidia.com/mig.capable": "false",
    }
    resources = {"cpu": "144", "memory": "900Gi", "pods": "110", "ephemeral-storage": "3500Gi", "nvidia.com/gpu": "4"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels, "annotations": {KWOK_NODE_ANNOTATION: "fake"}},
        "spec": {"taints": [GPU_TAINT]},
        "status": {
            "capacity": resources,
            "allocatable": resources,
            "nodeInfo": {
                "architecture": "arm64",
                "operatingSystem": "linux",
                "kubeletVersion": k8s_version,
                "osImage": "Ubuntu 24.04.3 LTS",
                "kernelVersion": "6.8.0-1036-nvidia-64k",
                "containerRuntimeVersion": "containerd://2.1.4",
            },
        },
    }


def gb300_nodes(count: int, cliques: int, k8s_version: str, prefix: str = "gb300") -> list[dict[str, Any]]:
    """`count` GB300 nodes spread in order over `cliques` cliques (the first count/C in the first clique, ...)."""
    ids = clique_ids(cliques)
    per = -(-count // cliques)
    return [gb300_node(f"{prefix}-{i + 1:02d}", ids[i // per], k8s_version) for i in range(count)]


def nvl72_racks(racks: int, trays: int, k8s_version: str) -> list[dict[str, Any]]:
    """`racks` NVL72 racks of `trays` GB300 trays each, every rack its own clique: `gb300-rRR-tTT`."""
    ids = clique_ids(racks)
    return [
        gb300_node(f"gb300-r{r + 1:02d}-t{t + 1:02d}", ids[r], k8s_version) for r in range(racks) for t in range(trays)
    ]


def cpu_node(name: str, k8s_version: str) -> dict[str, Any]:
    """A system node without GPUs (where the prefetch and smoke Jobs' pods, which tolerate no GPU taint, run)."""
    node = gb300_node(name, "", k8s_version)
    labels = {k: v for k, v in node["metadata"]["labels"].items() if not k.startswith("nvidia.com/")}
    node["metadata"]["labels"] = {**labels, "kubernetes.io/arch": "amd64"}
    node["spec"] = {}
    resources = {"cpu": "32", "memory": "128Gi", "pods": "110", "ephemeral-storage": "1Ti"}
    node["status"].update(capacity=resources, allocatable=dict(resources))
    node["status"]["nodeInfo"].update(architecture="amd64", kernelVersion="6.8.0-88-generic")
    return node


def runtime_class(name: str = "nvidia") -> dict[str, Any]:
    """The RuntimeClass the GPU Operator's container toolkit creates."""
    return {"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass", "metadata": {"name": name}, "handler": name}


def storage_class(name: str, provisioner: str, default: bool = False) -> dict[str, Any]:
    """A StorageClass: `kubernetes.io/no-provisioner` (claims bind to pre-created volumes) or a CSI driver's."""
    annotations = {"storageclass.kubernetes.io/is-default-class": "true"} if default else {}
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"name": name, "annotations": annotations},
        "provisioner": provisioner,
        "reclaimPolicy": "Retain" if provisioner == "kubernetes.io/no-provisioner" else "Delete",
        "volumeBindingMode": "Immediate",
    }


def volume(name: str, storage_class_name: str, size: str = "4Ti", modes: tuple[str, ...] = ("ReadWriteMany",)) -> dict:
    """A pre-created PersistentVolume of a storage class (hostPath: no node affinity, nothing mounts it)."""
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": name},
        "spec": {
            "capacity": {"storage": size},
            "accessModes": list(modes),
            "storageClassName": storage_class_name,
            "persistentVolumeReclaimPolicy": "Retain",
            "hostPath": {"path": f"/srv/realk8s/{name}"},
        },
    }


def lws_webhooks(manifest_dir: Path, url: str, ca_pem: bytes) -> list[dict[str, Any]]:
    """LWS's webhook configurations (config/webhook of the built release, with its kustomize patches that narrow the
    pod webhooks to LWS pods), pointing at `url` with the plane's CA instead of the in-cluster Service."""
    docs = [d for d in yaml.safe_load_all((manifest_dir / "manifests.yaml").read_text()) if d]
    patches = {
        "MutatingWebhookConfiguration": yaml.safe_load((manifest_dir / "mutating-patch.yaml").read_text()),
        "ValidatingWebhookConfiguration": yaml.safe_load((manifest_dir / "validating-patch.yaml").read_text()),
    }
    bundle = base64.b64encode(ca_pem).decode()
    out = []
    for doc in docs:
        doc = copy.deepcopy(doc)
        for op in patches.get(doc["kind"], []):
            if op.get("op") == "replace" and op["path"].startswith("/webhooks/"):
                doc["webhooks"][int(op["path"].rsplit("/", 1)[1])] = copy.deepcopy(op["value"])
        doc["metadata"]["name"] = f"lws-{doc['metadata']['name']}"
        for hook in doc["webhooks"]:
            path = hook["clientConfig"]["service"]["path"]
            hook["clientConfig"] = {"url": url.rstrip("/") + path, "caBundle": bundle}
        out.append(doc)
    return out


def kwok_config(stage_dir: Path) -> str:
    """KWOK's --config: its options, its own Stages for the node lifecycle (initialise, heartbeat) and pods (ready,
    Job completion, delete), from the built KWOK release, and the plane's fault Stages (tests/realk8s/stages.py).
    Container logs come from the cluster's `Logs` and `ClusterLogs` objects, forwarded pod ports from its
    `PortForward` objects (KWOK's --enable-crds)."""
    # One worker plays the pod Stages. With KWOK's default of 4, a Stage matched on an older event of a pod can be
    # played at the same moment as the one matched on the newer event (pkg/kwok/controllers/pod_controller.go
    # `playStageWorker`), and the older one's status can land last: measured on the tier, a leader left Pending with
    # its IMEX gate open, and the LWS short of a group for good. One worker plays them in the order they were queued,
    # the newer job replacing a queued older one. A KwokConfiguration given in --config is not defaulted, so the rest
    # are KWOK's own defaults (pkg/apis/config/v1alpha1/zz_generated.defaults.go); flags still override them.
    options = {
        "podPlayStageParallelism": 1,
        "nodePlayStageParallelism": 4,
        "nodeLeaseParallelism": 4,
        "podsOnNodeSyncParallelism": 1,
        "enableDebuggingHandlers": True,
        "enableContentionProfiling": False,
        "enableProfilingHandler": True,
        "enablePodsOnNodeSyncListPager": True,
        "enablePodsOnNodeSyncStreamWatch": False,
        "nodeLeaseDurationSeconds": 40,
    }
    docs: list[dict] = [
        {"apiVersion": "config.kwok.x-k8s.io/v1alpha1", "kind": "KwokConfiguration", "options": options}
    ]
    for path in sorted(stage_dir.glob("*.yaml")):
        docs += [d for d in yaml.safe_load_all(path.read_text()) if d and d.get("kind") == "Stage"]
    docs += stages.fault_stages()
    return yaml.safe_dump_all(docs, sort_keys=False)


def port_forward(pod: str, namespace: str, port: int, host: str, host_port: int) -> dict[str, Any]:
    """A KWOK PortForward: `port` of pod `namespace/pod` (which need not exist yet) is served by HOST:HOST_PORT on
    this machine, so a `pods/portforward` stream through kube-apiserver reaches that process."""
    return {
        "apiVersion": "kwok.x-k8s.io/v1alpha1",
        "kind": "PortForward",
        "metadata": {"name": pod, "namespace": namespace},
        "spec": {"forwards": [{"ports": [port], "target": {"address": host, "port": host_port}}]},
    }


def cri_log(lines: list[str]) -> str:
    """`lines` as a container log file in the CRI format KWOK's Logs read (`<time> <stream> F <line>`)."""
    return "".join(f"2026-12-01T10:00:00.000000000Z stdout F {line}\n" for line in lines)


def cluster_admin_binding(user: str) -> dict[str, Any]:
    """A ClusterRoleBinding of `user` to cluster-admin."""
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": f"realk8s:{user}"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}],
    }


#: What the plane's admission says when KWOK's delete would hit a pod no one asked to terminate.
KWOK_STALE_DELETE = "kwok deletes a pod only while it is terminating"


def kwok_delete_policy(user: str) -> list[dict[str, Any]]:
    """A ValidatingAdmissionPolicy and its binding: `user` (KWOK) may delete a pod only while it is terminating.

    KWOK v0.8.0's pod-delete Stage deletes by namespace and name, with no UID precondition (sigs.k8s.io/kwok
    pkg/kwok/controllers/pod_controller.go `deleteResource`), once per watch event of a terminating pod; a late second
    delete of an old pod then lands on its replacement of the same name (a StatefulSet's, a group's recreated pod),
    seen on the tier during a group's roll. The kubelet KWOK stands in for deletes with the pod's UID as a
    precondition (kubernetes pkg/kubelet/status/status_manager.go), so no such delete reaches a newer pod. The stage
    deletes only pods with a deletionTimestamp (its selector), so the policy refuses exactly the stale delete: one of
    a pod no one has asked to terminate."""
    name = f"realk8s-{user}-deletes-terminating-pods"
    return [
        {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingAdmissionPolicy",
            "metadata": {"name": name},
            "spec": {
                "failurePolicy": "Fail",
                "matchConstraints": {
                    "resourceRules": [
                        {"apiGroups": [""], "apiVersions": ["v1"], "operations": ["DELETE"], "resources": ["pods"]}
                    ]
                },
                "matchConditions": [{"name": "kwok", "expression": f"request.userInfo.username == '{user}'"}],
                "validations": [
                    {
                        "expression": "has(oldObject.metadata.deletionTimestamp)",
                        "message": KWOK_STALE_DELETE,
                        "reason": "Forbidden",
                    }
                ],
            },
        },
        {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingAdmissionPolicyBinding",
            "metadata": {"name": name},
            "spec": {"policyName": name, "validationActions": ["Deny"]},
        },
    ]


def lws_workload(version: str) -> list[dict[str, Any]]:
    """The LWS controller's namespace and Deployment as its install names them (kubernetes-sigs/lws config/default:
    `lws-controller-manager` in `lws-system`, image registry.k8s.io/lws/lws), at 0 replicas: the controller itself
    runs outside the cluster, and this tells preflight which release it is."""
    labels = {"app.kubernetes.io/name": "lws", "app.kubernetes.io/version": version}
    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "lws-system"}},
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "lws-controller-manager", "namespace": "lws-system", "labels": labels},
            "spec": {
                "replicas": 0,
                "selector": {"matchLabels": {"control-plane": "controller-manager"}},
                "template": {
                    "metadata": {"labels": {"control-plane": "controller-manager", **labels}},
                    "spec": {"containers": [{"name": "manager", "image": f"registry.k8s.io/lws/lws:{version}"}]},
                },
            },
        },
    ]
