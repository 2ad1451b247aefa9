"""`python -m tests.realk8s`: a plane anyone can start; READY with its URL, an admin kubeconfig that works, and on
SIGTERM every process it started is gone."""

from __future__ import annotations

import base64
import signal
import subprocess
import sys
from pathlib import Path

import psutil
import pytest
import yaml

from tests.realk8s.binaries import REPO_ROOT, BinariesMissing, find_binaries
from tests.realk8s.client import Api

pytestmark = [pytest.mark.realk8s, pytest.mark.timeout(300)]


def test_the_launcher_prints_ready_serves_and_stops_everything_on_sigterm(
    realk8s: object, tmp_path: Path
) -> None:  # realk8s: the binaries are there (the fixture fails or skips otherwise)
    kubeconfig = tmp_path / "kubeconfig"
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
        finally:
            api.close()
        gpu = [n for n in nodes if n["metadata"]["labels"].get("nvidia.com/gpu.product") == "NVIDIA-GB300"]
        assert len(gpu) == 2
        launcher.send_signal(signal.SIGTERM)
        assert launcher.wait(timeout=60) == 0
        assert not [p for p in children if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]
    finally:
        if launcher.poll() is None:
            launcher.kill()
            launcher.wait(timeout=30)


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


def test_find_binaries_names_the_build_command(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("K3DEPLOY_REALK8S_BIN", str(tmp_path))
    with pytest.raises(BinariesMissing, match=r"run: bash \.ci/build-realk8s"):
        find_binaries()
