"""Faults a real API server does not produce on demand, injected by the fault proxy (tests/realk8s/faults.py) in
front of the real plane, on the CLI's kubeconfig only: 429 and 500 retried, a hang
bounded by the command's deadline, watches cut and ended by a 410 and resumed (the LeaderWorkerSet watched, not polled), a rewritten /version judged by
preflight, a server that drops every connection. The controllers keep talking to the server directly."""

from __future__ import annotations

import json
import subprocess
import uuid

import pytest

from k3deploy.kube import deadline
from tests.conftest import run_cli
from tests.kube.test_timeouts import HINT
from tests.realk8s.client import resource_path
from tests.realk8s.fault_fixtures import ProxiedPlane
from tests.realk8s.plane import Plane
from tests.realk8s.test_rollout import LWS, PROFILE

pytestmark = [pytest.mark.realk8s, pytest.mark.timeout(600)]


def _k3(proxy: ProxiedPlane, namespace: str, *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return run_cli(*args, "-p", PROFILE, "--kubeconfig", str(proxy.kubeconfig), "-n", namespace, timeout=timeout)


def test_429_and_500_are_retried_against_the_real_server(realk8s: Plane, fault_proxy: ProxiedPlane) -> None:
    namespace = f"k3-{uuid.uuid4().hex[:8]}"
    throttled = fault_proxy.faults.add("PATCH", r"/leaderworkersets/", 429, retry_after=0.2, times=2)
    broken = fault_proxy.faults.add("GET", rf"/namespaces/{namespace}/jobs", 500, times=2)
    result = _k3(fault_proxy, namespace, "apply", "--timeout", "240s")
    assert result.returncode == 0, result.stderr
    assert (throttled.hits, broken.hits) == (2, 2)
    live = realk8s.api.get(resource_path("leaderworkerset.x-k8s.io/v1", "leaderworkersets", namespace, LWS))
    assert live["status"]["readyReplicas"] == 1
    assert _k3(fault_proxy, namespace, "down", "--yes", "--purge", "--timeout", "120s").returncode == 0


def test_pod_watches_cut_and_ended_by_410_are_resumed_and_relisted_and_the_lws_is_watched_not_polled(
    realk8s: Plane, fault_proxy: ProxiedPlane
) -> None:
    namespace = f"k3-{uuid.uuid4().hex[:8]}"
    # The first pod watch ends with an in-stream ERROR 410 Expired before any event, as when etcd compacts under a
    # watch: a re-list. The next two are cut after one event each: resumed from the last version seen. The 410 comes
    # first and at once because a note that arrives after the event which ends the wait is never read (the wait is
    # over): an expiry after the pods' last change, as this test once arranged it, raced the wait's end.
    expired = fault_proxy.faults.add("GET", r"/pods\?.*watch=true", expire=True, drop_after=0, times=1)
    dropped = fault_proxy.faults.add("GET", r"/pods\?.*watch=true", drop=True, drop_after=1, times=2)
    result = _k3(fault_proxy, namespace, "apply", "--timeout", "240s")
    assert result.returncode == 0, result.stderr
    assert (dropped.hits, expired.hits) == (2, 1)
    assert "watch of Pod expired (410 Gone): re-listing" in result.stderr
    live = realk8s.api.get(resource_path("leaderworkerset.x-k8s.io/v1", "leaderworkersets", namespace, LWS))
    assert live["status"]["readyReplicas"] == 1
    # However long the pods take (and whatever happens to the pod watches), the LeaderWorkerSet is waited for by
    # one list and one watch, not polled: besides those, one GET of the other colour's group (a blue-green leftover
    # to clear, targets/kubernetes/bluegreen_repair.py) and a few GETs of the group itself, each once, before the
    # wait: the mode gang admission `auto` recorded on it, the outage question (does the apply replace the only
    # group?), the plan's observation and the traffic gate's reads of the group it labels.
    collection = f"GET {resource_path('leaderworkerset.x-k8s.io/v1', 'leaderworkersets', namespace)}"
    served = [r for r in fault_proxy.faults.requests if r.split("?")[0].startswith(collection)]
    watches = [r for r in served if "watch=true" in r.partition("?")[2]]
    lists = [r.split("?")[0] for r in served if r not in watches]
    green = f"{collection}/{LWS}-green"
    assert lists.count(green) == 1
    others = [r for r in lists if r != green]
    named = [r for r in others if r != collection]
    # Two lists at most: the wait's own, and the traffic gate's list of the groups it labels (a poll would be many).
    assert others.count(collection) <= 2 and set(named) <= {f"{collection}/{LWS}"} and len(named) <= 5, others
    assert len(watches) == 1
    assert _k3(fault_proxy, namespace, "down", "--yes", "--purge", "--timeout", "120s").returncode == 0


def test_a_request_that_hangs_after_discovery_ends_at_the_deadline(
    fault_proxy: ProxiedPlane, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(deadline, "GRACE_S", 2.0)
    namespace = f"k3-{uuid.uuid4().hex[:8]}"
    fault_proxy.faults.add("GET", rf"^/api/v1/namespaces/{namespace}$", delay=8, times=1)
    result = _k3(fault_proxy, namespace, "status", "--timeout", "3s", timeout=150)
    assert result.returncode == 3, result.stderr
    assert result.stderr.splitlines() == [
        f"error: the Kubernetes API at {fault_proxy.url} did not answer within the command's deadline of 3s "
        f"(GET /api/v1/namespaces/{namespace})",
        HINT,
    ]
    # Discovery before it went to the real server and was answered.
    assert any(r.startswith("GET /version") for r in fault_proxy.faults.requests)


def test_preflight_judges_the_version_the_server_reports(fault_proxy: ProxiedPlane) -> None:
    fault_proxy.faults.add("GET", r"^/version", body_patch={"gitVersion": "v1.33.5", "minor": "33"}, times=None)
    done = run_cli("preflight", "-p", PROFILE, "--cluster", "--kubeconfig", str(fault_proxy.kubeconfig), "-o", "json")
    assert done.returncode == 1, done.stderr
    check = next(c for c in json.loads(done.stdout)["checks"] if c["name"] == "k8s.version")
    assert (check["status"], check["measured"]) == ("fail", "v1.33.5")
    assert "upgrade the control plane" in check["hint"]


def test_a_server_that_drops_every_connection_is_exit_3(fault_proxy: ProxiedPlane) -> None:
    fault_proxy.faults.add("*", ".*", drop=True, times=None)
    done = run_cli("preflight", "-p", PROFILE, "--cluster", "--kubeconfig", str(fault_proxy.kubeconfig))
    assert done.returncode == 3, done.stderr
    [error] = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert error.startswith("error: read the server version: Kubernetes API unreachable at 127.0.0.1:")
    assert "Traceback" not in done.stderr
