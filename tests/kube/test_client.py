"""How an unreachable API server is reported: where it was dialled and why, without urllib3's internal reprs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import run_cli
from tests.integration.vllm_server import free_port
from tests.support.kubeconfig import write_kubeconfig


def test_connection_refused_names_the_address_and_the_reason_on_one_line(tmp_path: Path) -> None:
    port = free_port()
    kubeconfig = write_kubeconfig(tmp_path / "kubeconfig", f"http://127.0.0.1:{port}")
    result = run_cli("status", "-p", "kimi-k3-gb300-tp16", "--kubeconfig", str(kubeconfig))
    assert result.returncode == 3
    assert result.stderr.splitlines() == [
        f"error: discover the API: Kubernetes API unreachable at 127.0.0.1:{port}: "
        "Failed to establish a new connection: [Errno 111] Connection refused",
        "hint: check --kubeconfig/--context and that the API server is up",
    ]


def test_without_any_kubeconfig_the_pod_service_account_is_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As a Job in the cluster: no kubeconfig anywhere, the service account's token and CA, the API at the service env."""
    import kubernetes.config.incluster_config as incluster

    from k3deploy.kube.client import KubeOptions, connect

    account = tmp_path / "serviceaccount"
    account.mkdir()
    (account / "token").write_text("pod-token")
    (account / "ca.crt").write_text("not checked until a TLS handshake\n")
    # The kubelet mounts these at fixed paths; the loader reads its module constants at call time.
    monkeypatch.setattr(incluster, "SERVICE_TOKEN_FILENAME", str(account / "token"))
    monkeypatch.setattr(incluster, "SERVICE_CERT_FILENAME", str(account / "ca.crt"))
    monkeypatch.setenv("HOME", str(tmp_path))  # no ~/.kube/config
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1")
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", "443")
    api = connect(KubeOptions())
    assert api.configuration.host == "https://10.96.0.1:443"
    assert api.configuration.auth_settings()["BearerToken"]["value"] == "bearer pod-token"
    assert api.configuration.ssl_ca_cert == str(account / "ca.crt")


def test_outside_a_cluster_without_kubeconfig_is_an_environment_problem(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from k3deploy.errors import EnvironmentProblem
    from k3deploy.kube.client import KubeOptions, connect

    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    with pytest.raises(EnvironmentProblem) as info:
        connect(KubeOptions())
    assert info.value.exit_code == 3
    assert info.value.message == "no usable Kubernetes configuration: Service host/port is not set."


def test_a_webhook_the_api_server_cannot_call_is_named_with_its_controller() -> None:
    from kubernetes.client.exceptions import ApiException

    from k3deploy.kube.client import translate

    message = (
        'Internal error occurred: failed calling webhook "mleaderworkerset.kb.io": failed to call webhook: Post '
        '"https://lws-webhook-service.lws-system.svc:443/mutate?timeout=10s": dial tcp 10.96.0.9:443: connect: '
        "connection refused"
    )
    exc = ApiException(status=500, reason="Internal Server Error")
    exc.body = json.dumps({"kind": "Status", "code": 500, "reason": "InternalError", "message": message})
    error = translate(exc, "apply ns/LeaderWorkerSet/x")
    assert (
        str(error)
        == f"apply ns/LeaderWorkerSet/x: the API server could not call admission webhook mleaderworkerset.kb.io: {message}"
    )
    assert "the LWS controller" in (error.hint or "") and error.exit_code == 3
    # Still retried: the controller may be restarting.
    assert getattr(error, "transient", None) is True
