"""`python -m tests.realk8s --real-nodes N`: the launcher joins N real kubelet nodes; a pod on one is reached through
a port-forward by kube-apiserver and the kubelet (k3deploy's own client), and on SIGTERM every process is gone and
the machine is as it was."""

from __future__ import annotations

import base64
import contextlib
import json
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import httpx
import psutil
import pytest
import yaml

from k3deploy.kube.options import KubeOptions
from k3deploy.kube.portforward import PodPortForward
from tests.realk8s import hoststate, realnode
from tests.realk8s.binaries import REPO_ROOT
from tests.realk8s.client import Api, resource_path, wait_until
from tests.realk8s.standins import container, pod

pytestmark = [pytest.mark.realk8s, pytest.mark.timeout(300)]


def test_the_launcher_joins_real_nodes_that_serve_a_port_forward(realk8s: object, tmp_path: Path) -> None:
    # realk8s: the binaries are there (the fixture fails or skips otherwise)
    before = hoststate.snapshot()
    kubeconfig = tmp_path / "kubeconfig"
    argv = [sys.executable, "-m", "tests.realk8s", "--kubeconfig", str(kubeconfig), "--gb300-nodes", "1"]
    launcher = subprocess.Popen(
        [*argv, "--cliques", "1", "--real-nodes", "1"],
        cwd=REPO_ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert launcher.stdout is not None
        line = launcher.stdout.readline()
        assert line.startswith("READY https://127.0.0.1:"), launcher.stderr.read() if launcher.stderr else line
        config = yaml.safe_load(kubeconfig.read_text())
        ca = tmp_path / "ca.crt"
        ca.write_bytes(base64.b64decode(config["clusters"][0]["cluster"]["certificate-authority-data"]))
        children = psutil.Process(launcher.pid).children(recursive=True)
        api = Api(line.split()[1], config["users"][0]["user"]["token"], ca)
        try:
            node = api.get("/api/v1/nodes/real-01")
            assert {c["type"]: c["status"] for c in node["status"]["conditions"]}["Ready"] == "True"
            web = container("web", "echo served > /tmp/index.html; exec httpd -f -p 8080 -h /tmp")
            api.create(resource_path("v1", "pods", "default"), pod("web", {"containers": [web]}))
            wait_until(
                "the pod to run",
                lambda: api.get(resource_path("v1", "pods", "default", "web"))["status"].get("phase") == "Running",
                90,
            )
            with PodPortForward(KubeOptions(kubeconfig=str(kubeconfig)), "default", "web", 8080) as forward:
                assert httpx.get(f"{forward.url}/index.html", timeout=30).text == "served\n"
        finally:
            api.close()
        launcher.send_signal(signal.SIGTERM)
        assert launcher.wait(timeout=60) == 0
        assert not [p for p in children if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]
    finally:
        if launcher.poll() is None:
            launcher.kill()
            launcher.wait(timeout=30)
    assert hoststate.snapshot() == before


def test_what_a_sigkilled_launcher_left_is_swept_at_the_next_start(realk8s: object, tmp_path: Path) -> None:
    before = hoststate.snapshot()
    kubeconfig = tmp_path / "kubeconfig"
    argv = [sys.executable, "-m", "tests.realk8s", "--kubeconfig", str(kubeconfig), "--gb300-nodes", "1"]
    launcher = subprocess.Popen(
        [*argv, "--cliques", "1", "--real-nodes", "1"], cwd=REPO_ROOT, stdout=subprocess.PIPE, text=True
    )
    children: list[psutil.Process] = []
    try:
        assert launcher.stdout is not None
        assert launcher.stdout.readline().startswith("READY ")
        children = psutil.Process(launcher.pid).children(recursive=True)
        left = _plane_folders(children)
        records = [json.loads(p.read_text()) for p in realnode.REGISTRY.glob("*.json")]
        mine = [r for r in records if r["owner"] == launcher.pid]
        assert len(mine) == 1
        launcher.kill()
        launcher.wait(timeout=30)
        # The node dies with its starter (setpriv --pdeathsig, unshare --kill-child): the kubelet and containerd
        # are gone at once; its cgroups and its record are what is left.
        wait_until(
            "the node's processes to be gone",
            lambda: not [p for p in children if "unshare" in _name(p) or _name(p) in ("kubelet", "containerd")],
            30,
        )
        assert any((h / mine[0]["cgroup"]).is_dir() for h in realnode.CGROUP_FS.iterdir())
        assert mine[0]["cgroup"] in realnode.sweep()
    finally:
        if launcher.poll() is None:
            launcher.kill()
            launcher.wait(timeout=30)
        # The plane's own processes run in sessions of their own and outlive a SIGKILLed launcher: stop them by the
        # pids the launcher started.
        for child in children:
            with contextlib.suppress(psutil.NoSuchProcess):
                child.kill()
        psutil.wait_procs(children, timeout=30)
        for folder in left:
            shutil.rmtree(folder, ignore_errors=True)
    assert not any((h / mine[0]["cgroup"]).exists() for h in realnode.CGROUP_FS.iterdir())
    assert not Path(mine[0]["dir"]).exists()
    assert hoststate.snapshot() == before
    assert not [f for f in left if f.exists()]


def _plane_folders(children: list[psutil.Process]) -> list[Path]:
    """The folders the launcher's plane made (etcd's data folder, the plane's own), read from its processes'
    command lines: a SIGKILLed launcher leaves them behind."""
    folders = []
    for child in children:
        for arg in child.cmdline():
            if arg.startswith("--data-dir="):
                folders.append(Path(arg.split("=", 1)[1]))
            elif arg.startswith("--cert-dir=") and child.name() == "kube-apiserver":
                folders.append(Path(arg.split("=", 1)[1]).parent)
    assert len(folders) == 2
    return folders


def _name(process: psutil.Process) -> str:
    try:
        return process.name() if process.status() != psutil.STATUS_ZOMBIE else ""
    except psutil.NoSuchProcess:
        return ""


def test_the_launcher_refuses_a_negative_real_node_count() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "tests.realk8s", "--kubeconfig", "/dev/null", "--real-nodes", "-1"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert done.stderr.splitlines() == ["error: --real-nodes must be >= 0", "hint: e.g. --real-nodes 1"]
