"""`up --smoke in-cluster --timeout 60s` whose smoke image never pulls, on the real plane: the Job's pod waits in
ImagePullBackOff (a KWOK Stage, as the kubelet reports it: tests/realk8s/stages.py), and `up` says so at once with
the reason, exit 3, the install kept. Before: it waited with no line for the Job's own deadline (11,400 s)."""

from __future__ import annotations

import pytest

from tests.realk8s import stages
from tests.realk8s.client import resource_path
from tests.realk8s.cluster_fixtures import GATED
from tests.realk8s.plane import Plane
from tests.realk8s.test_forward import _namespace
from tests.realk8s.test_rollout import LWS, k3

pytestmark = [pytest.mark.realk8s, pytest.mark.timeout(600)]


def test_a_smoke_job_whose_image_never_pulls_is_reported_at_once_and_the_install_kept(realk8s: Plane) -> None:
    namespace = _namespace(realk8s)
    never_pulls = (
        *("--set", f"kubernetes.smoke_image={stages.PULL_FAILS_IMAGE}"),
        # the node-preflight Job runs the same image
        *("--set", "kubernetes.node_preflight_job=false"),
    )
    done = k3(realk8s, namespace, "up", *GATED, *never_pulls, "--smoke", "in-cluster", "--timeout", "60s")
    assert done.returncode == 3, done.stderr
    # The traffic gate smokes the new leader by its own Job in the wait stage: that Job is the one stuck.
    job = f"{namespace}/Job/{LWS}-0-smoke"
    assert f"smoke Job pod {LWS}-0-smoke-" in done.stderr  # a progress line while it waits
    error = next(line for line in done.stderr.splitlines() if line.startswith("error: "))
    assert error.startswith(f"error: the smoke Job {job} cannot start: pod {LWS}-0-smoke-"), error
    assert f'ImagePullBackOff: Back-off pulling image "{stages.PULL_FAILS_IMAGE}"' in error
    assert f"FAIL wait: the smoke Job {job} cannot start" in done.stderr
    assert "kubernetes.smoke_image" in done.stderr
    assert "==> no rollback: not rolled back: the smoke could not test the server; the install is kept" in done.stderr
    # The stuck gate Job went with the gate (no pod left pulling); the deployment's smoke Job was never made.
    assert realk8s.api.find(resource_path("batch/v1", "jobs", namespace, f"{LWS}-0-smoke")) is None
    assert realk8s.api.find(resource_path("batch/v1", "jobs", namespace, f"{LWS}-smoke")) is None
    path = resource_path("leaderworkerset.x-k8s.io/v1", "leaderworkersets", namespace, LWS)
    assert realk8s.api.find(path) is not None  # the install is kept
    assert k3(realk8s, namespace, "down", "--yes", "--purge", "--timeout", "120s").returncode == 0
