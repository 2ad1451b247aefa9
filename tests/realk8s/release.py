"""Shared helpers of the release-safety tests on the real plane (gates, lease, blue-green leftovers, access).

`up` runs the CLI against the session plane (tests/realk8s/fixtures.py) in a namespace of its own with quick flags:
no token Secret, a short smoke that judges decode speed only, no preflight.
"""

from __future__ import annotations

import subprocess
import uuid

from tests.realk8s.client import resource_path
from tests.realk8s.plane import Plane
from tests.realk8s.test_rollout import LWS, k3

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
