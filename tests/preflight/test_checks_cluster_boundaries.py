"""The cluster checks pinned at their boundaries (survivors of tests/mutation/run on preflight/checks_cluster.py):
DRA from Kubernetes 1.34 on (a FAIL with ComputeDomains, else a WARN); each CRD looked for only when the profile uses
it, a missing one failing (or warning, for monitoring); a GPU node is one with at least one allocatable GPU; GFD values
below the hardware's are refused, equal ones pass; six reasons shown, then a count; the namespace, Secret,
RuntimeClass, RBAC and image-arch rules on both sides."""

from __future__ import annotations

from k3deploy.preflight.checks_cluster import (
    COMPUTE_DOMAIN_CRD,
    INFERENCE_POOL_CRD,
    LWS_CRD,
    PROMETHEUS_RULE_CRD,
    SERVICE_MONITOR_CRD,
    _reasons,
    cluster_checks,
    eligible_hosts,
)
from k3deploy.preflight.facts import AccessFacts, ClusterFacts
from k3deploy.profile import Profile, load_profile
from k3deploy.render.manifests import rendered_objects
from k3deploy.report.model import CheckResult, Status
from tests.preflight.test_checks_cluster import CLIQUE_A, CLIQUE_B, GB300, facts, gb300

K3 = "kimi-k3-gb300-tp16"
ALL_CRDS = [LWS_CRD, COMPUTE_DOMAIN_CRD, SERVICE_MONITOR_CRD, PROMETHEUS_RULE_CRD, INFERENCE_POOL_CRD]


def four(clique: str | None = CLIQUE_A, **labels: str) -> list:
    return [gb300(f"n{i}", clique, **labels) for i in range(4)]


_OBJECTS: dict[str, list] = {}


def profile(*sets: str) -> Profile:
    return load_profile(K3, list(sets))


HOST_IMEX = profile("kubernetes.compute_domain=false")
POOL = profile("kubernetes.routing=inference-pool", "kubernetes.gateway_namespace=envoy-gateway-system")
NO_NVLINK = profile("hardware.nvlink_domain=false", "kubernetes.compute_domain=false")
TWO = profile("parallel.replicas=2")


def checks(cluster: ClusterFacts, p: Profile = GB300) -> dict[str, CheckResult]:
    """The checks by name; the rendered set of each profile is built once (rendering is what takes the time)."""
    key = p.model_dump_json()
    if key not in _OBJECTS:
        _OBJECTS[key] = rendered_objects(p)
    return {r.name: r for r in cluster_checks(p, cluster, _OBJECTS[key])}


# --- the Kubernetes version: DRA from 1.34 ---------------------------------------------------------------------------


def test_dra_is_on_by_default_from_kubernetes_1_34() -> None:
    for version in ("v1.34.0", "v1.34.1-gke.2", "v1.35.0", "v2.0.0"):
        result = checks(facts(four(), server_version=version))["k8s.version"]
        assert (result.status, result.measured, result.target, result.detail) == (Status.PASS, version, ">= 1.34", "")


def test_kubernetes_1_33_fails_with_compute_domains_and_warns_without() -> None:
    result = checks(facts(four(), server_version="v1.33.9"))["k8s.version"]
    assert result.status is Status.FAIL
    assert result.detail.startswith("Kubernetes 1.33 does not enable DRA by default")
    assert "upgrade the control plane and kubelets to 1.34+" in (result.hint or "")
    assert checks(facts(four(), server_version="v1.33.9"), HOST_IMEX)["k8s.version"].status is Status.WARN


# --- CRDs: looked for when used, missing ones fail (monitoring ones warn) --------------------------------------------


def test_every_crd_the_profile_uses_is_looked_for_and_passes_when_served() -> None:
    results = checks(facts(four(), resources=ALL_CRDS), POOL)
    crds = {n: r for n, r in results.items() if n.startswith("k8s.crd.")}
    assert {n: (r.status, r.measured) for n, r in crds.items()} == {
        name: (Status.PASS, "served")
        for name in (
            "k8s.crd.leaderworkerset",
            "k8s.crd.computedomain",
            "k8s.crd.servicemonitor",
            "k8s.crd.prometheusrule",
            "k8s.crd.inferencepool",
        )
    }
    assert all(r.detail == "" for r in crds.values())


def test_each_missing_crd_fails_or_for_monitoring_warns() -> None:
    results = checks(facts(four(), resources=[]), POOL)
    expected = {
        "k8s.crd.leaderworkerset": Status.FAIL,
        "k8s.crd.computedomain": Status.FAIL,
        "k8s.crd.servicemonitor": Status.WARN,
        "k8s.crd.prometheusrule": Status.WARN,
        "k8s.crd.inferencepool": Status.FAIL,
    }
    assert {n: results[n].status for n in expected} == expected
    for name in expected:
        assert results[name].measured == "missing" and results[name].detail and results[name].hint, name
    assert "LeaderWorkerSet" in results["k8s.crd.leaderworkerset"].detail
    assert "IMEX" in results["k8s.crd.computedomain"].detail
    assert "/metrics" in results["k8s.crd.servicemonitor"].detail
    assert "alerts" in results["k8s.crd.prometheusrule"].detail
    assert "InferencePool" in results["k8s.crd.inferencepool"].detail


def test_a_crd_the_profile_does_not_use_is_not_looked_for() -> None:
    off = profile("kubernetes.compute_domain=false", "kubernetes.service_monitor=false", "kubernetes.monitoring=false")
    names = {n for n in checks(facts(four(), resources=[]), off) if n.startswith("k8s.crd.")}
    assert names == {"k8s.crd.leaderworkerset"}
    assert "k8s.crd.inferencepool" not in checks(facts(four(), resources=[]))


# --- GFD labels --------------------------------------------------------------------------------------------------------


def test_a_node_with_no_allocatable_gpu_is_no_gpu_node_and_one_gpu_makes_one() -> None:
    cpu = [n.model_copy(update={"allocatable_gpus": 0}) for n in four()]
    gfd = checks(facts(cpu))["k8s.gfd_labels"]
    assert (gfd.status, gfd.measured) == (Status.FAIL, "no node advertises nvidia.com/gpu")
    assert gfd.detail == "none of 4 node(s) has allocatable nvidia.com/gpu"
    one = [cpu[0].model_copy(update={"allocatable_gpus": 1}), *cpu[1:]]
    assert checks(facts(one))["k8s.gfd_labels"].measured == "1 of 1 GPU node(s) labelled"


def test_each_missing_label_is_named_and_the_clique_label_is_wanted_only_with_nvlink() -> None:
    nodes = four()
    nodes[1] = nodes[1].model_copy(
        update={"labels": {k: v for k, v in nodes[1].labels.items() if k != "nvidia.com/gpu.memory"}}
    )
    nodes[2] = gb300("n2", None)
    gfd = checks(facts(nodes))["k8s.gfd_labels"]
    assert gfd.status is Status.FAIL and gfd.measured == "2 of 4 GPU node(s) labelled"
    assert gfd.detail == "n1 lacks nvidia.com/gpu.memory; n2 lacks nvidia.com/gpu.clique"
    assert gfd.target.endswith(", nvidia.com/gpu.clique")
    plain = checks(facts(four(None)), NO_NVLINK)["k8s.gfd_labels"]
    assert plain.status is Status.PASS and "gpu.clique" not in plain.target


def test_gpu_memory_below_the_hardware_is_refused_and_equal_passes() -> None:
    need = GB300.hardware.gpu_memory_mib  # type: ignore[union-attr]
    ok = checks(facts(four(**{"nvidia.com/gpu.memory": str(need)})))["k8s.gfd_labels"]
    assert ok.status is Status.PASS and ok.measured == "4 of 4 GPU node(s) labelled"
    low = checks(facts(four(**{"nvidia.com/gpu.memory": str(need - 1)})))["k8s.gfd_labels"]
    assert low.status is Status.FAIL
    assert low.detail.split("; ")[0] == f"n0: gpu.memory {need - 1} MiB < {need}"
    odd = checks(facts(four(**{"nvidia.com/gpu.memory": "lots"})))["k8s.gfd_labels"]
    assert odd.status is Status.PASS  # a value that is no number is not judged


def test_a_driver_below_the_hardware_minimum_is_refused_and_equal_passes() -> None:
    need = GB300.hardware.min_driver_version  # type: ignore[union-attr]
    assert need == "580.95.05"
    assert checks(facts(four(**{"nvidia.com/cuda.driver-version.full": need})))["k8s.gfd_labels"].status is Status.PASS
    newer = {"nvidia.com/cuda.driver-version.full": "580.95.06"}
    assert checks(facts(four(**newer)))["k8s.gfd_labels"].status is Status.PASS
    older = checks(facts(four(**{"nvidia.com/cuda.driver-version.full": "580.95.04"})))["k8s.gfd_labels"]
    assert older.status is Status.FAIL and older.detail.split("; ")[0] == f"n0: driver 580.95.04 < {need}"


def test_six_node_reasons_are_shown_and_the_rest_counted() -> None:
    nodes = [gb300(f"n{i}", None) for i in range(8)]
    gfd = checks(facts(nodes))["k8s.gfd_labels"]
    assert gfd.detail.count("lacks") == 6 and "n5 lacks" in gfd.detail and "n6" not in gfd.detail
    assert _reasons([]) == ""
    assert _reasons([f"r{i}" for i in range(6)]) == " (r0; r1; r2; r3; r4; r5)"
    assert _reasons([f"r{i}" for i in range(7)]) == " (r0; r1; r2; r3; r4; r5; 1 more)"


# --- placement ----------------------------------------------------------------------------------------------------------


def test_a_clique_with_exactly_a_groups_trays_is_eligible_and_one_fewer_is_not() -> None:
    nodes = [gb300(f"a{i}", CLIQUE_A) for i in range(4)] + [gb300(f"b{i}", CLIQUE_B) for i in range(3)]
    assert eligible_hosts(GB300, nodes) == ["a0", "a1", "a2", "a3"]


def test_without_gpu_nodes_placement_says_none_is_eligible() -> None:
    cpu = [n.model_copy(update={"allocatable_gpus": 0}) for n in four()]
    placement = checks(facts(cpu))["k8s.placement"]
    assert placement.status is Status.FAIL and placement.measured.startswith("no GPU node is eligible")
    assert placement.target == "4 nodes with 4 free nvidia.com/gpu in one nvidia.com/gpu.clique"


def test_without_nvlink_a_short_cluster_counts_its_nodes() -> None:
    placement = checks(facts([gb300(f"n{i}", None) for i in range(3)]), NO_NVLINK)["k8s.placement"]
    assert placement.status is Status.FAIL and placement.measured == "3 eligible node(s), needs 4"
    assert placement.target == "4 nodes with 4 free nvidia.com/gpu"
    cpu = [n.model_copy(update={"allocatable_gpus": 0}) for n in four(None)]
    assert checks(facts(cpu), NO_NVLINK)["k8s.placement"].measured == "0 eligible node(s), needs 4"
    fits = checks(facts(four(None)), NO_NVLINK)["k8s.placement"]
    assert fits.status is Status.PASS and fits.measured == "the cluster: 4 eligible node(s)"


def test_groups_that_do_not_all_fit_hint_at_the_replicas_that_do_and_none_fitting_hints_nothing_more() -> None:
    some = checks(facts(four()), TWO)["k8s.placement"]
    assert some.status is Status.FAIL and some.measured == "1 of 2 groups fit"
    assert (some.hint or "").endswith("; or lower parallel.replicas to 1")
    assert f"clique {CLIQUE_A} takes group 0 and lacks trays" in some.detail
    none = checks(facts([gb300(f"n{i}", CLIQUE_A) for i in range(3)]), TWO)["k8s.placement"]
    assert none.measured == "0 of 2 groups fit" and "lower parallel.replicas" not in (none.hint or "")
    assert "takes group" not in none.detail
    cpu = [n.model_copy(update={"allocatable_gpus": 0}) for n in four()]
    empty = checks(facts(cpu), TWO)["k8s.placement"]
    assert empty.detail.startswith("no GPU node is eligible")
    fits = checks(facts(four() + [gb300(f"b{i}", CLIQUE_B) for i in range(4)]), TWO)["k8s.placement"]
    assert fits.status is Status.PASS and fits.measured == "2 groups in 2 clique(s), room for 0 more"
    assert fits.detail == f"group 0 in clique {CLIQUE_A}; group 1 in clique {CLIQUE_B}"


# --- the image architecture ----------------------------------------------------------------------------------------------


def test_the_image_arch_is_judged_on_the_gpu_nodes_the_selector_picks() -> None:
    assert checks(facts(four()))["k8s.image_arch"].status is Status.PASS
    amd = checks(facts(four(**{"kubernetes.io/arch": "amd64"})))["k8s.image_arch"]
    assert (amd.status, amd.measured, amd.target) == (Status.FAIL, "amd64", "arm64")
    assert "set vllm.image_arch=amd64" in (amd.hint or "") and "is built for arm64" in amd.detail
    other = checks(facts(four(**{"nvidia.com/gpu.product": "NVIDIA-H100"})))["k8s.image_arch"]
    assert other.status is Status.SKIP and other.detail == "no GPU node matches the node selector"
    mixed = four()
    mixed[0] = gb300("x", CLIQUE_A, **{"kubernetes.io/arch": "amd64"})
    judged = checks(facts(mixed))["k8s.image_arch"]
    assert judged.status is Status.PASS and judged.measured == "amd64, arm64"
    # neither arch is the image's: the hint names the first of them (sorted), for both the image and the field
    two = [gb300("p", CLIQUE_A, **{"kubernetes.io/arch": "ppc64le"}), *four(**{"kubernetes.io/arch": "amd64"})[1:]]
    neither = checks(facts(two))["k8s.image_arch"]
    assert neither.status is Status.FAIL and neither.measured == "amd64, ppc64le"
    assert "use an image built for amd64" in (neither.hint or "") and "vllm.image_arch=amd64" in (neither.hint or "")
    cpu_arm = [n.model_copy(update={"allocatable_gpus": 0}) for n in four()]
    assert checks(facts(cpu_arm))["k8s.image_arch"].status is Status.SKIP  # only GPU nodes count


# --- RuntimeClass, namespace, Secret, RBAC ----------------------------------------------------------------------------


def test_the_runtime_class_passes_when_it_exists_fails_when_missing_and_warns_when_unreadable() -> None:
    assert checks(facts(four(), runtime_class_exists=True))["k8s.runtime_class"].status is Status.PASS
    missing = checks(facts(four(), runtime_class_exists=False))["k8s.runtime_class"]
    assert (missing.status, missing.measured) == (Status.FAIL, "missing") and "refuses pods" in missing.detail
    unknown = checks(facts(four(), runtime_class_exists=None))["k8s.runtime_class"]
    assert (unknown.status, unknown.measured) == (Status.WARN, "unknown")
    none = profile("kubernetes.runtime_class=null")
    assert "k8s.runtime_class" not in checks(facts(four()), none)


def _access(verb: str, resource: str, allowed: bool) -> AccessFacts:
    return AccessFacts(verb=verb, resource=resource, group="", namespace="kimi-k3", allowed=allowed)


def test_an_absent_namespace_passes_only_when_this_user_may_create_it() -> None:
    base = facts(four())
    assert checks(base)["k8s.namespace"].measured == "kimi-k3 exists"
    absent = base.model_copy(update={"namespace_exists": False})
    may = absent.model_copy(update={"access": [*absent.access, _access("create", "namespaces", True)]})
    result = checks(may)["k8s.namespace"]
    assert (result.status, result.measured, result.detail) == (Status.PASS, "kimi-k3 absent", "`up` will create it")
    may_not = absent.model_copy(update={"access": [*absent.access, _access("create", "namespaces", False)]})
    assert checks(may_not)["k8s.namespace"].status is Status.FAIL
    only_get = absent.model_copy(update={"access": [*absent.access, _access("get", "namespaces", True)]})
    assert checks(only_get)["k8s.namespace"].status is Status.FAIL
    assert checks(absent)["k8s.namespace"].status is Status.FAIL


def test_the_secret_needs_its_key() -> None:
    assert checks(facts(four()))["k8s.secret"].status is Status.PASS
    missing = checks(facts(four(), secret_keys=None))["k8s.secret"]
    assert (missing.status, missing.measured) == (Status.FAIL, "missing")
    wrong = checks(facts(four(), secret_keys=["hf", "other"]))["k8s.secret"]
    assert (wrong.status, wrong.measured) == (Status.FAIL, "keys: hf, other")
    assert wrong.detail == "Secret hf-token has no key 'token'"
    empty = checks(facts(four(), secret_keys=[]))["k8s.secret"]
    assert (empty.status, empty.measured) == (Status.FAIL, "keys: none")
    public = profile("kubernetes.hf_token_secret=null")
    assert "k8s.secret" not in checks(facts(four(), secret_keys=None), public)


def test_rbac_counts_every_verb_but_the_namespace_ones_and_lists_eight_denied_then_a_count() -> None:
    base = facts(four())
    relevant = [a for a in base.access if a.resource != "namespaces"]
    with_ns = base.model_copy(update={"access": [*base.access, _access("create", "namespaces", False)]})
    ok = checks(with_ns)["k8s.rbac"]
    assert (ok.status, ok.measured) == (Status.PASS, f"{len(relevant)} verbs allowed")
    assert len(relevant) > 9
    for denied_count, tail in ((8, ""), (9, " and 1 more")):
        access = [a.model_copy(update={"allowed": i >= denied_count}) for i, a in enumerate(relevant)]
        result = checks(base.model_copy(update={"access": access}))["k8s.rbac"]
        assert result.measured == f"{denied_count} of {len(relevant)} denied"
        listed = ", ".join(a.label for a in access[:8])
        assert result.detail == f"denied in kimi-k3: {listed}{tail}"
    # the hint names the first denied verb, with its API group when it has one
    core = [_access("get", "pods", False), *relevant, _access("delete", "secrets", False)]
    result = checks(base.model_copy(update={"access": core}))["k8s.rbac"]
    assert "kubectl auth can-i get pods -n kimi-k3" in (result.hint or "")
    grouped = [AccessFacts(verb="list", resource="jobs", group="batch", namespace="kimi-k3", allowed=False), *core]
    result = checks(base.model_copy(update={"access": grouped}))["k8s.rbac"]
    assert "kubectl auth can-i list jobs.batch -n kimi-k3" in (result.hint or "")
