"""The rendered NetworkPolicies, judged by what cyclonus lets through (tests/render/netpol.py) for every pod of the set.

The group's port set is k3deploy.render.network's reading of vLLM's code (master port + the ephemeral range the
serving pods pin); tests/render/test_vllm_argv.py checks the master port against vLLM's own parser.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from k3deploy.lws import NAME_LABEL as LWS_NAME_LABEL
from k3deploy.lws import WORKER_INDEX_LABEL as LWS_WORKER_INDEX_LABEL
from k3deploy.profile import load_profile
from k3deploy.profile.model import Profile
from k3deploy.render.manifests import build
from k3deploy.render.network import (
    EPHEMERAL_PORTS,
    EPHEMERAL_SYSCTL,
    VLLM_DEFAULT_MASTER_PORT,
    master_port,
)
from tests.conftest import EXAMPLE_SETS, run_cli
from tests.render.netpol import Pod, allowed

K3 = "kimi-k3-gb300-tp16"


def profile(**kube: Any) -> Profile:
    base = load_profile(K3)
    return base.model_copy(update={"kubernetes": base.kubernetes.model_copy(update=kube)})


def rendered(p: Profile) -> tuple[list[dict[str, Any]], dict[str, Pod]]:
    """The set's NetworkPolicies and its pods (LWS pods with the labels LWS adds) by role."""
    objs = [m.obj for m in build(p)]
    policies = [o for o in objs if o["kind"] == "NetworkPolicy"]
    ns = p.kubernetes.namespace
    pods: dict[str, Pod] = {}
    for o in objs:
        if o["kind"] == "Job":
            pods[o["metadata"]["labels"]["app.kubernetes.io/component"]] = Pod(
                ns, o["spec"]["template"]["metadata"]["labels"]
            )
        if o["kind"] == "LeaderWorkerSet":
            lwt = o["spec"]["leaderWorkerTemplate"]
            for role, template, index in (
                ("leader", lwt["leaderTemplate"], "0"),
                ("worker", lwt["workerTemplate"], "1"),
            ):
                lws = {LWS_NAME_LABEL: p.name, LWS_WORKER_INDEX_LABEL: index}
                pods[role] = Pod(ns, {**template["metadata"]["labels"], **lws})
    return policies, pods


def serving_pod_specs(p: Profile) -> list[dict[str, Any]]:
    lws = next(m.obj for m in build(p) if m.kind == "LeaderWorkerSet")
    lwt = lws["spec"]["leaderWorkerTemplate"]
    return [lwt["leaderTemplate"]["spec"], lwt["workerTemplate"]["spec"]]


def test_on_by_default_and_off_with_the_switch() -> None:
    policies, _ = rendered(load_profile(K3))
    assert [p["metadata"]["name"] for p in policies] == [f"{K3}-default-deny", f"{K3}-server"]
    off = profile(network_policy=False)
    assert rendered(off)[0] == []
    assert all("sysctls" not in spec["securityContext"] for spec in serving_pod_specs(off))


def test_api_port_open_to_the_namespace_the_listed_namespaces_and_monitoring_only() -> None:
    p = profile(api_namespaces=["gateway"], monitoring_namespace="prom")
    policies, pods = rendered(p)
    api = p.vllm.port
    leader = pods["leader"]
    assert allowed(policies, pods["smoke"], leader, api)
    for ns in ("gateway", "prom"):
        assert allowed(policies, Pod(ns, {"app": "anything"}), leader, api)
    assert not allowed(policies, Pod("elsewhere", {}), leader, api)
    assert not allowed(policies, Pod("gateway", {}), leader, api + 1)
    # The API rule does not open the group's internal ports to those namespaces.
    assert not allowed(policies, Pod("prom", {}), pods["worker"], VLLM_DEFAULT_MASTER_PORT)
    assert not allowed(policies, pods["smoke"], leader, VLLM_DEFAULT_MASTER_PORT)


def test_no_monitoring_namespace_closes_it() -> None:
    policies, pods = rendered(profile(monitoring_namespace=None))
    assert not allowed(policies, Pod("monitoring", {}), pods["leader"], load_profile(K3).vllm.port)


def test_group_ports_open_between_the_groups_pods_only() -> None:
    policies, pods = rendered(load_profile(K3))
    low, high = EPHEMERAL_PORTS
    for port in (VLLM_DEFAULT_MASTER_PORT, low, 45000, high):
        assert allowed(policies, pods["worker"], pods["leader"], port)
        assert allowed(policies, pods["leader"], pods["worker"], port)
        assert not allowed(policies, pods["prefetch"], pods["leader"], port)
        assert not allowed(policies, Pod("elsewhere", {LWS_NAME_LABEL: K3}), pods["worker"], port)
    for port in (22, VLLM_DEFAULT_MASTER_PORT + 1, low - 1, high + 1):
        assert not allowed(policies, pods["worker"], pods["leader"], port)


def test_serving_pods_pin_the_ephemeral_range_the_policy_opens() -> None:
    low, high = EPHEMERAL_PORTS
    for spec in serving_pod_specs(load_profile(K3)):
        assert spec["securityContext"]["sysctls"] == [{"name": EPHEMERAL_SYSCTL, "value": f"{low} {high}"}]
    server = next(p for p in rendered(load_profile(K3))[0] if p["metadata"]["name"].endswith("-server"))
    ranges = [(q["port"], q["endPort"]) for q in server["spec"]["ingress"][1]["ports"] if "endPort" in q]
    assert ranges == [EPHEMERAL_PORTS]


def test_a_master_port_in_extra_args_moves_the_opening() -> None:
    base = load_profile(K3)
    for extra in (["--master-port", "29600"], ["--master-port=29600"]):
        p = base.model_copy(update={"vllm": base.vllm.model_copy(update={"extra_args": extra})})
        assert master_port(p) == 29600
        policies, pods = rendered(p)
        assert allowed(policies, pods["worker"], pods["leader"], 29600)
        assert not allowed(policies, pods["worker"], pods["leader"], VLLM_DEFAULT_MASTER_PORT)


def test_jobs_take_no_ingress_and_keep_egress() -> None:
    policies, pods = rendered(load_profile(K3))
    for job in ("prefetch", "smoke", "node-preflight"):
        assert not allowed(policies, pods["leader"], pods[job], 8080)
        assert not allowed(policies, Pod("kimi-k3", {}), pods[job], 443)
        assert allowed(policies, pods[job], Pod("internet", {}), 443)


def test_serving_pods_egress_is_dns_and_the_group() -> None:
    policies, pods = rendered(load_profile(K3))
    dns = Pod("kube-system", {"k8s-app": "kube-dns"})
    assert allowed(policies, pods["worker"], dns, 53, "UDP") and allowed(policies, pods["worker"], dns, 53, "TCP")
    assert not allowed(policies, pods["leader"], Pod("internet", {}), 443)
    assert not allowed(policies, pods["worker"], dns, 443)


def test_serving_egress_cidrs_open_the_listed_networks_only() -> None:
    """An internal mirror the serving image needs at run time: any port to the listed CIDRs, nothing else."""
    p = profile(serving_egress_cidrs=["10.20.0.0/16"])
    policies, pods = rendered(p)
    mirror = Pod("", {}, external=True, ip="10.20.3.4")
    assert allowed(policies, pods["leader"], mirror, 443) and allowed(policies, pods["worker"], mirror, 8080)
    assert not allowed(policies, pods["leader"], Pod("", {}, external=True, ip="10.21.3.4"), 443)
    assert not allowed(policies, pods["leader"], Pod("internet", {}), 443)
    (server,) = [o for o in policies if o["metadata"]["name"].endswith("-server")]
    assert server["spec"]["egress"][-1] == {"to": [{"ipBlock": {"cidr": "10.20.0.0/16"}}]}
    default = next(o for o in rendered(load_profile(K3))[0] if o["metadata"]["name"].endswith("-server"))
    assert not any("ipBlock" in str(rule) for rule in default["spec"]["egress"])


def test_serving_egress_cidrs_take_cidrs_only() -> None:
    for bad in ("10.20.0.1/16", "mirror.internal", "10.20.0.0/33"):
        done = run_cli("render", "-p", K3, "--set", f"kubernetes.serving_egress_cidrs=[{bad}]")
        assert done.returncode == 2 and "is not a CIDR such as 10.20.0.0/16" in done.stderr.splitlines()[0]


@pytest.mark.parametrize("role", ["leader", "worker", "prefetch", "smoke", "node-preflight"])
def test_every_pod_of_the_set_is_under_the_default_deny(role: str) -> None:
    policies, pods = rendered(load_profile(K3))
    deny = next(p for p in policies if p["metadata"]["name"].endswith("-default-deny"))
    assert not allowed([deny], Pod("kimi-k3", {}), pods[role], 1234)


def test_a_single_node_group_opens_no_internal_ports() -> None:
    base = load_profile(K3)
    single = base.model_copy(
        update={"parallel": base.parallel.model_copy(update={"nodes": 1, "tensor_parallel_size": 4})}
    )
    policies, pods = rendered(single)
    assert not allowed(policies, pods["worker"], pods["leader"], VLLM_DEFAULT_MASTER_PORT)
    assert all("sysctls" not in spec["securityContext"] for spec in serving_pod_specs(single))


def test_a_master_port_that_is_no_port_is_a_profile_error(tmp_path: Path) -> None:
    result = run_cli(
        "render",
        "-p",
        K3,
        *EXAMPLE_SETS,
        "--set",
        'vllm.extra_args=["--master-port", "http"]',
        "-o",
        str(tmp_path / "out"),
    )
    assert result.returncode == 2, result.stderr
    first = result.stderr.splitlines()[0]  # refused as the profile loads (profile/flags.py), blamed on the --set
    assert first.startswith('error: --set vllm.extra_args=["--master-port", "http"] (on built-in profile')
    assert first.endswith("extra_args --master-port needs a TCP port after it (1 to 65535), got 'http'")
    assert result.stderr.splitlines()[1].startswith("hint: ") and "Traceback" not in result.stderr
