"""The release Lease on the real API server when clocks differ and requests are late: a holder whose clock is 90 s
ahead does not take over a live lease (it watches the lease for a renewal instead of trusting renewTime), a lease
whose holder died is taken over after a whole duration unchanged, and a renewal still in flight when the command
ends never leaves the lease held (targets/kubernetes/lease.py)."""

from __future__ import annotations

import subprocess
import sys
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest

from k3deploy.errors import K3DeployError
from k3deploy.kube.api import KubeApi
from k3deploy.kube.options import KubeOptions
from k3deploy.targets.kubernetes.lease import ReleaseLease
from tests.conftest import REPO_ROOT, cli_env
from tests.realk8s import release
from tests.realk8s.client import resource_path, wait_until
from tests.realk8s.cluster_fixtures import NO_DRA
from tests.realk8s.fault_fixtures import ProxiedPlane
from tests.realk8s.plane import Plane
from tests.realk8s.test_rollout import LWS, PROFILE

pytestmark = [pytest.mark.realk8s, pytest.mark.timeout(300)]
LEASES = "coordination.k8s.io/v1"
RELEASE = "kimi"
NAME = f"{RELEASE}-k3deploy-lock"
release_ns = release.release_ns  # the fixture, used by name


@pytest.fixture
def namespace(realk8s: Plane) -> Iterator[str]:
    """A namespace of the test's own, deleted after it."""
    name = f"lease-{uuid.uuid4().hex[:8]}"
    realk8s.api.create(
        resource_path("v1", "namespaces"), {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
    )
    yield name
    realk8s.api.request("DELETE", resource_path("v1", "namespaces", name=name))


def _api(kubeconfig: object) -> KubeApi:
    return KubeApi(KubeOptions(kubeconfig=str(kubeconfig)))


def _holder(plane: Plane, namespace: str) -> str | None:
    lease = plane.api.find(resource_path(LEASES, "leases", namespace, NAME)) or {}
    return (lease.get("spec") or {}).get("holderIdentity")


def _micro(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def test_a_holder_whose_clock_is_90_s_ahead_does_not_take_over_a_live_lease(realk8s: Plane, namespace: str) -> None:
    """Before: by its clock the live holder's renewTime was 90 s old, past the 4 s duration, so it took the lease over
    and both ran."""
    alice = ReleaseLease(
        _api(realk8s.admin_kubeconfig), namespace, RELEASE, "alice@a pid 1 (up)", duration_s=4, renew_s=1
    )
    ahead = lambda: datetime.now(UTC) + timedelta(seconds=90)  # noqa: E731
    notes: list[str] = []
    bob = ReleaseLease(
        _api(realk8s.admin_kubeconfig), namespace, RELEASE, "bob@b pid 2 (up)", clock=ahead, note=notes.append
    )
    with alice.hold():
        with pytest.raises(K3DeployError) as refused:
            bob.acquire()
        assert refused.value.exit_code == 3
        assert "is held by alice@a pid 1 (up)" in refused.value.message
        assert any("watching it 4 s for a renewal" in n for n in notes), notes
        assert _holder(realk8s, namespace) == "alice@a pid 1 (up)"
        assert alice.lost is None
    assert not _holder(realk8s, namespace)  # freed at the end


def test_a_lease_whose_holder_died_is_taken_over_after_a_whole_duration_unchanged(
    realk8s: Plane, namespace: str
) -> None:
    stale = _micro(datetime.now(UTC) - timedelta(hours=1))
    realk8s.api.create(
        resource_path(LEASES, "leases", namespace),
        {
            "apiVersion": LEASES,
            "kind": "Lease",
            "metadata": {"name": NAME},
            "spec": {
                "holderIdentity": "mallory@gone pid 42 (up)",
                "leaseDurationSeconds": 3,
                "acquireTime": stale,
                "renewTime": stale,
            },
        },
    )
    notes: list[str] = []
    bob = ReleaseLease(_api(realk8s.admin_kubeconfig), namespace, RELEASE, "bob@b pid 2 (up)", note=notes.append)
    with bob.hold():
        assert _holder(realk8s, namespace) == "bob@b pid 2 (up)"
    assert notes[0].endswith("watching it 3 s for a renewal before taking it over (clocks differ between machines)")
    assert notes[1] == "  lock: took over the lapsed lease of mallory@gone pid 42 (up)"
    assert not _holder(realk8s, namespace)


def test_a_renewal_in_flight_when_the_command_ends_never_leaves_the_lease_held(
    realk8s: Plane, fault_proxy: ProxiedPlane, namespace: str
) -> None:
    """The API server takes 3 s to apply each renewal (a PUT), as one that froze and resumed: the command ends while
    one is in flight, frees the lease at once, and sends no renewal after; the late renewal then fails on its
    resourceVersion instead of holding the lease for a holder that is gone."""
    late = fault_proxy.faults.add("PUT", rf"/namespaces/{namespace}/leases/{NAME}$", delay=3, times=None)
    alice = ReleaseLease(_api(fault_proxy.kubeconfig), namespace, RELEASE, "alice@a pid 1 (up)", renew_s=0.2)
    with alice.hold():
        wait_until("a renewal to be on its way", lambda: late.hits >= 1, 30)
    renewals = late.hits
    assert not _holder(realk8s, namespace)  # freed while the renewal was still held up
    wait_until("the held-up renewal to be answered", lambda: _answered(fault_proxy, namespace) >= renewals, 30)
    assert not _holder(realk8s, namespace)
    assert late.hits == renewals  # nothing renewed after the end


def _answered(proxy: ProxiedPlane, namespace: str) -> int:
    return sum(1 for r in proxy.faults.answered if r.startswith("PUT ") and f"/namespaces/{namespace}/leases/" in r)


def test_an_api_outage_ends_up_within_its_timeout_and_grace_lease_requests_included(
    realk8s: Plane, fault_proxy: ProxiedPlane, release_ns: str
) -> None:
    """Every request hangs once `up` holds the lease: the apply, the renewals and the freeing all count against
    --timeout and its 10 s of grace. Before: renewing and freeing the lease had no deadline and took 30 s each (a
    read timeout, retried) past it."""
    flags = ["-n", release_ns, *NO_DRA, "--skip-preflight", "--skip-smoke", "--set", "kubernetes.hf_token_secret=null"]
    command = ["up", "-p", PROFILE, "--kubeconfig", str(fault_proxy.kubeconfig), *flags, "--timeout", "8s"]
    up = subprocess.Popen(
        [sys.executable, "-m", "k3deploy", *command],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=cli_env(),
        cwd=REPO_ROOT,
    )
    try:
        wait_until(
            "up to hold the lease",
            lambda: up.poll() is not None or f"pid {up.pid} (up)" in str(_release_holder(realk8s, release_ns)),
            60,
        )
        fault_proxy.faults.add("*", ".", delay=120, times=None)  # the API server stops answering
        # The bound: what is left of the 8 s, the 10 s grace, and the interpreter's exit, well under one 30 s read.
        _, stderr = up.communicate(timeout=28)
    finally:
        if up.poll() is None:
            up.kill()
            up.communicate()
        fault_proxy.faults.clear()
    assert up.returncode == 3, stderr
    assert "lapses by itself" in stderr, stderr


def _release_holder(plane: Plane, namespace: str) -> str | None:
    lease = plane.api.find(resource_path(LEASES, "leases", namespace, f"{LWS}-k3deploy-lock")) or {}
    return (lease.get("spec") or {}).get("holderIdentity")
