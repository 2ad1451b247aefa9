"""Connectivity of the rendered set in every scenario it lives through, judged by cyclonus (tests/render/netpol.py).

One group, two replicas, a blue-green upgrade before, during and after the switch (the live colour's policies with
both colours' pods), the endpoint picker (the gateway's proxies -> ext-proc, Prometheus -> metrics), the Prometheus
scrape and the gateway on the API port, and DNS. The pods carry the labels their controllers add (LWS: set name,
group index, worker index; a Deployment's pods: the template's).
"""

from __future__ import annotations

from typing import Any

from k3deploy.lws import GROUP_INDEX_LABEL, NAME_LABEL, WORKER_INDEX_LABEL, colours
from k3deploy.profile import load_profile
from k3deploy.profile.model import Profile
from k3deploy.render.manifests import build
from k3deploy.render.network import EPHEMERAL_PORTS, VLLM_DEFAULT_MASTER_PORT
from k3deploy.render.routing import EPP_EXT_PROC_PORT, EPP_METRICS_PORT
from k3deploy.rollout.colours import recoloured
from tests.render.netpol import INTERNET, Pod, judge

K3 = "kimi-k3-gb300-tp16"
API = 8000
GROUP_PORTS = (VLLM_DEFAULT_MASTER_PORT, EPHEMERAL_PORTS[0], 45000, EPHEMERAL_PORTS[1])
DNS = Pod("kube-system", {"k8s-app": "kube-dns"})


def profile(**kube: Any) -> Profile:
    base = load_profile(K3)
    return base.model_copy(update={"kubernetes": base.kubernetes.model_copy(update=kube)})


def replicas(p: Profile, n: int) -> Profile:
    return p.model_copy(update={"parallel": p.parallel.model_copy(update={"replicas": n})})


def objects(p: Profile) -> list[dict[str, Any]]:
    return [m.obj for m in build(p)]


def policies_of(objs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [o for o in objs if o["kind"] == "NetworkPolicy"]


def serving_pod(objs: list[dict[str, Any]], lws_name: str, group: int, index: int) -> Pod:
    """A pod of the (possibly recoloured) LeaderWorkerSet `lws_name`, labelled as the LWS controller labels it."""
    lws = next(o for o in objs if o["kind"] == "LeaderWorkerSet")
    lwt = lws["spec"]["leaderWorkerTemplate"]
    template = lwt["leaderTemplate"] if index == 0 else lwt["workerTemplate"]
    labels = {
        **template["metadata"]["labels"],
        NAME_LABEL: lws_name,
        GROUP_INDEX_LABEL: str(group),
        WORKER_INDEX_LABEL: str(index),
    }
    return Pod(lws["metadata"]["namespace"], labels)


def epp_pod(objs: list[dict[str, Any]]) -> Pod:
    deployment = next(o for o in objs if o["kind"] == "Deployment")
    return Pod(deployment["metadata"]["namespace"], deployment["spec"]["template"]["metadata"]["labels"])


def group_open(policies: list[dict[str, Any]], leader: Pod, worker: Pod) -> list[bool]:
    """Every group port, both ways, between a leader and a worker."""
    return judge(
        policies,
        [(a, b, port, "TCP") for port in GROUP_PORTS for a, b in ((worker, leader), (leader, worker))],
    )


def test_one_group_opens_its_ports_dns_and_the_api_only() -> None:
    p = load_profile(K3)
    objs = objects(p)
    pol = policies_of(objs)
    leader, worker = serving_pod(objs, p.name, 0, 0), serving_pod(objs, p.name, 0, 1)
    assert all(group_open(pol, leader, worker))
    checks = [
        (worker, DNS, 53, "UDP", True),
        (leader, DNS, 53, "TCP", True),
        (Pod("monitoring", {"app": "prometheus"}), leader, API, "TCP", True),
        (Pod("elsewhere", {}), leader, API, "TCP", False),
        (leader, INTERNET, 443, "TCP", False),
        (Pod("monitoring", {}), worker, VLLM_DEFAULT_MASTER_PORT, "TCP", False),
    ]
    assert judge(pol, [c[:4] for c in checks]) == [c[4] for c in checks]


def test_two_replicas_open_each_groups_ports() -> None:
    p = replicas(load_profile(K3), 2)
    objs = objects(p)
    pol = policies_of(objs)
    for group in (0, 1):
        assert all(group_open(pol, serving_pod(objs, p.name, group, 0), serving_pod(objs, p.name, group, 1)))


def test_blue_green_forms_the_new_group_before_during_and_after_the_switch() -> None:
    p = load_profile(K3)
    blue, green = colours(p.name)
    rendered = objects(p)
    # Before and during: the live (blue) colour's policies are applied; the green LeaderWorkerSet forms beside it.
    live = policies_of(recoloured(rendered, blue, blue))
    green_set = recoloured(rendered, blue, green)
    for pol in (live, policies_of(green_set)):  # during, then after the switch (green's own policies)
        assert all(group_open(pol, serving_pod(green_set, green, 0, 0), serving_pod(green_set, green, 0, 1)))
        assert all(group_open(pol, serving_pod(rendered, blue, 0, 0), serving_pod(rendered, blue, 0, 1)))
        assert judge(pol, [(Pod("monitoring", {}), serving_pod(green_set, green, 0, 0), API, "TCP")]) == [True]


def test_the_endpoint_picker_takes_the_gateway_and_prometheus() -> None:
    p = profile(routing="inference-pool", gateway_namespace="envoy-gateway-system")
    objs = objects(p)
    pol = policies_of(objs)
    epp = epp_pod(objs)
    proxy = Pod("envoy-gateway-system", {"gateway.envoyproxy.io/owning-gateway-name": "inference"})
    prometheus = Pod("monitoring", {"app.kubernetes.io/name": "prometheus"})
    leader = serving_pod(objs, p.name, 0, 0)
    checks = [
        (proxy, epp, EPP_EXT_PROC_PORT, "TCP", True),
        (prometheus, epp, EPP_METRICS_PORT, "TCP", True),
        (proxy, leader, API, "TCP", True),  # the gateway forwards to the leader the EPP picked
        (epp, leader, API, "TCP", True),  # the EPP scrapes the leaders' /metrics
        (Pod("elsewhere", {}), epp, EPP_EXT_PROC_PORT, "TCP", False),
        (proxy, epp, EPP_METRICS_PORT + 1, "TCP", False),
        (epp, DNS, 53, "UDP", True),
    ]
    assert judge(pol, [c[:4] for c in checks]) == [c[4] for c in checks]


def test_the_engine_refuses_what_no_policy_opens() -> None:
    """The judge itself: an empty ingress rule list denies, a pod outside every policy is open."""
    deny = {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {"name": "deny", "namespace": "n"},
        "spec": {"podSelector": {}, "policyTypes": ["Ingress"]},
    }
    assert judge(
        [deny], [(Pod("n", {}), Pod("n", {"a": "b"}), 80, "TCP"), (Pod("n", {}), Pod("o", {}), 80, "TCP")]
    ) == [
        False,
        True,
    ]
