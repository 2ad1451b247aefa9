"""Cluster preflight over the real code path: the official kubernetes client, through a kubeconfig, against the
test API server populated with fake GB300 nodes. One healthy cluster, then one fault at a time."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable

import pytest

from k3deploy.errors import EnvironmentProblem
from k3deploy.kube.client import KubeOptions
from k3deploy.preflight.run import run_preflight
from k3deploy.profile import load_profile
from k3deploy.report.model import CheckResult, Status
from tests.conftest import run_cli
from tests.kubeapi.server import KubeApiServer
from tests.pin.distribution import Distribution

GB300 = "kimi-k3-gb300-tp16"
CLIQUE_A = "5b1c3a9e-2f4d-4e7a-9c1b-0d2e3f4a5b6c.1"
CLIQUE_B = "5b1c3a9e-2f4d-4e7a-9c1b-0d2e3f4a5b6c.2"
#: Every version pinned, as a production profile must be (floating ones FAIL; tests/preflight/test_checks_pinning.py).
from tests.preflight.test_checks_pinning import DIGEST, PINNED  # noqa: E402


def hold_gpus(kube: KubeApiServer, node: str, gpus: int = 4, name: str | None = None) -> None:
    """A running pod of someone else's that holds `gpus` nvidia.com/gpu on `node`."""
    kube.store.create(
        "pods",
        {
            "metadata": {"name": name or f"training-{node}", "namespace": "default"},
            "spec": {
                "nodeName": node,
                "restartPolicy": "Always",
                "containers": [
                    {
                        "name": "train",
                        "image": "nvcr.io/nvidia/pytorch:25.10-py3",
                        "resources": {"limits": {"nvidia.com/gpu": str(gpus)}},
                    }
                ],
            },
        },
        namespace="default",
    )


def healthy(kube: KubeApiServer) -> None:
    """Two cliques of GB300 trays: A has 4 nodes but one is busy, B has 4 free nodes; everything else in place."""
    kube.add_crds()
    kube.add_controller_workloads()
    kube.add_gb300_nodes(clique=CLIQUE_A, count=4, prefix="rack1")
    kube.add_gb300_nodes(clique=CLIQUE_B, count=4, prefix="rack2")
    hold_gpus(kube, "rack1-01")
    kube.add_storage_class("shared-nfs", provisioner="nfs.csi.k8s.io", default=True)
    kube.add_runtime_class("nvidia")
    kube.store.create("namespaces", {"metadata": {"name": "kimi-k3"}})
    kube.store.create(
        "secrets",
        {"metadata": {"name": "hf-token"}, "type": "Opaque", "data": {"token": base64.b64encode(b"hf_test").decode()}},
        namespace="kimi-k3",
    )


def preflight(kube: KubeApiServer, *sets: str) -> dict[str, CheckResult]:
    profile = load_profile(GB300, [*PINNED, *sets])
    results = run_preflight(profile, node=False, cluster=True, kube=KubeOptions(kubeconfig=str(kube.kubeconfig)))
    return {r.name: r for r in results}


def failing(results: dict[str, CheckResult]) -> set[str]:
    return {name for name, r in results.items() if r.status is Status.FAIL}


def test_healthy_two_clique_cluster_passes_and_picks_the_free_clique(
    kube: KubeApiServer,
    registry: Distribution,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    healthy(kube)
    monkeypatch.setenv("K3DEPLOY_REGISTRY_URL", registry.url)
    digest = registry.push_index("vllm/vllm-openai", "kimi-k3-aarch64-cu130", ["amd64", "arm64"])
    results = preflight(kube, f"vllm.image=vllm/vllm-openai:kimi-k3-aarch64-cu130@{digest}")
    assert {n: r.status.value for n, r in results.items() if r.status is not Status.PASS} == {}
    placement = results["k8s.placement"]
    assert placement.measured == f"clique {CLIQUE_B}: 4 eligible node(s)"
    assert placement.detail == f"the group fits in clique {CLIQUE_B} on rack2-05, rack2-06, rack2-07, rack2-08"
    assert results["k8s.image_arch"].measured == "arm64"
    # 53 before the review was derived from the set: its PodDisruptionBudget (4 verbs) went unasked.
    assert results["k8s.rbac"].measured == "57 verbs allowed"
    assert results["k8s.storage_class"].measured == "shared-nfs"
    assert results["k8s.storage_rwx"].measured == "shared-nfs: nfs.csi.k8s.io"
    assert results["k8s.runtime_class"].measured == "exists"
    assert "k8s.cache_pvc" not in results  # not created yet


def _group_pod(kube: KubeApiServer, node: str, labels: dict[str, str]) -> None:
    """A running pod of the deployment's namespace holding 4 GPUs on `node`."""
    kube.store.create(
        "pods",
        {
            "metadata": {"name": f"{GB300}-0-{node}", "namespace": "kimi-k3", "labels": labels},
            "spec": {
                "nodeName": node,
                "containers": [
                    {"name": "vllm", "image": "vllm/vllm-openai:x", "resources": {"limits": {"nvidia.com/gpu": "4"}}}
                ],
            },
        },
        namespace="kimi-k3",
    )


@pytest.mark.parametrize("ours", [True, False])
def test_own_running_group_does_not_count_as_taking_gpus(kube: KubeApiServer, ours: bool) -> None:
    """Re-running preflight on a live deployment (an upgrade) must not see our own group as someone else's."""
    healthy(kube)
    labels = {"leaderworkerset.sigs.k8s.io/name": GB300 if ours else "another-model"}
    for index in range(5, 9):
        _group_pod(kube, f"rack2-0{index}", labels)
    placement = preflight(kube)["k8s.placement"]
    if ours:
        assert placement.status is Status.PASS
        assert placement.measured == f"clique {CLIQUE_B}: 4 eligible node(s)"
    else:
        assert placement.status is Status.FAIL


def _no_lws(kube: KubeApiServer) -> None:
    kube.store.delete("customresourcedefinitions", "leaderworkersets.leaderworkerset.x-k8s.io")


def _no_compute_domain(kube: KubeApiServer) -> None:
    kube.store.delete("customresourcedefinitions", "computedomains.resource.nvidia.com")


def _only_three_free(kube: KubeApiServer) -> None:
    hold_gpus(kube, "rack2-06", gpus=2, name="notebook")


def _no_secret(kube: KubeApiServer) -> None:
    kube.store.delete("secrets", "hf-token", "kimi-k3")


def _secret_without_key(kube: KubeApiServer) -> None:
    kube.store.delete("secrets", "hf-token", "kimi-k3")
    kube.store.create("secrets", {"metadata": {"name": "hf-token"}, "data": {"HF_TOKEN": "aGY="}}, namespace="kimi-k3")


def _deny_create_lws(kube: KubeApiServer) -> None:
    kube.access.deny("create", "leaderworkersets", "leaderworkerset.x-k8s.io")


def _no_namespace_and_no_right_to_create_one(kube: KubeApiServer) -> None:
    kube.store.delete("secrets", "hf-token", "kimi-k3")
    kube.store.remove_now("namespaces", "kimi-k3")
    kube.access.deny("create", "namespaces")


def _unlabelled_gpu_nodes(kube: KubeApiServer) -> None:
    for node in ("rack2-05", "rack2-06", "rack2-07", "rack2-08"):
        kube.store.delete("nodes", node)
    for i in range(4):
        kube.add_node(f"bare-{i}", {}, {"cpu": "144", "nvidia.com/gpu": "4"})


def _old_driver_nodes(kube: KubeApiServer) -> None:
    kube.add_gb300_nodes(clique=CLIQUE_B, count=1, prefix="old", driver="575.57.08")


def _cordoned(kube: KubeApiServer) -> None:
    kube.store.update("nodes", "rack2-07", None, lambda node: node["spec"].update(unschedulable=True))


def _local_default_class(kube: KubeApiServer) -> None:
    kube.store.delete("storageclasses", "shared-nfs")
    kube.add_storage_class("local-nvme", provisioner="local.csi.openebs.io", default=True)


def _no_runtime_class(kube: KubeApiServer) -> None:
    kube.store.delete("runtimeclasses", "nvidia")


def _cache_pvc(access_mode: str, size: str) -> Callable[[KubeApiServer], None]:
    def fault(kube: KubeApiServer) -> None:
        kube.store.create(
            "persistentvolumeclaims",
            {
                "metadata": {"name": f"{GB300}-model-cache"},
                "spec": {
                    "accessModes": [access_mode],
                    "storageClassName": "shared-nfs",
                    "volumeMode": "Filesystem",
                    "resources": {"requests": {"storage": size}},
                },
            },
            namespace="kimi-k3",
        )

    return fault


def _no_default_class(kube: KubeApiServer) -> None:
    kube.store.delete("storageclasses", "shared-nfs")
    kube.add_storage_class("shared-rwx")


SCENARIOS: list[tuple[str, Callable[[KubeApiServer], None], list[str], set[str], str, str]] = [
    # (id, fault, --set, failing checks, words in the first failing check's detail or measured, words in its hint)
    ("missing-lws-crd", _no_lws, [], {"k8s.crd.leaderworkerset"}, "missing", "install LeaderWorkerSet"),
    (
        "missing-computedomain-crd",
        _no_compute_domain,
        [],
        {"k8s.crd.computedomain"},
        "missing",
        "helm chart dra-driver-nvidia-gpu",
    ),
    (
        "kubernetes-1.33",
        lambda kube: kube.set_version("v1.33.5"),
        [],
        {"k8s.version"},
        "v1.33.5",
        "upgrade the control plane",
    ),
    (
        "only-3-free-per-clique",
        _only_three_free,
        [],
        {"k8s.placement"},
        f"clique {CLIQUE_A} has 3 eligible node(s), needs 4; clique {CLIQUE_B} has 3 eligible node(s), needs 4",
        "free GPUs in one clique",
    ),
    (
        "amd64-image-on-arm64",
        lambda kube: None,
        [f"vllm.image=vllm/vllm-openai:kimi-k3@{DIGEST}", "vllm.image_arch=amd64"],
        {"k8s.image_arch"},
        f"vllm/vllm-openai:kimi-k3@{DIGEST} is built for amd64; the GPU nodes are arm64",
        "vllm.image_arch=arm64",
    ),
    ("missing-secret", _no_secret, [], {"k8s.secret"}, "missing", "kubectl create secret generic hf-token -n kimi-k3"),
    (
        "secret-without-key",
        _secret_without_key,
        [],
        {"k8s.secret"},
        "Secret hf-token has no key 'token'",
        "hf_token_secret.key",
    ),
    (
        "403-on-create",
        _deny_create_lws,
        [],
        {"k8s.rbac"},
        "denied in kimi-k3: create leaderworkersets.leaderworkerset.x-k8s.io",
        "kubectl auth can-i create leaderworkersets.leaderworkerset.x-k8s.io -n kimi-k3",
    ),
    (
        "namespace-not-creatable",
        _no_namespace_and_no_right_to_create_one,
        [],
        {"k8s.namespace", "k8s.secret"},
        "you may not create namespaces",
        "kubectl create namespace kimi-k3",
    ),
    (
        "no-gfd-labels",
        _unlabelled_gpu_nodes,
        [],
        {"k8s.gfd_labels", "k8s.placement"},
        "bare-0 lacks nvidia.com/gpu.product, nvidia.com/gpu.memory, nvidia.com/cuda.driver-version.full, nvidia.com/gpu.clique",
        "deploy GPU Feature Discovery",
    ),
    (
        "old-driver-label",
        _old_driver_nodes,
        [],
        {"k8s.gfd_labels"},
        "old-09: driver 575.57.08 < 580",
        "check the node's driver",
    ),
    ("cordoned-node", _cordoned, [], {"k8s.placement"}, "rack2-07: cordoned", "uncordon"),
    (
        "storage-class-missing",
        lambda kube: None,
        ["kubernetes.storage_class=fast-nvme"],
        {"k8s.storage_class"},
        "available: shared-nfs",
        "kubernetes.storage_class",
    ),
    (
        "no-default-storage-class",
        _no_default_class,
        [],
        {"k8s.storage_class"},
        "available: shared-rwx",
        "is-default-class",
    ),
    (
        "pvc-too-small",
        lambda kube: None,
        ["kubernetes.model_cache_size=1Ti"],
        {"k8s.cache_size"},
        "1,024 GiB cannot hold 1,459 GiB of weights",
        "model_cache_size to at least 1460Gi",
    ),
    (
        "node-local-storage-class",
        _local_default_class,
        [],
        {"k8s.storage_rwx"},
        "local.csi.openebs.io volumes attach to one node (ReadWriteOnce)",
        "shared file system class",
    ),
    (
        "missing-runtime-class",
        _no_runtime_class,
        [],
        {"k8s.runtime_class"},
        "refuses pods that name a missing RuntimeClass",
        "kubernetes.runtime_class",
    ),
    (
        "existing-rwo-cache-pvc",
        _cache_pvc("ReadWriteOnce", "2Ti"),
        [],
        {"k8s.cache_pvc"},
        f"{GB300}-model-cache: ReadWriteOnce",
        f"kubectl delete pvc {GB300}-model-cache -n kimi-k3",
    ),
    (
        "existing-small-cache-pvc",
        _cache_pvc("ReadWriteMany", "1Ti"),
        [],
        {"k8s.cache_pvc"},
        "1,024 GiB cannot hold 1,459 GiB of weights",
        "kubectl patch pvc",
    ),
    (
        "capacity-plan",
        lambda kube: None,
        ["hardware.gpu_memory_mib=115000"],
        {"plan.capacity"},
        "no room for one 1048576-token sequence: needs 16.68 GiB, 4.10 GiB left per GPU after weights",
        "lower vllm.max_model_len",
    ),
]


@pytest.mark.parametrize("fault,sets,fails,words,hint", [s[1:] for s in SCENARIOS], ids=[s[0] for s in SCENARIOS])
def test_each_fault_fails_its_check_with_its_hint(
    kube: KubeApiServer, fault: Callable[[KubeApiServer], None], sets: list[str], fails: set[str], words: str, hint: str
) -> None:
    healthy(kube)
    fault(kube)
    results = preflight(kube, *sets)
    assert failing(results) == fails
    first = next(r for r in results.values() if r.status is Status.FAIL)
    assert words in f"{first.measured} | {first.detail}"
    assert hint in (first.hint or "")


def test_missing_service_monitor_only_warns(kube: KubeApiServer) -> None:
    healthy(kube)
    kube.store.delete("customresourcedefinitions", "servicemonitors.monitoring.coreos.com")
    results = preflight(kube)
    assert failing(results) == set()
    assert results["k8s.crd.servicemonitor"].status is Status.WARN


def test_absent_namespace_that_may_be_created_passes(kube: KubeApiServer) -> None:
    healthy(kube)
    kube.store.delete("secrets", "hf-token", "kimi-k3")
    kube.store.remove_now("namespaces", "kimi-k3")
    results = preflight(kube, "kubernetes.hf_token_secret=null")
    assert failing(results) == set()
    assert (results["k8s.namespace"].measured, results["k8s.namespace"].detail) == (
        "kimi-k3 absent",
        "`up` will create it",
    )


def test_forbidden_to_list_nodes_is_exit_3(kube: KubeApiServer) -> None:
    healthy(kube)
    kube.access.deny("list", "nodes")
    with pytest.raises(EnvironmentProblem) as info:
        preflight(kube)
    assert str(info.value) == (
        'list nodes: forbidden: nodes is forbidden: User "test-user" cannot list resource "nodes" '
        'in API group "" at the cluster scope'
    )


def test_cli_healthy_cluster_json_exit_0(kube: KubeApiServer, registry: Distribution) -> None:
    healthy(kube)
    digest = registry.push_index("vllm/vllm-openai", "kimi-k3-aarch64-cu130", ["amd64", "arm64"])
    sets = [*PINNED, f"vllm.image=vllm/vllm-openai:kimi-k3-aarch64-cu130@{digest}"]
    done = run_cli(
        "preflight",
        "-p",
        GB300,
        "--cluster",
        "--kubeconfig",
        str(kube.kubeconfig),
        "-o",
        "json",
        *[arg for s in sets for arg in ("--set", s)],
        env={"K3DEPLOY_REGISTRY_URL": registry.url},
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["status"] == "pass"
    checks = {c["name"]: c for c in report["checks"]}
    assert checks["k8s.placement"]["status"] == "pass"
    assert (checks["image.platforms"]["status"], checks["image.platforms"]["measured"]) == (
        "pass",
        "linux/amd64, linux/arm64/v8",
    )


def test_cli_image_without_the_nodes_platform_fails(kube: KubeApiServer, registry: Distribution) -> None:
    healthy(kube)
    registry.push_index("vllm/vllm-openai", "kimi-k3", ["amd64"])
    sets = [*PINNED, "vllm.image=vllm/vllm-openai:kimi-k3"]
    done = run_cli(
        "preflight",
        "-p",
        GB300,
        "--cluster",
        "--kubeconfig",
        str(kube.kubeconfig),
        "-o",
        "json",
        *[arg for s in sets for arg in ("--set", s)],
        env={"K3DEPLOY_REGISTRY_URL": registry.url},
    )
    assert done.returncode == 1
    checks = {c["name"]: c["status"] for c in json.loads(done.stdout)["checks"]}
    assert (checks["image.platforms"], checks["profile.vllm.image"]) == ("fail", "fail")


def test_unreachable_registry_only_warns(kube: KubeApiServer) -> None:
    healthy(kube)
    result = preflight(kube)["image.platforms"]
    assert result.status is Status.WARN and "cannot reach registry 127.0.0.1:9" in result.detail


def test_cli_missing_crd_exit_1_and_table(kube: KubeApiServer) -> None:
    healthy(kube)
    _no_lws(kube)
    done = run_cli(
        "preflight",
        "-p",
        GB300,
        "--cluster",
        "--kubeconfig",
        str(kube.kubeconfig),
        *[arg for s in PINNED for arg in ("--set", s)],
    )
    assert done.returncode == 1
    rows = {line.split()[0]: line.split()[1] for line in done.stdout.splitlines()[1:] if len(line.split()) > 1}
    assert rows["k8s.crd.leaderworkerset"] == "FAIL" and rows["k8s.placement"] == "PASS"
    assert "error: preflight failed 1 check(s): k8s.crd.leaderworkerset" in done.stderr


def test_cli_api_unreachable_exit_3(kube: KubeApiServer) -> None:
    healthy(kube)
    kube.faults.add("*", ".*", drop=True, times=None)
    done = run_cli("preflight", "-p", GB300, "--cluster", "--kubeconfig", str(kube.kubeconfig))
    assert done.returncode == 3
    [error] = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert error.startswith("error: read the server version: Kubernetes API unreachable at 127.0.0.1:")
    assert "Remote end closed connection without response" in error
    assert "Traceback" not in done.stderr


def test_cli_namespace_and_context_options(kube: KubeApiServer) -> None:
    healthy(kube)
    done = run_cli(
        "preflight",
        "-p",
        GB300,
        "--cluster",
        "--kubeconfig",
        str(kube.kubeconfig),
        "--context",
        "test",
        "-n",
        "other",
        "-o",
        "json",
    )
    assert done.returncode == 1
    checks = {c["name"]: c for c in json.loads(done.stdout)["checks"]}
    assert (checks["k8s.namespace"]["status"], checks["k8s.namespace"]["measured"]) == ("pass", "other absent")
    assert checks["k8s.secret"]["target"] == "Secret hf-token with key token in other"
    unknown = run_cli("preflight", "-p", GB300, "--cluster", "--kubeconfig", str(kube.kubeconfig), "--context", "nope")
    assert unknown.returncode == 3
    assert unknown.stderr.startswith("error: no usable Kubernetes configuration:")


def test_existing_rwx_cache_pvc_passes_and_an_unknown_provisioner_only_warns(kube: KubeApiServer) -> None:
    healthy(kube)
    _cache_pvc("ReadWriteMany", "2Ti")(kube)
    kube.add_storage_class("vendor-fs", provisioner="csi.example.com")
    results = preflight(kube, "kubernetes.storage_class=vendor-fs")
    assert results["k8s.cache_pvc"].status is Status.PASS
    assert results["k8s.storage_rwx"].status is Status.WARN
    assert "cannot tell whether csi.example.com gives ReadWriteMany" in results["k8s.storage_rwx"].detail


def test_runtime_class_null_asks_nothing(kube: KubeApiServer) -> None:
    healthy(kube)
    _no_runtime_class(kube)
    assert "k8s.runtime_class" not in preflight(kube, "kubernetes.runtime_class=null")
