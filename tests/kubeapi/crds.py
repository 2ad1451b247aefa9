"""The CustomResourceDefinitions k3deploy needs (LeaderWorkerSet, ComputeDomain, ServiceMonitor, PrometheusRule,
and InferencePool for `kubernetes.routing: inference-pool`).

The upstream CRD files (`../shared/crds` beside the checkout, or the folder K3DEPLOY_TEST_CRDS names) are what the
test server installs, so custom resources are held to their real schemas. Without them the server falls back to
CRDs with the real names and subresources but an open schema; tests that need the real ones call `require()`,
which fails under CI=true and skips elsewhere.
"""

from __future__ import annotations

import copy
import functools
import os
from pathlib import Path

import pytest
import yaml

#: Upstream CRD file of each kind, as the projects publish them.
FILES = {
    "LeaderWorkerSet": "leaderworkerset.x-k8s.io_leaderworkersets.yaml",
    "ComputeDomain": "resource.nvidia.com_computedomains.yaml",
    "ServiceMonitor": "monitoring.coreos.com_servicemonitors.yaml",
    "PrometheusRule": "monitoring.coreos.com_prometheusrules.yaml",
    "InferencePool": "inference.networking.k8s.io_inferencepools.yaml",
}


def upstream_dir() -> Path:
    """Where the upstream CRDs are: $K3DEPLOY_TEST_CRDS, else `shared/crds` beside the checkout."""
    override = os.environ.get("K3DEPLOY_TEST_CRDS")
    return Path(override) if override else Path(__file__).resolve().parents[2].parent / "shared" / "crds"


@functools.lru_cache(maxsize=16)
def _parsed(path: Path) -> dict:
    # The LWS CRD is 18k lines: libyaml parses it ten times faster than pure Python, and once per session.
    return yaml.load(path.read_text(encoding="utf-8"), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


def upstream(kind: str) -> dict | None:
    """The upstream CRD of `kind`, or None when the folder is missing (an error under CI=true)."""
    path = upstream_dir() / FILES[kind]
    if not path.is_file():
        if os.environ.get("CI") == "true":
            raise FileNotFoundError(f"the upstream CRD {path} is missing (CI=true needs it)")
        return None
    return copy.deepcopy(_parsed(path))


def require() -> Path:
    """The upstream CRD folder for a test that needs it: fail under CI=true when missing, else skip."""
    found = upstream_dir()
    if not all((found / name).is_file() for name in FILES.values()):
        message = f"the upstream CRDs are not in {found} (set K3DEPLOY_TEST_CRDS or put them beside the checkout)"
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    return found


_OPEN = {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}


def crd(
    group: str,
    version: str,
    kind: str,
    plural: str,
    *,
    short: list[str] | None = None,
    status: bool = True,
    scale: dict | None = None,
    columns: list[dict] | None = None,
    categories: list[str] | None = None,
) -> dict:
    """An apiextensions.k8s.io/v1 CustomResourceDefinition for one served, stored version."""
    subresources: dict = {}
    if status:
        subresources["status"] = {}
    if scale:
        subresources["scale"] = scale
    names = {"kind": kind, "listKind": f"{kind}List", "plural": plural, "singular": kind.lower()}
    if short:
        names["shortNames"] = short
    if categories:
        names["categories"] = categories
    served = {"name": version, "served": True, "storage": True, "schema": _OPEN, "subresources": subresources}
    if columns:
        served["additionalPrinterColumns"] = columns
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{group}"},
        "spec": {"group": group, "names": names, "scope": "Namespaced", "versions": [served]},
    }


def leaderworkerset() -> dict:
    """leaderworkersets.leaderworkerset.x-k8s.io (v1), with its printer columns and scale subresource."""
    return upstream("LeaderWorkerSet") or crd(
        "leaderworkerset.x-k8s.io",
        "v1",
        "LeaderWorkerSet",
        "leaderworkersets",
        short=["lws"],
        scale={
            "specReplicasPath": ".spec.replicas",
            "statusReplicasPath": ".status.replicas",
            "labelSelectorPath": ".status.hpaPodSelector",
        },
        columns=[
            {"name": "Ready", "type": "integer", "jsonPath": ".status.readyReplicas"},
            {"name": "Desired", "type": "integer", "jsonPath": ".spec.replicas"},
            {"name": "Up-to-date", "type": "integer", "jsonPath": ".status.updatedReplicas"},
            {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
        ],
    )


def compute_domain() -> dict:
    """computedomains.resource.nvidia.com (v1beta1)."""
    return upstream("ComputeDomain") or crd(
        "resource.nvidia.com", "v1beta1", "ComputeDomain", "computedomains", short=["cd"]
    )


def service_monitor() -> dict:
    """servicemonitors.monitoring.coreos.com (v1), which has no status subresource."""
    return upstream("ServiceMonitor") or crd(
        "monitoring.coreos.com",
        "v1",
        "ServiceMonitor",
        "servicemonitors",
        short=["smon"],
        status=False,
        categories=["prometheus-operator"],
    )


def prometheus_rule() -> dict:
    """prometheusrules.monitoring.coreos.com (v1), with a status subresource like upstream's."""
    return upstream("PrometheusRule") or crd(
        "monitoring.coreos.com",
        "v1",
        "PrometheusRule",
        "prometheusrules",
        short=["promrule"],
        categories=["prometheus-operator"],
    )


def inference_pool() -> dict:
    """inferencepools.inference.networking.k8s.io (v1)."""
    return upstream("InferencePool") or crd(
        "inference.networking.k8s.io", "v1", "InferencePool", "inferencepools", short=["infpool"]
    )
