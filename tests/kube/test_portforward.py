"""kube/portforward.py's failures, bounded and translated: an API server that refuses the connection, one that
accepts and never answers the upgrade, and a refused upgrade's status read from the library's wrapped exception.
The forward itself runs through a real kube-apiserver in tests/realk8s (test_launcher.py, test_forward.py)."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from k3deploy.errors import EXIT_ENVIRONMENT, ForwardFailed
from k3deploy.kube.options import KubeOptions
from k3deploy.kube.portforward import PodPortForward, _handshake_status


def _kubeconfig(path: Path, port: int) -> KubeOptions:
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {"name": "c", "cluster": {"server": f"https://127.0.0.1:{port}", "insecure-skip-tls-verify": True}}
        ],
        "users": [{"name": "u", "user": {"token": "t"}}],
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
        "current-context": "c",
    }
    path.write_text(yaml.safe_dump(config))
    return KubeOptions(kubeconfig=str(path))


@pytest.fixture
def silent_port() -> Iterator[int]:
    """A port that accepts connections (the kernel's backlog) and never answers."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(8)
        yield int(sock.getsockname()[1])


def test_an_api_server_that_never_answers_the_upgrade_is_bounded(tmp_path: Path, silent_port: int) -> None:
    options = _kubeconfig(tmp_path / "kubeconfig", silent_port)
    started = time.monotonic()
    with pytest.raises(ForwardFailed, match=r"did not complete the upgrade within 1s") as caught:
        PodPortForward(options, "ns", "p-0", 8000, open_timeout_s=1).open()
    assert time.monotonic() - started < 30
    assert caught.value.exit_code == EXIT_ENVIRONMENT
    assert caught.value.message.startswith("port-forward to pod/ns/p-0:8000: ")


def test_a_refused_connection_is_an_environment_failure(tmp_path: Path) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = int(sock.getsockname()[1])
    with pytest.raises(ForwardFailed) as caught:
        PodPortForward(_kubeconfig(tmp_path / "kubeconfig", port), "ns", "p-0", 8000).open()
    assert caught.value.status == 0 and caught.value.exit_code == EXIT_ENVIRONMENT
    assert "refused" in caught.value.message.lower()


def test_the_status_of_a_refused_upgrade_is_read_through_the_librarys_wrapping() -> None:
    class BadStatus(Exception):
        status_code = 403
        resp_body = b'{"kind":"Status","message":"pods \\"p-0\\" is forbidden: User \\"u\\" cannot get resource"}'

    try:
        try:
            raise BadStatus("Handshake status 403 Forbidden")
        except BadStatus as inner:
            raise RuntimeError(str(inner)) from None  # as ws_client.portforward_call wraps it (context kept)
    except RuntimeError as wrapped:
        assert wrapped.__context__ is not None
        assert _handshake_status(wrapped) == (403, 'pods "p-0" is forbidden: User "u" cannot get resource')
    assert _handshake_status(ValueError("no status")) == (0, "")
