"""KubeApi's looks (kube/api.py `look`, `server_version`, `served_resources`, `can_i`) and preflight's reads made
of them (preflight/cluster.py), against a scripted API server: the paths and queries they send, no API discovery,
one retry, 404 and a RuntimeClass's 403 as None, and each connection quoting its own last answer. The same reads
against a real API server: tests/realk8s/test_preflight.py and tests/realk8s/preflight/."""

from __future__ import annotations

import http.server
import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from k3deploy.errors import EnvironmentProblem, KubeError
from k3deploy.kube.api import LOOK_ATTEMPTS, KubeApi, rest_path
from k3deploy.kube.client import KubeOptions
from k3deploy.preflight import cluster
from tests.support.kubeconfig import write_kubeconfig

STORAGE_CLASSES = {
    "items": [
        {"metadata": {"name": "slow"}, "provisioner": "nfs"},
        {
            "metadata": {"name": "fast", "annotations": {"storageclass.kubernetes.io/is-default-class": "true"}},
            "provisioner": "csi.example",
        },
    ]
}
DISCOVERY = {
    "/apis": {
        "groups": [
            {"name": "leaderworkerset.x-k8s.io", "versions": [{"groupVersion": "leaderworkerset.x-k8s.io/v1"}]},
            {"name": "apps", "versions": [{"groupVersion": "apps/v1"}]},
        ]
    },
    "/apis/leaderworkerset.x-k8s.io/v1": {
        "resources": [{"name": "leaderworkersets"}, {"name": "leaderworkersets/status"}]
    },
}


@dataclass
class Script:
    """What the scripted server answers by path (status, a JSON body or raw bytes), and every request it was sent."""

    answers: dict[str, tuple[int, Any]] = field(default_factory=dict)
    seen: list[tuple[str, str, Any]] = field(default_factory=list)


def _handler(script: Script) -> type[http.server.BaseHTTPRequestHandler]:
    class Handler(http.server.BaseHTTPRequestHandler):
        def _answer(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            sent = json.loads(self.rfile.read(length)) if length else None
            script.seen.append((self.command, self.path, sent))
            status, body = script.answers.get(self.path.split("?")[0], (404, {"kind": "Status", "code": 404}))
            data = body if isinstance(body, bytes) else json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "text/plain" if isinstance(body, bytes) else "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_POST = _answer

        def log_message(self, *args: object) -> None:
            pass

    return Handler


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[Script, KubeApi]]:
    script = Script()
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _handler(script))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    kubeconfig = write_kubeconfig(tmp_path / "kubeconfig", f"http://127.0.0.1:{server.server_address[1]}")
    api = KubeApi(KubeOptions(kubeconfig=str(kubeconfig)))
    yield script, api
    api.close()
    server.shutdown()
    server.server_close()


def test_rest_paths_of_the_core_group_and_of_named_groups() -> None:
    assert rest_path("v1", "nodes") == "/api/v1/nodes"
    assert rest_path("v1", "namespaces", "kimi") == "/api/v1/namespaces/kimi"
    assert rest_path("v1", "secrets", "hf", "kimi") == "/api/v1/namespaces/kimi/secrets/hf"
    assert (
        rest_path("apps/v1", "deployments", namespace="lws-system") == "/apis/apps/v1/namespaces/lws-system/deployments"
    )
    assert rest_path("node.k8s.io/v1") == "/apis/node.k8s.io/v1"


def test_preflight_reads_are_single_requests_without_discovery(served: tuple[Script, KubeApi]) -> None:
    script, api = served
    script.answers.update({path: (200, body) for path, body in DISCOVERY.items()})
    script.answers.update(
        {
            "/version": (200, {"gitVersion": "v1.34.1"}),
            "/api/v1/nodes": (200, {"items": [{"metadata": {"name": "gb300-01"}}]}),
            "/api/v1/pods": (200, {"items": []}),
            "/api/v1/namespaces/kimi": (200, {"metadata": {"labels": {"a": "b"}}}),
            "/api/v1/namespaces/kimi/secrets/hf": (200, {"data": {"token": "c2VjcmV0"}}),
            "/apis/storage.k8s.io/v1/storageclasses": (200, STORAGE_CLASSES),
            "/apis/node.k8s.io/v1/runtimeclasses/nvidia": (403, {"kind": "Status", "code": 403}),
            "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews": (200, {"status": {"allowed": True}}),
        }
    )
    assert api.server_version() == "v1.34.1"
    assert api.served_resources(["leaderworkerset.x-k8s.io"]) == ["leaderworkersets.leaderworkerset.x-k8s.io"]
    assert [n["metadata"]["name"] for n in cluster.nodes(api)] == ["gb300-01"]
    assert cluster.active_pods(api) == []
    assert cluster.namespace_labels(api, "kimi") == {"a": "b"}
    assert cluster.namespace_labels(api, "gone") is None
    assert cluster.secret_keys(api, "kimi", "hf") == ["token"]
    assert cluster.storage_classes(api) == (["fast", "slow"], "fast", {"slow": "nfs", "fast": "csi.example"})
    assert cluster.persistent_volume_claim(api, "kimi", "cache") is None
    assert cluster.runtime_class_exists(api, "nvidia") is None
    assert api.can_i("get", "pods", namespace="kimi", subresource="log") == (True, "")
    paths = [path for _, path, _ in script.seen]
    assert "/api/v1/pods?fieldSelector=status.phase%21%3DSucceeded%2Cstatus.phase%21%3DFailed" in paths
    # Only the asked-for group's discovery document: not /api, nor every group's (the DynamicClient's discovery).
    assert "/api" not in paths and "/apis/apps/v1" not in paths
    method, _, review = script.seen[-1]
    assert method == "POST" and review["spec"]["resourceAttributes"] == {
        "verb": "get",
        "resource": "pods",
        "group": "",
        "namespace": "kimi",
        "subresource": "log",
    }


def test_a_look_retries_once_then_fails(served: tuple[Script, KubeApi]) -> None:
    script, api = served
    script.answers["/api/v1/nodes"] = (503, {"kind": "Status", "code": 503})
    with pytest.raises(KubeError) as failed:
        cluster.nodes(api)
    assert failed.value.status == 503
    assert [path for _, path, _ in script.seen] == ["/api/v1/nodes"] * LOOK_ATTEMPTS


def test_a_connection_quotes_its_own_last_answer(served: tuple[Script, KubeApi], tmp_path: Path) -> None:
    script, api = served
    script.answers["/version"] = (200, b"version: v1.34.1")
    with pytest.raises(EnvironmentProblem) as failed:
        api.server_version()
    assert "GET /version answered text/plain, starting 'version: v1.34.1'" in failed.value.message
    # Another connection has read nothing yet: it has no answer of this one to quote.
    other = KubeApi(KubeOptions(kubeconfig=str(tmp_path / "kubeconfig")))
    try:
        assert other.client.describe_last_answer() is None
    finally:
        other.close()
