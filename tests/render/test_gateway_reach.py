"""An inference-pool set must admit its Gateway: render refuses one whose NetworkPolicies admit none (exit 2), and
`kubernetes.api_cidrs` admits a data plane that is not pods (ipBlock), judged by cyclonus (tests/render/netpol.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from k3deploy.errors import ProfileError
from k3deploy.profile import load_profile
from k3deploy.render.manifests import build
from k3deploy.render.routing import EPP_EXT_PROC_PORT
from tests.conftest import run_cli
from tests.render.netpol import Pod, judge
from tests.render.test_connectivity import API, epp_pod, policies_of, serving_pod

K3 = "kimi-k3-gb300-tp16"
POOL = "kubernetes.routing=inference-pool"
EXAMPLE = ("--set", "production=false")


def test_render_refuses_a_pool_that_admits_no_gateway(tmp_path: Path) -> None:
    result = run_cli("render", "-p", K3, *EXAMPLE, "--set", POOL, "-o", str(tmp_path / "out"))
    assert result.returncode == 2, result.stderr
    error, hint = result.stderr.strip().splitlines()
    assert error.startswith("error: kubernetes.routing is inference-pool") and "gateway_namespace" in error
    assert hint.startswith("hint: set kubernetes.gateway_namespace") and "api_cidrs" in hint
    assert not (tmp_path / "out").exists()
    # up and apply render through the same build: they refuse it too.
    with pytest.raises(ProfileError):
        build(load_profile(K3, [POOL]))


@pytest.mark.parametrize(
    "sets",
    [
        ["kubernetes.gateway_namespace=envoy-gateway-system"],
        ["kubernetes.gateway_namespace=kimi-k3"],  # proxies in the set's own namespace
        ['kubernetes.api_cidrs=["198.51.100.0/24"]'],
        ["kubernetes.network_policy=false"],  # no policies: nothing to admit the Gateway through
    ],
)
def test_naming_where_the_gateway_runs_renders(sets: list[str]) -> None:
    kinds = {m.kind for m in build(load_profile(K3, [POOL, *sets]))}
    assert "InferencePool" in kinds


def test_api_cidrs_admit_an_outside_data_plane_to_the_picker_and_the_api_only() -> None:
    objs = [m.obj for m in build(load_profile(K3, [POOL, 'kubernetes.api_cidrs=["198.51.100.0/24"]']))]
    pol = policies_of(objs)
    balancer = Pod("", {}, external=True, ip="198.51.100.9")
    stranger = Pod("", {}, external=True, ip="203.0.113.7")
    epp, leader = epp_pod(objs), serving_pod(objs, K3, 0, 0)
    checks = [
        (balancer, epp, EPP_EXT_PROC_PORT, "TCP", True),
        (balancer, leader, API, "TCP", True),
        (balancer, leader, 29501, "TCP", False),  # not the group's internal ports
        (stranger, epp, EPP_EXT_PROC_PORT, "TCP", False),
        (stranger, leader, API, "TCP", False),
    ]
    assert judge(pol, [c[:4] for c in checks]) == [c[4] for c in checks]


@pytest.mark.parametrize("cidr", ["10.0.0.1/8", "10.0.0.0/33", "not-a-cidr", "10.0.0.0"])
def test_a_cidr_that_is_not_a_network_is_refused(cidr: str) -> None:
    result = run_cli("render", "-p", K3, *EXAMPLE, "--set", f'kubernetes.api_cidrs=["{cidr}"]', "-o", "-")
    assert result.returncode == 2
    assert "api_cidrs" in result.stderr and "Traceback" not in result.stderr
