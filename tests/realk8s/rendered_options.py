"""The built-in GB300 profile rendered with every optional pod-bearing object on, for the tests that start those pods
on a real kubelet: the endpoint picker's Deployment (kubernetes.routing: inference-pool), the in-cluster guard's
Deployment (kubernetes.guard), the performance canary's CronJob (observe.canary) and the node-local weight-staging
DaemonSet (kubernetes.weight_staging). The committed example set under manifests/ has none of them; everything else
is the profile's own, as `k3deploy render` writes it (one render per session, each caller gets its own copy)."""

from __future__ import annotations

import copy
import functools
import tempfile
from pathlib import Path
from typing import Any

import yaml

from tests.conftest import run_cli

PROFILE = "kimi-k3-gb300-tp16"
OPTIONS = (
    "production=false",
    "kubernetes.routing=inference-pool",
    "kubernetes.gateway_namespace=envoy-gateway-system",
    "kubernetes.guard=true",
    "observe.canary.enabled=true",
    "observe.pushgateway_url=http://pushgateway.monitoring.svc:9091",
    "kubernetes.weight_staging=node-local",
    # The staging DaemonSet's hostPath needs it (preflight's Pod Security check).
    "kubernetes.pod_security_level=privileged",
)


@functools.cache
def _render() -> dict[str, dict[str, Any]]:
    with tempfile.TemporaryDirectory(prefix="k3deploy-options-") as out:
        done = run_cli("render", "-p", PROFILE, *(a for s in OPTIONS for a in ("--set", s)), "-o", out)
        assert done.returncode == 0, done.stderr
        paths = sorted(p for p in Path(out).glob("*.yaml") if p.name != "kustomization.yaml")
        objects = [yaml.safe_load(p.read_text()) for p in paths]
    return {f"{o['kind']}/{o['metadata']['name']}": o for o in objects}


def rendered_options() -> dict[str, dict[str, Any]]:
    """The set's objects by `Kind/name`, namespace kimi-k3 (a test moves what it creates into its own)."""
    return copy.deepcopy(_render())


def in_namespace(obj: dict[str, Any], namespace: str) -> dict[str, Any]:
    """`obj` with its metadata.namespace set to `namespace`."""
    obj["metadata"]["namespace"] = namespace
    return obj
