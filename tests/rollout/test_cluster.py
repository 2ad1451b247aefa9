"""The rollout scenarios against a real cluster (opt-in: `pytest -m cluster`, KUBECONFIG pointing at it).

Environment: K3DEPLOY_CLUSTER_PROFILE (default kimi-k3-gb300-tp16), K3DEPLOY_CLUSTER_NAMESPACE (default
k3deploy-e2e; everything in it is deleted at the end), K3DEPLOY_CLUSTER_TIMEOUT (default 3h, the weight load),
K3DEPLOY_CLUSTER_SET (extra `--set k=v` pairs, comma-separated). Failures are provoked through the profile only
(an image that does not exist, a node selector nothing matches, a vLLM flag that makes it exit), so they work on
any cluster. Smoke from outside the cluster needs a port-forward to the Service and
K3DEPLOY_CLUSTER_SET=kubernetes.endpoint_override=http://127.0.0.1:PORT. Preflight FAILs a production profile
with floating versions: point K3DEPLOY_CLUSTER_PROFILE at the file `k3deploy pin -p ... -o pinned.yaml` wrote.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator

import pytest

from tests.conftest import run_cli

pytestmark = [
    pytest.mark.cluster,
    pytest.mark.skipif(not os.environ.get("KUBECONFIG"), reason="needs KUBECONFIG pointing at a real cluster"),
]
PROFILE = os.environ.get("K3DEPLOY_CLUSTER_PROFILE", "kimi-k3-gb300-tp16")
NAMESPACE = os.environ.get("K3DEPLOY_CLUSTER_NAMESPACE", "k3deploy-e2e")
TIMEOUT = os.environ.get("K3DEPLOY_CLUSTER_TIMEOUT", "3h")
EXTRA = [part for pair in os.environ.get("K3DEPLOY_CLUSTER_SET", "").split(",") if pair for part in ("--set", pair)]


def k3(command: str, *args: str, timeout: float = 4 * 3600) -> subprocess.CompletedProcess[str]:
    """The CLI on the real cluster, in the test namespace."""
    return run_cli(command, "-p", PROFILE, "-n", NAMESPACE, *EXTRA, *args, timeout=timeout)


@pytest.fixture
def clean() -> Iterator[None]:
    """Start from nothing and leave nothing (weights included)."""
    k3("down", "--yes", "--purge")
    yield
    k3("down", "--yes", "--purge")


def test_up_then_rerun_then_status_then_down(clean: None) -> None:
    first = k3("up", "--timeout", TIMEOUT)
    assert first.returncode == 0, first.stderr
    again = k3("up", "--timeout", TIMEOUT, "--skip-preflight")
    assert again.returncode == 0 and "ok   apply: no changes" in again.stderr
    state = json.loads(k3("status", "-o", "json").stdout)
    assert state["ready"] is True and state["revision"]["current"] == 1
    down = k3("down", "--yes")
    assert down.returncode == 0 and "weight cache PVC kept" in down.stderr


def test_image_that_does_not_exist_is_diagnosed_and_the_first_install_removed(clean: None) -> None:
    result = k3(
        "up",
        "--skip-preflight",
        "--skip-smoke",
        "--timeout",
        "15m",
        "--set",
        "vllm.image=vllm/vllm-openai:k3deploy-no-such-tag",
    )
    assert result.returncode == 1, result.stderr
    assert "ImagePullBackOff" in result.stderr or "ErrImagePull" in result.stderr
    assert "==> rollback (first install)" in result.stderr


def test_no_matching_nodes_is_unschedulable(clean: None) -> None:
    result = k3(
        "apply",
        "--timeout",
        "15m",
        "--set",
        "kubernetes.unschedulable_grace_s=0",
        "--set",
        "kubernetes.node_selector={k3deploy.test/none: 'true'}",
    )
    assert result.returncode == 1, result.stderr
    assert "reason: Unschedulable" in result.stderr


def test_deadline_exceeded_exits_3(clean: None) -> None:
    result = k3("apply", "--timeout", "20s")
    assert result.returncode == 3, result.stderr
    assert "not ready before the deadline" in result.stderr


def test_failed_upgrade_rolls_back(clean: None) -> None:
    assert k3("up", "--skip-smoke", "--timeout", TIMEOUT).returncode == 0
    before = json.loads(
        subprocess.run(
            ["kubectl", "get", "leaderworkerset", "-n", NAMESPACE, "-o", "json"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    )["items"][0]["spec"]
    upgrade = k3(
        "up",
        "--skip-preflight",
        "--skip-smoke",
        "--timeout",
        "30m",
        "--set",
        "vllm.extra_args=[--k3deploy-no-such-flag]",
    )
    assert upgrade.returncode == 1, upgrade.stderr
    assert "rollback: restored revision 1" in upgrade.stderr
    after = json.loads(
        subprocess.run(
            ["kubectl", "get", "leaderworkerset", "-n", NAMESPACE, "-o", "json"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    )["items"][0]["spec"]
    assert after == before
