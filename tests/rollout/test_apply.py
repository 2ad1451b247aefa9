"""`k3deploy apply` where no cluster behaviour is needed (no configuration, no server) or a fault on demand is
(429/500 retried); order, idempotence, dry run, diff, conflicts run on the real plane
(tests/realk8s/rollout/test_apply.py)."""

from __future__ import annotations

import re
from typing import Any

import pytest

from tests.conftest import run_cli
from tests.integration.vllm_server import free_port
from tests.kubeapi.server import write_kubeconfig
from tests.rollout.conftest import K3, PROFILE, live

pytestmark = pytest.mark.timeout(180)
LWS = "kimi-k3-gb300-tp16"


def applied_lines(stderr: str) -> list[str]:
    """The per-object lines of an apply: `<key> <action>`."""
    return [
        line.strip()
        for line in stderr.splitlines()
        if re.fullmatch(r"  \S+/\S+ (created|configured|unchanged|replaced)( \(server dry run\))?", line)
    ]


def test_429_and_500_are_retried(k3: K3, cluster: Any) -> None:
    throttled = cluster.faults.add("PATCH", r"/leaderworkersets/", 429, retry_after=0.2, times=2)
    broken = cluster.faults.add("GET", r"/namespaces/kimi-k3/jobs", 500, times=2)
    result = k3("apply", "--timeout", "60s")
    assert result.returncode == 0, result.stderr
    assert (throttled.hits, broken.hits) == (2, 2)
    assert live(cluster, "leaderworkersets", LWS)["status"]["readyReplicas"] == 1


def test_no_config_and_no_server_are_environment_errors(tmp_path: Any) -> None:
    missing = run_cli("status", "-p", PROFILE, "--kubeconfig", str(tmp_path / "nope"))
    assert missing.returncode == 3
    assert missing.stderr.startswith("error: no usable Kubernetes configuration")
    dead = write_kubeconfig(tmp_path / "dead", f"http://127.0.0.1:{free_port()}")
    unreachable = run_cli("apply", "-p", PROFILE, "--kubeconfig", str(dead))
    assert unreachable.returncode == 3, unreachable.stderr
    assert (
        "Kubernetes API unreachable" in unreachable.stderr
        and "hint: check --kubeconfig/--context" in unreachable.stderr
    )
    assert "Traceback" not in unreachable.stderr
