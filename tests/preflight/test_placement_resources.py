"""Placement counts every request the scheduler counts: a tray with free GPUs but too little CPU or memory left for
the serving pod (kubernetes.cpu_request, memory_request) is no tray, and the partial group it would start is not
counted as fitting."""

from __future__ import annotations

from k3deploy.preflight.facts import cpu_milli, parse_nodes, pod_request
from k3deploy.preflight.placement import exclusion, place
from k3deploy.profile import load_profile
from tests.preflight.test_checks_cluster import gb300

K3 = "kimi-k3-gb300-tp16"
A = "c0ffee00-0000-4000-8000-000000000001.1"
GIB = 2**30


def _node(name: str, cpu: str = "144", memory: str = "900Gi") -> dict:
    return {
        "metadata": {"name": name, "labels": dict(gb300(name, A).labels)},
        "status": {
            "allocatable": {"nvidia.com/gpu": "4", "cpu": cpu, "memory": memory},
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def _pod(node: str, cpu: str, memory: str, init_cpu: str = "0") -> dict:
    return {
        "spec": {
            "nodeName": node,
            "containers": [{"resources": {"requests": {"cpu": cpu, "memory": memory}}}],
            "initContainers": [{"resources": {"requests": {"cpu": init_cpu}}}],
        },
        "status": {"phase": "Running"},
    }


def test_pod_requests_are_counted_as_the_scheduler_counts_them() -> None:
    pod = _pod("a0", "500m", "1Gi", init_cpu="2")
    pod["spec"]["containers"].append({"resources": {"requests": {"cpu": "1"}}})
    pod["spec"]["overhead"] = {"cpu": "250m"}
    assert pod_request(pod, "cpu") == 2250  # max(0.5 + 1, 2) + overhead
    assert pod_request(pod, "memory") == GIB
    assert (cpu_milli("32"), cpu_milli("0.5"), cpu_milli("100m")) == (32000, 500, 100)
    [node] = parse_nodes([_node("a0")], [pod])
    assert (node.free_cpu_milli, node.free_memory_bytes) == (144000 - 2250, 900 * GIB - GIB)


def test_a_tray_short_of_cpu_or_memory_is_no_tray() -> None:
    profile = load_profile(K3)  # the serving pod requests 32 CPUs and 512Gi
    others = [_pod("a1", "120", "1Gi"), _pod("a2", "1", "400Gi")]
    nodes = parse_nodes([_node(f"a{i}") for i in range(4)], others)
    why = {n.name: exclusion(profile, n) for n in nodes}
    assert why["a0"] is None and why["a3"] is None
    assert why["a1"] == "24 of 144 CPUs free, the serving pod requests 32 (kubernetes.cpu_request)"
    assert why["a2"] == "500 of 900 GiB memory free, the serving pod requests 512Gi (kubernetes.memory_request)"
    result = place(profile, nodes)
    assert not result.fits and result.placed == 0
    [clique] = result.cliques
    assert clique.trays == ["a0", "a3"] and len(clique.excluded) == 2


def test_a_node_that_reports_no_cpu_or_memory_is_judged_on_gpus_alone() -> None:
    node = _node("a0")
    del node["status"]["allocatable"]["cpu"], node["status"]["allocatable"]["memory"]
    [parsed] = parse_nodes([node], [])
    assert parsed.free_cpu_milli is None and exclusion(load_profile(K3), parsed) is None
