"""One command at a time per release on the real plane: `up` holds a Lease (coordination.k8s.io/v1) for the whole
command, a second `up` names the holder and exits 3, and a rollback never reverts a change another writer made."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from tests.realk8s import release
from tests.realk8s.client import resource_path, wait_until
from tests.realk8s.cluster_fixtures import NEW_IMAGE
from tests.realk8s.plane import Plane
from tests.realk8s.release import lease, live_lws, spawn, up
from tests.realk8s.test_rollout import LWS
from tests.smoke.scripted_server import Script, scripted_server

release_ns = release.release_ns  # the fixture, used by name
pytestmark = [pytest.mark.realk8s, pytest.mark.timeout(600)]
LEASES = "coordination.k8s.io/v1"


def _micro(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _foreign_lease(plane: Plane, namespace: str, renewed: datetime) -> None:
    plane.api.create(
        resource_path("v1", "namespaces"), {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}
    )
    plane.api.create(
        resource_path(LEASES, "leases", namespace),
        {
            "apiVersion": LEASES,
            "kind": "Lease",
            "metadata": {"name": f"{LWS}-k3deploy-lock"},
            "spec": {
                "holderIdentity": "mallory@elsewhere pid 42 (up)",
                "leaseDurationSeconds": 600,
                "acquireTime": _micro(renewed),
                "renewTime": _micro(renewed),
            },
        },
    )


def test_a_held_lease_stops_up_naming_its_holder_and_a_lapsed_one_is_taken_over(
    realk8s: Plane, release_ns: str
) -> None:
    namespace = release_ns
    _foreign_lease(realk8s, namespace, datetime.now(UTC))
    held = up(realk8s, namespace, "--skip-smoke")
    assert held.returncode == 3, held.stderr
    assert "is held by mallory@elsewhere pid 42 (up) since" in held.stderr, held.stderr
    assert live_lws(realk8s, namespace) is None  # nothing applied
    stale = lease(realk8s, namespace)
    stale["spec"]["renewTime"] = _micro(datetime.now(UTC) - timedelta(hours=1))
    stale["spec"]["leaseDurationSeconds"] = 3  # watched that long for a renewal before it is taken over
    realk8s.api.request("PUT", resource_path(LEASES, "leases", namespace, f"{LWS}-k3deploy-lock"), json=stale)
    taken = up(realk8s, namespace, "--skip-smoke")
    assert taken.returncode == 0, taken.stderr
    assert "took over the lapsed lease of mallory@elsewhere pid 42 (up)" in taken.stderr
    assert not lease(realk8s, namespace)["spec"].get("holderIdentity")  # freed at the end


def test_two_ups_at_once_one_runs_the_other_names_it_and_exits_3(realk8s: Plane, release_ns: str) -> None:
    namespace = release_ns
    first = spawn(
        realk8s,
        namespace,
        "up",
        "--set",
        "kubernetes.hf_token_secret=null",
        "--skip-smoke",
        "--skip-preflight",
        "--timeout",
        "120s",
    )
    try:
        wait_until(
            "the first up to hold the lease",
            lambda: (
                f"pid {first.pid} (up)" in str((lease(realk8s, namespace) or {}).get("spec", {}).get("holderIdentity"))
            ),
            60,
        )
        second = up(realk8s, namespace, "--skip-smoke")
    finally:
        _, stderr = first.communicate(timeout=240)
    assert second.returncode == 3, second.stderr
    assert "is held by " in second.stderr and f"pid {first.pid} (up)" in second.stderr, second.stderr
    assert second.stderr.count("error:") == 1 and "hint:" in second.stderr
    assert first.returncode == 0, stderr
    assert not lease(realk8s, namespace)["spec"].get("holderIdentity")


def test_rollback_leaves_a_template_another_writer_applied_meanwhile(realk8s: Plane, release_ns: str) -> None:
    namespace = release_ns
    first = up(realk8s, namespace, "--skip-smoke")
    assert first.returncode == 0, first.stderr
    # A smoke that reaches its server and fails its target (exit 1: rolled back), slowly enough (a chunk a second)
    # for another writer to change the set first; one that cannot reach it (exit 3) keeps the install unrolled.
    with scripted_server(Script(models=["moonshotai/Kimi-K3"], chunk_delay_s=1.0)) as slow:
        upgrade = spawn(
            realk8s,
            namespace,
            "up",
            "--set",
            "kubernetes.hf_token_secret=null",
            "--skip-preflight",
            "--set",
            "smoke.requests=2",
            "--set",
            "smoke.output_tokens=16",
            "--set",
            "smoke.correctness=false",
            "--set",
            "targets.decode_tok_s=1000",
            "--timeout",
            "120s",
            *NEW_IMAGE,
            "--endpoint",
            slow.url,
            "--yes",  # one group replaced in place
        )
        try:
            # The new group is ready on its template, so its gate's smoke is streaming its slow answers (the gate
            # smokes each group before the revision is recorded): another writer changes the set now.
            def smoking() -> bool:
                live = live_lws(realk8s, namespace) or {}
                status = live.get("status") or {}
                available = any(
                    c.get("type") == "Available" and c.get("status") == "True" for c in status.get("conditions") or []
                )
                generation = int((live.get("metadata") or {}).get("generation") or 0)
                return generation >= 2 and int(status.get("observedGeneration") or 0) >= generation and available

            wait_until("the new group ready", lambda: upgrade.poll() is not None or smoking(), 120)
            realk8s.api.apply(
                resource_path("leaderworkerset.x-k8s.io/v1", "leaderworkersets", namespace, LWS),
                {
                    "apiVersion": "leaderworkerset.x-k8s.io/v1",
                    "kind": "LeaderWorkerSet",
                    "metadata": {"name": LWS},
                    "spec": {
                        "leaderWorkerTemplate": {
                            "leaderTemplate": {"spec": {"containers": [{"name": "vllm", "image": "someone/else:2"}]}}
                        }
                    },
                },
                manager="someone-else",
            )
        finally:
            _, stderr = upgrade.communicate(timeout=240)
    assert upgrade.returncode == 1, stderr  # smoke measured a decode below its target: exit 1
    assert "rollback skipped: LeaderWorkerSet/" in stderr and "someone changed it meanwhile" in stderr, stderr
    leader = live_lws(realk8s, namespace)["spec"]["leaderWorkerTemplate"]["leaderTemplate"]["spec"]["containers"]
    assert [c["image"] for c in leader if c["name"] == "vllm"] == ["someone/else:2"]
    assert not lease(realk8s, namespace)["spec"].get("holderIdentity")
