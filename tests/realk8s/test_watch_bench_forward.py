"""`watch` and `bench` with a Kubernetes profile and no --endpoint, on the real plane: they reach the serving leader
through a `pods/portforward` stream of the real kube-apiserver, as `up`'s smoke does (targets/kubernetes/forward.py);
KWOK's PortForward object serves the leader's port with the scripted vLLM-like server. Before: both refused with
exit 2 and asked for a hand-made `kubectl port-forward`."""

from __future__ import annotations

import json

import pytest

from tests.conftest import run_cli
from tests.realk8s import release
from tests.realk8s.cluster_fixtures import QUICK
from tests.realk8s.plane import Plane
from tests.realk8s.test_forward import _forward_leader
from tests.realk8s.test_rollout import PROFILE, k3
from tests.smoke.scripted_server import Script, scripted_server

release_ns = release.release_ns  # the fixture, used by name
pytestmark = [pytest.mark.realk8s, pytest.mark.timeout(600)]


def test_watch_and_bench_reach_the_leader_through_a_port_forward(realk8s: Plane, release_ns: str) -> None:
    assert k3(realk8s, release_ns, "up", *QUICK).returncode == 0
    kube = ("-p", PROFILE, "--kubeconfig", str(realk8s.admin_kubeconfig), "-n", release_ns)
    with scripted_server(Script(models=["moonshotai/Kimi-K3"], chunk_delay_s=0.0005)) as leader:
        _forward_leader(realk8s, release_ns, leader.url)
        watched = run_cli("watch", *kube, "--interval", "0.5s", "--count", "1", "-o", "json", timeout=180)
        assert watched.returncode == 0, watched.stderr
        tick = json.loads(watched.stdout.strip().splitlines()[-1])
        # The forward's local end, not the server's own address: the API server's stream carried the scrapes.
        assert tick["url"].startswith("http://127.0.0.1:") and not tick["url"].startswith(leader.url), tick
        benched = run_cli(
            "bench",
            *kube,
            *("--dataset", "builtin", "--subset", "throughput", "--num-prompts", "1", "--output-tokens", "16"),
            *("-o", "json"),
            timeout=300,
        )
        assert benched.returncode == 0, benched.stderr
        report = json.loads(benched.stdout)
        assert report["endpoint"].startswith("http://127.0.0.1:") and report["endpoint"] != leader.url
        assert report["requests"] and all(r.get("error") in (None, "") for r in report["requests"]), report["requests"]
