"""NetworkPolicy connectivity judged by an upstream engine: cyclonus (github.com/mattfenwick/cyclonus) (test helper).

cyclonus is the NetworkPolicy engine network-policy-api's policy-assistant grew from; its `analyze --mode
query-traffic` builds the policies' matcher (pkg/matcher/builder.go) and answers, for each connection, whether the
source's egress and the target's ingress admit it (pkg/matcher/policy.go IsTrafficAllowed), without a cluster.
.ci/cyclonus builds it from the Go module proxy and links it into the venv. Here we only feed it: the rendered
policies as a NetworkPolicyList, and each connection as a traffic object (the pods' namespace, the namespace's
labels as the API server sets them, the pods' labels, port and protocol); its verdict is read from the
"Is allowed?" footer of each answer.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import venv_tool

BINARY = "cyclonus"
#: Bound of one engine run (a few hundred connections take well under a second).
RUN_BOUND_S = 120
#: The footer of each answer: `| IS ALLOWED? | TRUE |` (tablewriter upper-cases footers).
_VERDICT = re.compile(r"IS ALLOWED\?\s*\|\s*(TRUE|FALSE)")
#: Label the API server sets on every namespace (Kubernetes >= 1.22).
NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"


@dataclass(frozen=True)
class Pod:
    """A pod as policies see it: namespace and labels. `external` marks a peer outside the cluster (the Hub, a
    site's mirror, a cloud load balancer), known only by `ip`."""

    namespace: str
    labels: dict[str, str]
    external: bool = False
    ip: str = "203.0.113.7"


#: A peer outside the cluster: what the prefetch downloads from.
INTERNET = Pod("", {}, external=True)


def engine() -> str:
    """The cyclonus executable, or a skip (a failure under CI=true) saying how to get it."""
    path = os.environ.get("K3DEPLOY_CYCLONUS") or venv_tool(BINARY)
    if path:
        return path
    message = f"{BINARY} (the NetworkPolicy engine) is not installed (run: bash .ci/setup, which runs .ci/cyclonus)"
    if os.environ.get("CI") == "true":
        pytest.fail(message)
    pytest.skip(message)


def _peer(pod: Pod, ip: str) -> dict[str, Any]:
    if pod.external:
        return {"IP": pod.ip}
    return {
        "Internal": {
            "PodLabels": pod.labels,
            "NamespaceLabels": {NAMESPACE_NAME_LABEL: pod.namespace},
            "Namespace": pod.namespace,
        },
        "IP": ip,
    }


def judge(policies: list[dict[str, Any]], connections: list[tuple[Pod, Pod, int, str]]) -> list[bool]:
    """For each (source, target, port, protocol): whether the engine lets it through the policies."""
    if not connections:
        return []
    traffic = [
        {
            "Source": _peer(src, "10.0.0.1"),
            "Destination": _peer(dst, "10.0.0.2"),
            "ResolvedPort": port,
            "ResolvedPortName": "",
            "Protocol": protocol,
        }
        for src, dst, port, protocol in connections
    ]
    with tempfile.TemporaryDirectory(prefix="k3deploy-netpol-") as tmp:
        policy_path = Path(tmp, "policies.json")
        policy_path.write_text(
            json.dumps({"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicyList", "items": policies})
        )
        traffic_path = Path(tmp, "traffic.json")
        traffic_path.write_text(json.dumps(traffic))
        result = subprocess.run(
            [
                engine(),
                "analyze",
                "--mode",
                "query-traffic",
                "--policy-path",
                str(policy_path),
                "--traffic-path",
                str(traffic_path),
            ],
            capture_output=True,
            text=True,
            timeout=RUN_BOUND_S,
            check=False,
        )
    verdicts = [match == "TRUE" for match in _VERDICT.findall(result.stdout)]
    if result.returncode != 0 or len(verdicts) != len(connections):
        raise AssertionError(f"cyclonus gave {len(verdicts)} verdicts for {len(connections)}: {result.stderr[-2000:]}")
    return verdicts


def allowed(policies: list[dict[str, Any]], src: Pod, dst: Pod, port: int, protocol: str = "TCP") -> bool:
    """Whether a connection from `src` to `dst` on `port` gets through: the source's egress and the target's ingress."""
    return judge(policies, [(src, dst, port, protocol)])[0]
