"""`python -m tests.realk8s`: a plane anyone can start; READY with its URL, an admin kubeconfig that works, every
serving leader pod's port forwarded to this machine with --forward-pod-port, and on SIGTERM every process it started
is gone."""

from __future__ import annotations

import base64
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import psutil
import pytest
import yaml

from k3deploy.kube.options import KubeOptions
from k3deploy.kube.portforward import PodPortForward
from tests.realk8s.binaries import REPO_ROOT, BinariesMissing, find_binaries
from tests.realk8s.client import Api, resource_path, wait_until
from tests.smoke.scripted_server import Script, scripted_server

pytestmark = [pytest.mark.realk8s, pytest.mark.timeout(300)]


@pytest.fixture
def leader_server() -> Iterator[Any]:
    """The scripted vLLM-like server the launcher forwards the leaders' port to."""
    with scripted_server(Script()) as server:
        yield server


def test_the_launcher_prints_ready_serves_and_stops_everything_on_sigterm(
    realk8s: object, tmp_path: Path, leader_server: Any
) -> None:  # realk8s: the binaries are there (the fixture fails or skips otherwise)
    kubeconfig = tmp_path / "kubeconfig"
    address = httpx.URL(leader_server.url)
    launcher = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tests.realk8s",
            "--kubeconfig",
            str(kubeconfig),
            "--gb300-nodes",
            "2",
            "--cliques",
            "1",
            "--forward-pod-port",
            f"8000={address.host}:{address.port}",
        ],
        cwd=REPO_ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert launcher.stdout is not None
        line = launcher.stdout.readline()
        assert line.startswith("READY https://127.0.0.1:"), launcher.stderr.read() if launcher.stderr else line
        url = line.split()[1]
        config = yaml.safe_load(kubeconfig.read_text())
        assert config["clusters"][0]["cluster"]["server"] == url
        children = psutil.Process(launcher.pid).children(recursive=True)
        names = sorted(p.name() for p in children)
        assert names == sorted(
            ["etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok", "lws-controller"]
        )
        ca = tmp_path / "ca.crt"
        ca.write_bytes(base64.b64decode(config["clusters"][0]["cluster"]["certificate-authority-data"]))
        api = Api(url, config["users"][0]["user"]["token"], ca)
        try:
            nodes = api.get("/api/v1/nodes")["items"]
            gpu = [n for n in nodes if n["metadata"]["labels"].get("nvidia.com/gpu.product") == "NVIDIA-GB300"]
            assert len(gpu) == 2
            # A leader pod appears: the launcher forwards its port 8000 to the scripted server, and a port-forward
            # through kube-apiserver (k3deploy's own client) reaches that server.
            api.create("/api/v1/namespaces/default/pods", _leader_pod("leader-0"))
            path = resource_path("kwok.x-k8s.io/v1alpha1", "portforwards", "default", "leader-0")
            made = wait_until("the launcher's PortForward", lambda: api.find(path), 60)
            assert made["spec"]["forwards"] == [
                {"ports": [8000], "target": {"address": address.host, "port": address.port}}
            ]
            options = KubeOptions(kubeconfig=str(kubeconfig))
            with PodPortForward(options, "default", "leader-0", 8000) as forward:
                models = httpx.get(f"{forward.url}/v1/models", timeout=30).json()
            assert [m["id"] for m in models["data"]] == ["rehearsal-llama-tiny"]
        finally:
            api.close()
        launcher.send_signal(signal.SIGTERM)
        assert launcher.wait(timeout=60) == 0
        assert not [p for p in children if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]
    finally:
        if launcher.poll() is None:
            launcher.kill()
            launcher.wait(timeout=30)


def _leader_pod(name: str) -> dict:
    """A pod labelled as an LWS leader, placed on a CPU node (KWOK runs it)."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": {"leaderworkerset.sigs.k8s.io/worker-index": "0"}},
        "spec": {"nodeName": "cpu-01", "containers": [{"name": "vllm", "image": "vllm/vllm-openai:test"}]},
    }


def test_the_launcher_refuses_a_malformed_forward() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "tests.realk8s", "--kubeconfig", "/dev/null", "--forward-pod-port", "8000:9000"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert done.stderr.splitlines()[0] == "error: --forward-pod-port '8000:9000' is not PORT=HOST:PORT"
    assert done.stderr.splitlines()[1].startswith("hint: ")


def test_the_launcher_refuses_more_cliques_than_nodes() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "tests.realk8s", "--kubeconfig", "/dev/null", "--gb300-nodes", "2", "--cliques", "3"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert done.stderr.splitlines()[0].startswith("error: ")
    assert done.stderr.splitlines()[1].startswith("hint: ")


def test_the_launcher_without_the_upstream_crds_says_so_in_one_line(tmp_path: Path) -> None:
    """A clone with nothing beside it and no fetched CRDs: exit 3 at once with `error:` + `hint:` naming
    .ci/fetch-crds, not a start-up that times out waiting for the DRA stand-in's first pass."""
    env = {**os.environ, "K3DEPLOY_TEST_CRDS": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-m", "tests.realk8s", "--kubeconfig", str(tmp_path / "kubeconfig")],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 3, done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 2, done.stderr
    assert (
        lines[0].startswith("error: the upstream CRDs are not in ") and "resource.nvidia.com_computedomains" in lines[0]
    )
    assert lines[1].startswith("hint: bash .ci/fetch-crds")
    assert not (tmp_path / "kubeconfig").exists()


def test_find_binaries_names_the_build_command(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("K3DEPLOY_REALK8S_BIN", str(tmp_path))
    with pytest.raises(BinariesMissing, match=r"run: bash \.ci/build-realk8s"):
        find_binaries()
