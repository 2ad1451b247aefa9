"""Shared helpers of the release-safety tests on the real plane (gates, lease, blue-green leftovers, access).

`up` runs the CLI against the session plane (tests/realk8s/fixtures.py) in a namespace of its own with quick flags:
no token Secret, a short smoke that judges decode speed only, no preflight.
"""

from __future__ import annotations

import subprocess
import sys
import uuid
from collections.abc import Iterator

import pytest

from tests.conftest import REPO_ROOT, cli_env
from tests.realk8s.client import resource_path, wait_until
from tests.realk8s.cluster_fixtures import NO_DRA
from tests.realk8s.plane import Plane
from tests.realk8s.test_rollout import LWS, PROFILE, k3

LWS_API = "leaderworkerset.x-k8s.io/v1"
QUICK = (
    "--set",
    "kubernetes.hf_token_secret=null",
    "--set",
    "smoke.requests=2",
    "--set",
    "smoke.output_tokens=16",
    "--set",
    "smoke.correctness=false",
    "--set",
    "targets.decode_tok_s=1",
    # Greedy and to the full length, as before the GB300 profile sampled like the published run (T=1.0): the
    # rehearsal model's random weights accept almost no draft above T=0.
    "--set",
    "smoke.temperature=0",
    "--set",
    "smoke.ignore_eos=true",
    "--timeout",
    "90s",
    "--skip-preflight",
)
TWO = ("--set", "parallel.replicas=2")
NEW_IMAGE = ("--set", "vllm.image=vllm/vllm-openai:kimi-k3-next")
OLD_IMAGE_PREFIX = "vllm/vllm-openai:"


def fresh_namespace() -> str:
    """A namespace name no other test uses (`up` creates it)."""
    return f"k3-{uuid.uuid4().hex[:8]}"


def _terminating(plane: Plane) -> list[str]:
    listed = plane.api.request("GET", "/api/v1/namespaces").json().get("items", [])
    return [n["metadata"]["name"] for n in listed if n.get("status", {}).get("phase") == "Terminating"]


@pytest.fixture
def release_ns(realk8s: Plane) -> Iterator[str]:
    """A fresh namespace for `up` to create; whatever the test left there is removed after it, passed or failed, so
    a failed test does not keep GPU nodes from the next ones. It starts once no namespace is still terminating
    (an earlier test's `down --purge` returns before the namespace controller has removed its pods)."""
    wait_until("the plane's terminating namespaces to be gone", lambda: not _terminating(realk8s), 180)
    namespace = fresh_namespace()
    yield namespace
    done = k3(realk8s, namespace, "down", "--yes", "--purge", "--timeout", "120s")
    if done.returncode != 0:
        realk8s.api.request("DELETE", resource_path("v1", "namespaces", name=namespace))


def up(plane: Plane, namespace: str, *args: str) -> subprocess.CompletedProcess[str]:
    """`k3deploy up` with the quick flags."""
    return k3(plane, namespace, "up", *QUICK, *args)


def down(plane: Plane, namespace: str) -> None:
    """`down --purge`, asserted to succeed."""
    done = k3(plane, namespace, "down", "--yes", "--purge", "--timeout", "120s")
    assert done.returncode == 0, done.stderr


def images(plane: Plane, namespace: str, lws: str = LWS) -> dict[str, str]:
    """Pod name -> serving image, of the live (not terminating) pods of `lws`."""
    pods = plane.api.get(resource_path("v1", "pods", namespace))["items"]
    return {
        p["metadata"]["name"]: p["spec"]["containers"][0]["image"]
        for p in pods
        if p["metadata"]["labels"].get("leaderworkerset.sigs.k8s.io/name") == lws
        and not p["metadata"].get("deletionTimestamp")
    }


def live_lws(plane: Plane, namespace: str, name: str = LWS) -> dict | None:
    """The LeaderWorkerSet as the API server holds it."""
    return plane.api.find(resource_path(LWS_API, "leaderworkersets", namespace, name))


def spawn(plane: Plane, namespace: str, command: str, *args: str) -> subprocess.Popen[str]:
    """`python -m k3deploy COMMAND` in a process of its own (what `k3` runs in this one), stdout and stderr piped."""
    assert plane.admin_kubeconfig is not None
    argv = [command, "-p", PROFILE, "--kubeconfig", str(plane.admin_kubeconfig), "-n", namespace, *NO_DRA, *args]
    return subprocess.Popen(
        [sys.executable, "-m", "k3deploy", *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=cli_env(),
        cwd=REPO_ROOT,
    )


def lease(plane: Plane, namespace: str) -> dict | None:
    """The release's lock Lease."""
    return plane.api.find(resource_path("coordination.k8s.io/v1", "leases", namespace, f"{LWS}-k3deploy-lock"))
