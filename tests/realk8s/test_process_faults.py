"""Process faults are real: the API server or the LWS controller of a plane of the test's own is stopped or killed
by the pid the fixture started, and restarted from the same command line; what k3deploy does meanwhile: exit 3
naming the unreachable server; a LeaderWorkerSet write refused by the controller's webhook retried until the
controller is back, or failed naming the webhook and its controller when it does not come back."""

from __future__ import annotations

import json
import subprocess
import time
import uuid
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from tests.conftest import run_cli, run_cli_process
from tests.realk8s.client import resource_path, wait_until
from tests.realk8s.plane import Plane
from tests.realk8s.test_rollout import LWS, PROFILE

pytestmark = [pytest.mark.realk8s, pytest.mark.timeout(600)]
LWS_PATH = "leaderworkerset.x-k8s.io/v1"


def _args(plane: Plane, namespace: str, *args: str) -> list[str]:
    assert plane.admin_kubeconfig is not None
    return [*args, "-p", PROFILE, "--kubeconfig", str(plane.admin_kubeconfig), "-n", namespace]


def _k3(plane: Plane, namespace: str, *args: str) -> subprocess.CompletedProcess[str]:
    return run_cli(*_args(plane, namespace, *args), timeout=300)


def _restart(plane: Plane, name: str) -> None:
    """Start component `name` again with its own command line and environment (same ports, certificates and data)
    and wait until it is ready."""
    process = plane.processes[name]
    assert not process.running()
    process.start()
    ready = plane.ready_urls[name]

    def up() -> bool:
        if name == "kube-apiserver":
            return plane.api.request("GET", "/readyz").status_code == 200
        return httpx.get(ready, timeout=2).status_code == 200

    wait_until(f"{name} to answer again", up, 120)


def test_the_api_server_gone_is_exit_3_for_status_and_apply_and_back_when_restarted(lone_plane: Plane) -> None:
    namespace = f"k3-{uuid.uuid4().hex[:8]}"
    address = lone_plane.url.removeprefix("https://")
    apiserver = lone_plane.processes["kube-apiserver"]
    apiserver.stop()  # SIGTERM to the pid the fixture started
    assert not apiserver.running()
    for command in (("status",), ("apply", "--timeout", "60s")):
        done = _k3(lone_plane, namespace, *command)
        assert done.returncode == 3, (command, done.stderr)
        errors = [line for line in done.stderr.splitlines() if line.startswith("error: ")]
        assert len(errors) == 1 and f"Kubernetes API unreachable at {address}: " in errors[0], done.stderr
        assert "connection refused" in errors[0].lower(), errors
        assert "hint: check --kubeconfig/--context and that the API server is up" in done.stderr
        assert "Traceback" not in done.stderr
    # Nothing was half-applied: the server came back with the same etcd data, and nothing of the set is there.
    _restart(lone_plane, "kube-apiserver")
    assert lone_plane.api.find(f"/api/v1/namespaces/{namespace}") is None
    again = _k3(lone_plane, namespace, "status", "-o", "json")
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["ready"] is False


def test_a_rollout_waits_while_the_lws_controller_is_down_and_completes_when_it_is_back(lone_plane: Plane) -> None:
    namespace = f"k3-{uuid.uuid4().hex[:8]}"
    api = lone_plane.api
    lone_plane.processes["lws-controller"].kill()  # a crash: its webhooks (failurePolicy Fail) refuse LWS writes
    with ThreadPoolExecutor(1) as pool:
        future = pool.submit(run_cli_process, *_args(lone_plane, namespace, "apply", "--timeout", "120s"), timeout=300)
        jobs = resource_path("batch/v1", "jobs", namespace)
        wait_until(
            "the prefetch Job to complete",
            lambda: any(
                j["metadata"]["name"].startswith(f"{LWS}-prefetch-") and j.get("status", {}).get("succeeded") == 1
                for j in (api.find(jobs) or {}).get("items", [])
            ),
            120,
        )
        # k3deploy applies the LeaderWorkerSet next: the API server cannot call its webhook, k3deploy retries.
        time.sleep(4)
        assert api.find(resource_path(LWS_PATH, "leaderworkersets", namespace, LWS)) is None
        assert not future.done()
        _restart(lone_plane, "lws-controller")
        done = future.result()
    assert done.returncode == 0, done.stderr
    live = api.get(resource_path(LWS_PATH, "leaderworkersets", namespace, LWS))
    assert live["status"]["readyReplicas"] == 1
    assert {s["metadata"]["name"] for s in api.get(resource_path("apps/v1", "statefulsets", namespace))["items"]} == {
        LWS,
        f"{LWS}-0",
    }


def test_the_lws_controller_down_for_good_fails_the_apply_naming_its_webhook(lone_plane: Plane) -> None:
    namespace = f"k3-{uuid.uuid4().hex[:8]}"
    lone_plane.processes["lws-controller"].kill()
    done = _k3(lone_plane, namespace, "apply", "--timeout", "90s")
    assert done.returncode == 3, done.stderr
    [error] = [line for line in done.stderr.splitlines() if line.startswith("error: ")]
    assert error.startswith(
        f"error: apply {namespace}/LeaderWorkerSet/{LWS}: the API server could not call admission webhook "
        "mleaderworkerset.kb.io: "
    ), error
    assert "connection refused" in error
    assert "hint: the controller serving webhook mleaderworkerset.kb.io is down or unreachable" in done.stderr
    # What came before the LeaderWorkerSet stays (the prefetch Job did its work); the group was never created.
    assert lone_plane.api.find(resource_path(LWS_PATH, "leaderworkersets", namespace, LWS)) is None
