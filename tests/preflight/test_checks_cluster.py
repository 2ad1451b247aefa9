"""The cluster checks as pure functions of ClusterFacts (the probe itself runs on the real plane, tests/realk8s/preflight)."""

from __future__ import annotations

from k3deploy.preflight.checks_cluster import cluster_checks
from k3deploy.preflight.facts import AccessFacts, ClusterFacts, NodeFacts, parse_nodes, pod_request
from k3deploy.profile import Profile, load_profile
from k3deploy.render.manifests import rendered_objects
from k3deploy.report.model import CheckResult, Status
from k3deploy.rollout.access import command_access

GB300 = load_profile("kimi-k3-gb300-tp16")
CLIQUE_A = "4a2c8e61-93d7-4b5e-a0f2-6c1d9e8b7a35.7"
CLIQUE_B = "4a2c8e61-93d7-4b5e-a0f2-6c1d9e8b7a35.9"


def gb300(name: str, clique: str | None, requested: int = 0, **labels: str) -> NodeFacts:
    base = {
        "nvidia.com/gpu.product": "NVIDIA-GB300",
        "nvidia.com/gpu.memory": "284208",
        "kubernetes.io/arch": "arm64",
        "nvidia.com/cuda.driver-version.full": "580.95.05",
    }
    if clique:
        base["nvidia.com/gpu.clique"] = clique
    base.update(labels)
    return NodeFacts(name=name, labels=base, allocatable_gpus=4, requested_gpus=requested)


def facts(nodes: list[NodeFacts], **changes: object) -> ClusterFacts:
    access = [
        AccessFacts(verb=a.verb, resource=a.resource, group=a.group, namespace="kimi-k3", allowed=True)
        for a in command_access(rendered_objects(GB300))
    ]
    base = dict(
        server_version="v1.34.1",
        resources=[
            "leaderworkersets.leaderworkerset.x-k8s.io",
            "computedomains.resource.nvidia.com",
            "servicemonitors.monitoring.coreos.com",
            "prometheusrules.monitoring.coreos.com",
        ],
        nodes=nodes,
        namespace="kimi-k3",
        namespace_exists=True,
        # As k3deploy labels its own Namespace (a user's made beforehand without them WARNs: test_pod_security_admission).
        namespace_labels={f"pod-security.kubernetes.io/{mode}": "baseline" for mode in ("enforce", "warn", "audit")},
        secret_name="hf-token",
        secret_keys=["token"],
        storage_classes=["local-nvme"],
        default_storage_class="local-nvme",
        access=access,
        runtime_class_exists=True,
    )
    base.update(changes)
    return ClusterFacts(**base)


def by_name(cluster: ClusterFacts, profile: Profile = GB300) -> dict[str, CheckResult]:
    return {r.name: r for r in cluster_checks(profile, cluster, rendered_objects(profile))}


def _two_cliques(b_trays: int) -> list[NodeFacts]:
    """Clique A: 5 trays, one of them busy (4 free); clique B: `b_trays` free trays."""
    return [gb300(f"a{i}", CLIQUE_A, requested=4 if i == 0 else 0) for i in range(5)] + [
        gb300(f"b{i}", CLIQUE_B) for i in range(b_trays)
    ]


def test_two_cliques_pick_the_one_with_room() -> None:
    results = by_name(facts(_two_cliques(4)))
    assert {n: r.status for n, r in results.items() if r.status is not Status.PASS} == {}
    assert results["k8s.placement"].measured == f"clique {CLIQUE_A}: 4 eligible node(s)"
    assert results["k8s.placement"].detail == f"the group fits in clique {CLIQUE_A} on a1, a2, a3, a4"


def test_a_clique_too_small_for_a_group_warns_that_a_leader_placed_there_never_forms_its_group() -> None:
    # B's 3 free trays take a leader as readily as A's; its workers then follow it into a clique one tray short.
    placement = by_name(facts(_two_cliques(3)))["k8s.placement"]
    assert placement.status is Status.WARN
    assert placement.measured == f"clique {CLIQUE_A}: 4 eligible node(s)"
    assert placement.detail == (
        f"the group fits in clique {CLIQUE_A} on a1, a2, a3, a4; but clique {CLIQUE_B} has 3 free tray(s), fewer "
        "than the 4 a group needs: with kubernetes.gang_admission none and no kubernetes.clique, a leader the "
        "scheduler puts there waits forever for its workers"
    )
    assert placement.hint == (
        f"set kubernetes.clique={CLIQUE_A} (the group is pinned where it fits), or kubernetes.gang_admission kueue "
        "or volcano (a group is admitted whole), or keep those trays out with kubernetes.node_selector"
    )
    # One free tray is as much a trap as three; a clique with no free tray takes no leader.
    assert by_name(facts(_two_cliques(1)))["k8s.placement"].status is Status.WARN
    busy_b = [*_two_cliques(0), gb300("b0", CLIQUE_B, requested=4)]
    assert by_name(facts(busy_b))["k8s.placement"].status is Status.PASS


def test_a_group_pinned_to_a_clique_or_admitted_whole_is_safe_from_a_small_clique() -> None:
    nodes = facts(_two_cliques(3))
    for sets in (
        [f"kubernetes.clique={CLIQUE_A}"],
        ["kubernetes.gang_admission=volcano"],
        ["kubernetes.gang_admission=kueue", "kubernetes.kueue_queue=gb300"],
    ):
        placement = by_name(nodes, load_profile("kimi-k3-gb300-tp16", sets))["k8s.placement"]
        assert placement.status is Status.PASS, (sets, placement.detail)
        assert placement.detail == f"the group fits in clique {CLIQUE_A} on a1, a2, a3, a4", sets


def test_no_clique_with_room_explains_each() -> None:
    nodes = [gb300(f"a{i}", CLIQUE_A, requested=2 if i == 0 else 0) for i in range(4)] + [
        gb300(f"b{i}", CLIQUE_B) for i in range(2)
    ]
    result = by_name(facts(nodes))["k8s.placement"]
    assert result.status is Status.FAIL
    assert result.measured == f"clique {CLIQUE_A} has 3 eligible node(s), needs 4"
    assert result.detail == (
        f"clique {CLIQUE_A} has 3 eligible node(s), needs 4; clique {CLIQUE_B} has 2 eligible node(s), needs 4 "
        "(a0: 2 of 4 GPUs free, needs 4)"
    )


def test_pod_gpu_requests_count_limits_and_init_containers() -> None:
    pod = {
        "spec": {
            "nodeName": "a0",
            "containers": [
                {"resources": {"limits": {"nvidia.com/gpu": "2"}}},
                {"resources": {"requests": {"nvidia.com/gpu": 1}}},
            ],
            "initContainers": [{"resources": {"requests": {"nvidia.com/gpu": "4"}}}],
        },
        "status": {"phase": "Running"},
    }
    assert pod_request(pod, "nvidia.com/gpu") == 4
    done = {
        "spec": {"nodeName": "a0", "containers": [{"resources": {"requests": {"nvidia.com/gpu": "4"}}}]},
        "status": {"phase": "Succeeded"},
    }
    node = {
        "metadata": {"name": "a0", "labels": {}},
        "status": {"allocatable": {"nvidia.com/gpu": "4"}, "conditions": [{"type": "Ready", "status": "True"}]},
    }
    [parsed] = parse_nodes([node], [pod, done])
    assert (parsed.allocatable_gpus, parsed.requested_gpus, parsed.free_gpus, parsed.ready) == (4, 4, 0, True)


def test_rbac_lists_what_is_denied() -> None:
    cluster = facts([gb300(f"a{i}", CLIQUE_A) for i in range(4)])
    denied = [
        a.model_copy(update={"allowed": False}) if (a.verb, a.resource) == ("create", "leaderworkersets") else a
        for a in cluster.access
    ]
    result = by_name(cluster.model_copy(update={"access": denied}))["k8s.rbac"]
    assert (result.status, result.measured) == (Status.FAIL, f"1 of {len(denied)} denied")
    assert result.detail == "denied in kimi-k3: create leaderworkersets.leaderworkerset.x-k8s.io"
    assert "kubectl auth can-i create leaderworkersets.leaderworkerset.x-k8s.io -n kimi-k3" in (result.hint or "")


def test_without_nvlink_any_nodes_do() -> None:
    profile = load_profile("kimi-k3-gb300-tp16", ["hardware.nvlink_domain=false", "kubernetes.compute_domain=false"])
    results = by_name(
        facts([gb300(f"n{i}", None) for i in range(4)], resources=["leaderworkersets.leaderworkerset.x-k8s.io"]),
        profile,
    )
    assert results["k8s.placement"].status is Status.PASS
    assert results["k8s.gfd_labels"].status is Status.PASS
    assert "k8s.crd.computedomain" not in results
    assert results["k8s.crd.servicemonitor"].status is Status.WARN
    assert results["k8s.crd.prometheusrule"].status is Status.WARN


def test_monitoring_needs_the_prometheus_rule_crd_and_its_verbs() -> None:
    assert by_name(facts([gb300(f"n{i}", CLIQUE_A) for i in range(4)]))["k8s.crd.prometheusrule"].status is Status.PASS
    needed = {(a.verb, a.resource) for a in command_access(rendered_objects(GB300))}
    assert {("create", "prometheusrules"), ("patch", "configmaps")} <= needed
    off = load_profile("kimi-k3-gb300-tp16", ["kubernetes.monitoring=false"])
    assert not {a.resource for a in command_access(rendered_objects(off))} & {"prometheusrules"}
    assert "k8s.crd.prometheusrule" not in by_name(facts([gb300(f"n{i}", CLIQUE_A) for i in range(4)]), off)


def test_eligible_hosts_are_every_node_of_every_clique_that_holds_a_group() -> None:
    from k3deploy.preflight.checks_cluster import eligible_hosts

    nodes = (
        [gb300(f"a{i}", CLIQUE_A) for i in range(5)]
        + [gb300(f"b{i}", CLIQUE_B) for i in range(3)]
        + [gb300("a-busy", CLIQUE_A, requested=2), gb300("a-cordoned", CLIQUE_A)]
    )
    nodes[-1] = nodes[-1].model_copy(update={"unschedulable": True})
    assert eligible_hosts(GB300, nodes) == ["a0", "a1", "a2", "a3", "a4"]
    assert eligible_hosts(GB300, nodes[:3]) == []


def test_the_port_forward_of_the_smoke_is_reviewed_only_when_it_will_be_used() -> None:
    def forward(port_forward: bool) -> set[tuple[str, str, str]]:
        return {
            (a.verb, a.resource, a.subresource)
            for a in command_access(rendered_objects(GB300), port_forward=port_forward)
            if a.subresource == "portforward"
        }

    # A WebSocket upgrade is authorised as `get`, and from Kubernetes 1.35 also as `create` (KEP-4006).
    assert forward(True) == {("get", "pods", "portforward"), ("create", "pods", "portforward")}
    assert forward(False) == set()
    denied = [
        AccessFacts(
            verb=a.verb,
            resource=f"{a.resource}/{a.subresource}" if a.subresource else a.resource,
            group=a.group,
            namespace="kimi-k3",
            allowed=a.subresource != "portforward",
        )
        for a in command_access(rendered_objects(GB300), port_forward=True)
    ]
    rbac = by_name(facts([gb300(f"n{i}", CLIQUE_A) for i in range(4)], access=denied))["k8s.rbac"]
    assert rbac.status is Status.FAIL
    assert "get pods/portforward" in rbac.detail and "create pods/portforward" in rbac.detail
