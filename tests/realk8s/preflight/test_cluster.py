"""`preflight --cluster` against a real kube-apiserver (a plane of the package's own, tests/realk8s/preflight/
cluster.py): real discovery of the CRDs, real nodes KWOK runs and real pods holding their GPUs, real StorageClasses
and RuntimeClasses, real RBAC answering the access reviews and the reads of a deployer bound to real Roles. One
healthy cluster, then one fault at a time, each made on the real server (a CRD deleted, a node cordoned or
relabelled, a Role without a verb) and put back after; only a rewritten /version and a dropped connection come
from the fault proxy, as a real server does not produce them on demand."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from pathlib import Path

import pytest

from k3deploy.errors import EnvironmentProblem
from k3deploy.report.model import Status
from tests.pin.distribution import Distribution
from tests.preflight.test_checks_pinning import DIGEST
from tests.realk8s import objects
from tests.realk8s.client import resource_path
from tests.realk8s.preflight.cluster import (
    CLIQUE_A,
    CLIQUE_B,
    GB300,
    RUNTIME_CLASS,
    PreflightCluster,
    failing,
    read_rules,
    up_rules,
)

pytestmark = [pytest.mark.realk8s, pytest.mark.timeout(300)]
LWS_CRD = "leaderworkersets.leaderworkerset.x-k8s.io"
STORAGE = "storage.k8s.io/v1"
DEFAULT_CLASS = "storageclass.kubernetes.io/is-default-class"
#: The labels GPU Feature Discovery sets that preflight reads (a node without them is not known to be a GB300).
GFD = (
    "nvidia.com/gpu.product",
    "nvidia.com/gpu.memory",
    "nvidia.com/cuda.driver-version.full",
    "nvidia.com/gpu.clique",
)


def _no_default_class(c: PreflightCluster) -> None:
    path = resource_path(STORAGE, "storageclasses", name="shared-rwx")
    c.patch(path, {"metadata": {"annotations": {DEFAULT_CLASS: None}}})
    c.on_teardown(lambda: c.patch(path, {"metadata": {"annotations": {DEFAULT_CLASS: "true"}}}))


def _storage_class(c: PreflightCluster, name: str, provisioner: str, default: bool = False) -> None:
    c.add_cluster_object(resource_path(STORAGE, "storageclasses"), objects.storage_class(name, provisioner, default))


def _cache_pvc(access_mode: str, size: str) -> Callable[[PreflightCluster], None]:
    def fault(c: PreflightCluster) -> None:
        claim = {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": {"name": f"{GB300}-model-cache"},
            "spec": {
                "accessModes": [access_mode],
                "storageClassName": "shared-rwx",
                "volumeMode": "Filesystem",
                "resources": {"requests": {"storage": size}},
            },
        }
        c.create("v1", "persistentvolumeclaims", claim)

    return fault


def _unlabelled_gpu_nodes(c: PreflightCluster) -> None:
    """Clique B's trays without GPU Feature Discovery's labels (as before GFD runs on them)."""
    for index in range(5, 9):
        node = f"gb300-0{index}"
        labels = c.api.get(f"/api/v1/nodes/{node}")["metadata"]["labels"]
        nvidia = {k: v for k, v in labels.items() if k.startswith("nvidia.com/")}
        c.patch_node(node, {"metadata": {"labels": dict.fromkeys(nvidia)}}, {"metadata": {"labels": nvidia}})


def _old_driver_node(c: PreflightCluster) -> None:
    node = objects.gb300_node("old-09", CLIQUE_B, c.plane.binaries.versions["K8S_VERSION"])
    major, minor, revision = ["575", "57", "08"]
    node["metadata"]["labels"].update(
        {
            "nvidia.com/cuda.driver-version.full": "575.57.08",
            "nvidia.com/cuda.driver-version.major": major,
            "nvidia.com/cuda.driver-version.minor": minor,
            "nvidia.com/cuda.driver-version.revision": revision,
        }
    )
    c.add_node(node)


def _deny_create_lws(c: PreflightCluster) -> Path:
    lws = resource_path("leaderworkerset.x-k8s.io/v1", "leaderworkersets", c.namespace)
    without = ("create", "leaderworkersets", "leaderworkerset.x-k8s.io")
    return c.grant(read_rules(), up_rules(c.namespace, without), denied=("POST", lws))


def _no_namespace_and_no_right_to_create_one(c: PreflightCluster) -> Path:
    """A deployer with every verb `up` uses, cluster-wide, but `create namespaces`; the namespace absent."""
    return c.grant(read_rules() + up_rules(c.namespace), denied=("POST", "/api/v1/namespaces"))


def _version_1_33(c: PreflightCluster) -> Path:
    faults, kubeconfig = c.proxied()
    faults.add("GET", r"^/version\b", body_patch={"gitVersion": "v1.33.5", "minor": "33"}, times=None)
    return kubeconfig


Fault = Callable[[PreflightCluster], Path | None]
#: (id, namespace created, fault, --set, failing checks, words in the first failing check's detail or measured,
#: words in its hint); `{ns}` is the test's namespace.
SCENARIOS: list[tuple[str, bool, Fault, list[str], set[str], str, str]] = [
    (
        "missing-computedomain-crd",
        True,
        lambda c: c.remove_crd("computedomains.resource.nvidia.com"),
        [],
        {"k8s.crd.computedomain"},
        "missing",
        "helm chart dra-driver-nvidia-gpu",
    ),
    ("kubernetes-1.33", True, _version_1_33, [], {"k8s.version"}, "v1.33.5", "upgrade the control plane"),
    (
        "only-3-free-per-clique",
        True,
        lambda c: c.pod("notebook", "gb300-06", 2),
        [],
        {"k8s.placement"},
        f"clique {CLIQUE_A} has 3 eligible node(s), needs 4; clique {CLIQUE_B} has 3 eligible node(s), needs 4",
        "free GPUs in one clique",
    ),
    (
        "amd64-image-on-arm64",
        True,
        lambda c: None,
        [f"vllm.image=vllm/vllm-openai:kimi-k3@{DIGEST}", "vllm.image_arch=amd64"],
        {"k8s.image_arch"},
        f"vllm/vllm-openai:kimi-k3@{DIGEST} is built for amd64; the GPU nodes are arm64",
        "vllm.image_arch=arm64",
    ),
    (
        "missing-secret",
        False,
        lambda c: c.create_namespace(with_secret=False),
        [],
        {"k8s.secret"},
        "missing",
        "kubectl create secret generic hf-token -n {ns}",
    ),
    (
        "secret-without-key",
        False,
        lambda c: c.create_namespace({"HF_TOKEN": base64.b64encode(b"hf").decode()}),
        [],
        {"k8s.secret"},
        "Secret hf-token has no key 'token'",
        "hf_token_secret.key",
    ),
    (
        "403-on-create",
        True,
        _deny_create_lws,
        [],
        {"k8s.rbac"},
        "denied in {ns}: create leaderworkersets.leaderworkerset.x-k8s.io",
        "kubectl auth can-i create leaderworkersets.leaderworkerset.x-k8s.io -n {ns}",
    ),
    (
        "namespace-not-creatable",
        False,
        _no_namespace_and_no_right_to_create_one,
        [],
        {"k8s.namespace", "k8s.secret"},
        "you may not create namespaces",
        "kubectl create namespace {ns}",
    ),
    (
        "no-gfd-labels",
        True,
        _unlabelled_gpu_nodes,
        [],
        {"k8s.gfd_labels", "k8s.placement"},
        "gb300-05 lacks " + ", ".join(GFD),
        "deploy GPU Feature Discovery",
    ),
    (
        "old-driver-label",
        True,
        _old_driver_node,
        [],
        {"k8s.gfd_labels"},
        "old-09: driver 575.57.08 < 580",
        "check the node's driver",
    ),
    (
        "cordoned-node",
        True,
        lambda c: c.patch_node("gb300-07", {"spec": {"unschedulable": True}}, {"spec": {"unschedulable": None}}),
        [],
        {"k8s.placement"},
        "gb300-07: cordoned",
        "uncordon",
    ),
    (
        "storage-class-missing",
        True,
        lambda c: None,
        ["kubernetes.storage_class=fast-nvme"],
        {"k8s.storage_class"},
        "available: node-local, shared-rwx",
        "kubernetes.storage_class",
    ),
    (
        "no-default-storage-class",
        True,
        _no_default_class,
        [],
        {"k8s.storage_class"},
        "available: node-local, shared-rwx",
        "is-default-class",
    ),
    (
        "pvc-too-small",
        True,
        lambda c: None,
        ["kubernetes.model_cache_size=1Ti"],
        {"k8s.cache_size"},
        "1,024 GiB cannot hold 1,459 GiB of weights",
        "model_cache_size to at least 1460Gi",
    ),
    (
        "node-local-storage-class",
        True,
        lambda c: (_no_default_class(c), _storage_class(c, "local-nvme", "local.csi.openebs.io", default=True))[0],
        [],
        {"k8s.storage_rwx"},
        "local.csi.openebs.io volumes attach to one node (ReadWriteOnce)",
        "shared file system class",
    ),
    (
        "missing-runtime-class",
        True,
        lambda c: c.remove(RUNTIME_CLASS),
        [],
        {"k8s.runtime_class"},
        "refuses pods that name a missing RuntimeClass",
        "kubernetes.runtime_class",
    ),
    (
        "existing-rwo-cache-pvc",
        True,
        _cache_pvc("ReadWriteOnce", "2Ti"),
        [],
        {"k8s.cache_pvc"},
        f"{GB300}-model-cache: ReadWriteOnce",
        f"kubectl delete pvc {GB300}-model-cache -n {{ns}}",
    ),
    (
        "existing-small-cache-pvc",
        True,
        _cache_pvc("ReadWriteMany", "1Ti"),
        [],
        {"k8s.cache_pvc"},
        "1,024 GiB cannot hold 1,459 GiB of weights",
        "kubectl patch pvc",
    ),
    (
        "capacity-plan",
        True,
        lambda c: None,
        ["hardware.gpu_memory_mib=115000"],
        {"plan.capacity"},
        "no room for one 1048576-token sequence: needs 16.68 GiB, 4.10 GiB left per GPU after weights",
        "lower vllm.max_model_len",
    ),
]


def test_healthy_two_clique_cluster_passes_picks_the_free_clique_and_warns_of_the_one_too_small(
    cluster: PreflightCluster, registry: Distribution, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("K3DEPLOY_REGISTRY_URL", registry.url)
    digest = registry.push_index("vllm/vllm-openai", "kimi-k3-aarch64-cu130", ["amd64", "arm64"])
    results = cluster.preflight(f"vllm.image=vllm/vllm-openai:kimi-k3-aarch64-cu130@{digest}")
    # Clique A's 3 free trays (gb300-01 is someone else's) can take the leader, never the group.
    assert {n: r.status.value for n, r in results.items() if r.status is not Status.PASS} == {"k8s.placement": "warn"}
    placement = results["k8s.placement"]
    assert placement.measured == f"clique {CLIQUE_B}: 4 eligible node(s)"
    assert placement.detail == (
        f"the group fits in clique {CLIQUE_B} on gb300-05, gb300-06, gb300-07, gb300-08; but clique {CLIQUE_A} has "
        "3 free tray(s), fewer than the 4 a group needs: with kubernetes.gang_admission none and no "
        "kubernetes.clique, a leader the scheduler puts there waits forever for its workers"
    )
    assert (placement.hint or "").startswith(f"set kubernetes.clique={CLIQUE_B} (the group is pinned where it fits)")
    pinned = cluster.preflight(f"kubernetes.clique={CLIQUE_B}")["k8s.placement"]
    assert (pinned.status, pinned.measured) == (Status.PASS, f"clique {CLIQUE_B}: 4 eligible node(s)")
    assert results["k8s.image_arch"].measured == "arm64"
    # 53 before the review was derived from the set: its PodDisruptionBudget (4 verbs) went unasked; 57 before the
    # wait judged claims: the set mounts one, so list/watch on claims and StorageClasses and watch on events (5).
    # 72 since the traffic gate (pods get/patch, the smoke Job's own Role, RoleBinding and ServiceAccount) and the
    # node-local staging's DaemonSets joined the set's review.
    assert results["k8s.rbac"].measured == "72 verbs allowed"
    assert results["k8s.storage_class"].measured == "shared-rwx"
    assert results["k8s.storage_rwx"].measured == "shared-rwx: nfs.csi.k8s.io"
    assert results["k8s.runtime_class"].measured == "exists"
    assert (results["k8s.lws_version"].status, results["k8s.dra_driver_version"].measured) == (Status.PASS, "v25.12.0")
    assert "k8s.cache_pvc" not in results  # not created yet


@pytest.mark.parametrize("ours", [True, False])
def test_own_running_group_does_not_count_as_taking_gpus(cluster: PreflightCluster, ours: bool) -> None:
    """Re-running preflight on a live deployment (an upgrade) must not see our own group as someone else's."""
    # A group's pods as the LWS controller labels them (its pod webhook refuses one without the group's size).
    name = GB300 if ours else "another-model"
    for index in range(5, 9):
        labels = {
            "leaderworkerset.sigs.k8s.io/name": name,
            "leaderworkerset.sigs.k8s.io/group-index": "0",
            "leaderworkerset.sigs.k8s.io/worker-index": str(index - 5),
        }
        sizes = {"leaderworkerset.sigs.k8s.io/size": "4"}
        cluster.pod(f"{name}-0-{index - 5}", f"gb300-0{index}", 4, labels, sizes)
    placement = cluster.preflight()["k8s.placement"]
    if ours:
        # Our group's trays count as free: the group fits in B (A's 3 free trays only warn, as on the bare plane).
        assert placement.status is Status.WARN
        assert placement.measured == f"clique {CLIQUE_B}: 4 eligible node(s)"
    else:
        assert placement.status is Status.FAIL


@pytest.mark.parametrize("ready,fault,sets,fails,words,hint", [s[1:] for s in SCENARIOS], ids=[s[0] for s in SCENARIOS])
def test_each_fault_fails_its_check_with_its_hint(
    bare_cluster: PreflightCluster,
    ready: bool,
    fault: Fault,
    sets: list[str],
    fails: set[str],
    words: str,
    hint: str,
) -> None:
    if ready:
        bare_cluster.create_namespace()
    kubeconfig = fault(bare_cluster)
    results = bare_cluster.preflight(*sets, kubeconfig=kubeconfig)
    assert failing(results) == fails
    first = next(r for r in results.values() if r.status is Status.FAIL)
    ns = bare_cluster.namespace
    assert words.format(ns=ns) in f"{first.measured} | {first.detail}"
    assert hint.format(ns=ns) in (first.hint or "")


def test_missing_service_monitor_only_warns(cluster: PreflightCluster) -> None:
    cluster.remove_crd("servicemonitors.monitoring.coreos.com")
    results = cluster.preflight()
    assert failing(results) == set()
    assert results["k8s.crd.servicemonitor"].status is Status.WARN


def test_absent_namespace_that_may_be_created_passes(bare_cluster: PreflightCluster) -> None:
    results = bare_cluster.preflight("kubernetes.hf_token_secret=null")
    assert failing(results) == set()
    assert (results["k8s.namespace"].measured, results["k8s.namespace"].detail) == (
        f"{bare_cluster.namespace} absent",
        "`up` will create it",
    )


def test_forbidden_to_list_nodes_is_exit_3(cluster: PreflightCluster) -> None:
    rules = [
        {**rule, "resources": [r for r in rule["resources"] if r != "nodes"]} if rule["apiGroups"] == [""] else rule
        for rule in read_rules()
    ]
    kubeconfig = cluster.grant(rules, up_rules(cluster.namespace), denied=("GET", "/api/v1/nodes"))
    with pytest.raises(EnvironmentProblem) as info:
        cluster.preflight(kubeconfig=kubeconfig)
    assert str(info.value) == (
        'list nodes: forbidden: nodes is forbidden: User "realk8s-deployer" cannot list resource "nodes" '
        'in API group "" at the cluster scope'
    )


def _sets(*sets: str) -> list[str]:
    return [arg for s in sets for arg in ("--set", s)]


def test_cli_healthy_cluster_json_exit_0(cluster: PreflightCluster, registry: Distribution) -> None:
    digest = registry.push_index("vllm/vllm-openai", "kimi-k3-aarch64-cu130", ["amd64", "arm64"])
    sets = cluster.sets(f"vllm.image=vllm/vllm-openai:kimi-k3-aarch64-cu130@{digest}")
    done = cluster.cli("-o", "json", *_sets(*sets), env={"K3DEPLOY_REGISTRY_URL": registry.url})
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["status"] == "warn"  # the small clique A (see the first test): a WARN does not fail preflight
    checks = {c["name"]: c for c in report["checks"]}
    assert {n: c["status"] for n, c in checks.items() if c["status"] != "pass"} == {"k8s.placement": "warn"}
    assert (checks["image.platforms"]["status"], checks["image.platforms"]["measured"]) == (
        "pass",
        "linux/amd64, linux/arm64/v8",
    )


def test_cli_image_without_the_nodes_platform_fails(cluster: PreflightCluster, registry: Distribution) -> None:
    registry.push_index("vllm/vllm-openai", "kimi-k3", ["amd64"])
    sets = cluster.sets("vllm.image=vllm/vllm-openai:kimi-k3")
    done = cluster.cli("-o", "json", *_sets(*sets), env={"K3DEPLOY_REGISTRY_URL": registry.url})
    assert done.returncode == 1
    checks = {c["name"]: c["status"] for c in json.loads(done.stdout)["checks"]}
    assert (checks["image.platforms"], checks["profile.vllm.image"]) == ("fail", "fail")


def test_unreachable_registry_only_warns(cluster: PreflightCluster) -> None:
    result = cluster.preflight()["image.platforms"]
    assert result.status is Status.WARN and "cannot reach registry 127.0.0.1:9" in result.detail


def test_missing_lws_crd_fails_its_check_and_the_cli_exits_1_with_the_table(cluster: PreflightCluster) -> None:
    """One deletion of the LWS CRD (the costliest change) for the check and the CLI's table and exit code."""
    cluster.remove_crd(LWS_CRD)
    results = cluster.preflight()
    assert failing(results) == {"k8s.crd.leaderworkerset"}
    crd = results["k8s.crd.leaderworkerset"]
    assert "missing" in f"{crd.measured} | {crd.detail}" and "install LeaderWorkerSet" in (crd.hint or "")

    done = cluster.cli(*_sets(*cluster.sets()))
    assert done.returncode == 1
    rows = {line.split()[0]: line.split()[1] for line in done.stdout.splitlines()[1:] if len(line.split()) > 1}
    assert rows["k8s.crd.leaderworkerset"] == "FAIL" and rows["k8s.placement"] == "WARN"
    assert "error: preflight failed 1 check(s): k8s.crd.leaderworkerset" in done.stderr


def test_cli_api_unreachable_exit_3(cluster: PreflightCluster) -> None:
    faults, kubeconfig = cluster.proxied()
    faults.add("*", ".*", drop=True, times=None)
    done = cluster.cli(kubeconfig=kubeconfig)
    assert done.returncode == 3
    [error] = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert error.startswith("error: read the server version: Kubernetes API unreachable at 127.0.0.1:")
    assert "Remote end closed connection without response" in error
    assert "Traceback" not in done.stderr


def test_cli_namespace_and_context_options(cluster: PreflightCluster) -> None:
    other = f"{cluster.namespace}-other"
    done = cluster.cli("--context", "realk8s", "-n", other, "-o", "json")
    assert done.returncode == 1
    checks = {c["name"]: c for c in json.loads(done.stdout)["checks"]}
    assert (checks["k8s.namespace"]["status"], checks["k8s.namespace"]["measured"]) == ("pass", f"{other} absent")
    assert checks["k8s.secret"]["target"] == f"Secret hf-token with key token in {other}"
    unknown = cluster.cli("--context", "nope")
    assert unknown.returncode == 3
    assert unknown.stderr.startswith("error: no usable Kubernetes configuration:")


def test_existing_rwx_cache_pvc_passes_and_an_unknown_provisioner_only_warns(cluster: PreflightCluster) -> None:
    _cache_pvc("ReadWriteMany", "2Ti")(cluster)
    _storage_class(cluster, "vendor-fs", "csi.example.com")
    results = cluster.preflight("kubernetes.storage_class=vendor-fs")
    assert results["k8s.cache_pvc"].status is Status.PASS
    assert results["k8s.storage_rwx"].status is Status.WARN
    assert "cannot tell whether csi.example.com gives ReadWriteMany" in results["k8s.storage_rwx"].detail


def test_runtime_class_null_asks_nothing(cluster: PreflightCluster) -> None:
    cluster.remove(RUNTIME_CLASS)
    assert "k8s.runtime_class" not in cluster.preflight("kubernetes.runtime_class=null")
