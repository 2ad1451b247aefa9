"""A test cluster ready for the GB300 profile (CRDs, one clique of four 4-GPU trays, a default storage class, the
nvidia RuntimeClass),
and `k3` to run the real CLI against it."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from typing import Any

import pytest

from tests.conftest import run_cli

PROFILE = "kimi-k3-gb300-tp16"
NAMESPACE = "kimi-k3"
#: Small deadlines keep failures fast; an unschedulable pod fails at once.
FAST = ("--set", "kubernetes.unschedulable_grace_s=0")

K3 = Callable[..., subprocess.CompletedProcess[str]]


@pytest.fixture
def cluster(kube: Any) -> Any:
    """The test API server, populated like a GB300 cluster the profile fits on."""
    kube.add_crds()
    kube.add_gb300_nodes()
    kube.add_storage_class(default=True)
    kube.add_runtime_class()
    return kube


@pytest.fixture
def k3(cluster: Any) -> K3:
    """`k3("apply", "--timeout", "20s", ...)`: the CLI with --kubeconfig, the GB300 profile and FAST."""

    def run(
        command: str, *args: str, timeout: float = 90, input: str | None = None
    ) -> subprocess.CompletedProcess[str]:
        return run_cli(
            command, "-p", PROFILE, "--kubeconfig", str(cluster.kubeconfig), *FAST, *args, timeout=timeout, input=input
        )

    return run


def live(cluster: Any, plural: str, name: str) -> dict | None:
    """An object of the profile's namespace as the server holds it."""
    return cluster.store.get(plural, name, NAMESPACE)
