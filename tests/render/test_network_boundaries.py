"""render/network.py's rules pinned at their boundaries (survivors of tests/mutation/run): the master port is
vllm.extra_args' `--master-port` (either spelling, a TCP port 1..65535, a trailing flag with no value ignored) or
vLLM's default; the ephemeral range is pinned and opened only for a group that spans nodes (and, for the sysctl,
only with NetworkPolicies on); the API port's other namespaces are the listed, gateway and monitoring ones, never
the set's own."""

from __future__ import annotations

from typing import Any

import pytest

from k3deploy.errors import ProfileError
from k3deploy.profile import load_profile
from k3deploy.profile.model import Profile
from k3deploy.render import network
from k3deploy.render.network import EPHEMERAL_PORTS, EPHEMERAL_SYSCTL, VLLM_DEFAULT_MASTER_PORT

K3 = "kimi-k3-gb300-tp16"


def with_args(*extra: str) -> Profile:
    base = load_profile(K3)
    return base.model_copy(update={"vllm": base.vllm.model_copy(update={"extra_args": list(extra)})})


def with_kube(nodes: int | None = None, **kube: Any) -> Profile:
    base = load_profile(K3)
    update: dict[str, Any] = {"kubernetes": base.kubernetes.model_copy(update=kube)}
    if nodes is not None:
        update["parallel"] = base.parallel.model_copy(update={"nodes": nodes, "tensor_parallel_size": 4 * nodes})
    return base.model_copy(update=update)


@pytest.mark.parametrize("port", [1, 29600, 65535])
def test_a_master_port_from_1_to_65535_is_a_tcp_port(port: int) -> None:
    assert network.master_port(with_args("--master-port", str(port))) == port
    assert network.master_port(with_args(f"--master-port={port}")) == port


@pytest.mark.parametrize("value", ["0", "65536", "-1", "http", ""])
def test_a_master_port_outside_1_to_65535_is_no_tcp_port(value: str) -> None:
    with pytest.raises(ProfileError, match="is not a TCP port"):
        network.master_port(with_args("--master-port", value))
    with pytest.raises(ProfileError, match="is not a TCP port"):
        network.master_port(with_args(f"--master-port={value}"))


def test_everything_after_the_first_equals_sign_is_the_value() -> None:
    with pytest.raises(ProfileError, match="'29600=1' is not a TCP port"):
        network.master_port(with_args("--master-port=29600=1"))


def test_the_master_port_is_found_among_other_args_and_the_first_one_counts() -> None:
    assert network.master_port(with_args("--seed", "3", "--master-port", "29700", "--enforce-eager")) == 29700
    assert network.master_port(with_args("--master-port=29700", "--master-port", "29800")) == 29700
    assert network.master_port(with_args("--master-port", "29700", "--master-port=29800")) == 29700


def test_no_master_port_or_a_trailing_flag_without_a_value_leaves_vllms_default() -> None:
    assert network.master_port(with_args()) == VLLM_DEFAULT_MASTER_PORT == 29501
    assert network.master_port(with_args("--seed", "3")) == VLLM_DEFAULT_MASTER_PORT
    assert network.master_port(with_args("--seed", "3", "--master-port")) == VLLM_DEFAULT_MASTER_PORT
    # a flag whose value is the next flag's name is not a port either
    with pytest.raises(ProfileError):
        network.master_port(with_args("--master-port", "--seed"))


def test_the_ephemeral_range_is_linuxs_default() -> None:
    assert EPHEMERAL_PORTS == (32768, 60999)


@pytest.mark.parametrize(
    ("nodes", "policies", "pinned"),
    [(4, True, True), (2, True, True), (1, True, False), (4, False, False), (1, False, False)],
)
def test_the_sysctl_pins_the_range_only_with_policies_on_and_a_group_over_nodes(
    nodes: int, policies: bool, pinned: bool
) -> None:
    p = with_kube(nodes, network_policy=policies)
    assert network.pins_ephemeral_ports(p) is pinned
    expected = [{"name": EPHEMERAL_SYSCTL, "value": "32768 60999"}] if pinned else []
    assert network.ephemeral_sysctls(p) == expected


@pytest.mark.parametrize("nodes", [1, 2, 4])
def test_group_ports_are_the_master_port_and_the_range_only_for_a_group_over_nodes(nodes: int) -> None:
    p = with_kube(nodes)
    expected = (
        [{"protocol": "TCP", "port": 29501}, {"protocol": "TCP", "port": 32768, "endPort": 60999}] if nodes > 1 else []
    )
    assert network.group_ports(p) == expected
    moved = p.model_copy(update={"vllm": p.vllm.model_copy(update={"extra_args": ["--master-port=29600"]})})
    assert [q["port"] for q in network.group_ports(moved)] == ([29600, 32768] if nodes > 1 else [])


def test_api_namespaces_are_the_listed_gateway_and_monitoring_ones_sorted_without_the_sets_own() -> None:
    p = with_kube(
        namespace="kimi-k3",
        api_namespaces=["zeta", "kimi-k3", "alpha"],
        monitoring_namespace="prom",
        gateway_namespace="gw",
    )
    assert network.api_namespaces(p) == ["alpha", "gw", "prom", "zeta"]
    assert network.api_namespaces(with_kube(api_namespaces=[], monitoring_namespace=None, gateway_namespace=None)) == []
    only_gateway = with_kube(api_namespaces=[], monitoring_namespace=None, gateway_namespace="gw")
    assert network.api_namespaces(only_gateway) == ["gw"]
    only_monitoring = with_kube(api_namespaces=[], monitoring_namespace="prom", gateway_namespace=None)
    assert network.api_namespaces(only_monitoring) == ["prom"]
    own = with_kube(namespace="kimi-k3", api_namespaces=["x"], monitoring_namespace="kimi-k3", gateway_namespace="x")
    assert network.api_namespaces(own) == ["x"]
