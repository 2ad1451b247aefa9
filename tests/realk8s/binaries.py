"""Where .ci/build-realk8s put the plane's binaries (and the CRDs, KWOK Stages and LWS webhook manifests it copied
from the built versions' modules)."""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
BUILD_SCRIPT = REPO_ROOT / ".ci" / "build-realk8s"
NODES_SCRIPT = REPO_ROOT / ".ci" / "realnodes"
NAMES = ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok", "lws-controller")


class BinariesMissing(RuntimeError):
    """The plane's binaries are not built (run .ci/build-realk8s)."""


@dataclass(frozen=True)
class Binaries:
    """The build directory: `path(name)` of each binary, `versions` as the build recorded them."""

    directory: Path

    def path(self, name: str) -> str:
        """The absolute path of binary `name`."""
        return str(self.directory / name)

    @property
    def versions(self) -> dict[str, str]:
        """K8S_VERSION, ETCD_VERSION, KWOK_VERSION, LWS_VERSION."""
        lines = (self.directory / "versions").read_text().splitlines()
        return dict(line.split("=", 1) for line in lines if "=" in line)


@dataclass
class NodeTools:
    """Where the binaries are: the kubelet and the device plugin stand-in (.ci/build-realk8s) and containerd, runc, CNI plugins and busybox
    (.ci/realnodes)."""

    kubelet: Path
    tools: Path

    @property
    def device_plugin(self) -> Path:
        """The GPU device plugin stand-in (tests/realk8s/plugins/device-plugin), built beside the kubelet."""
        return self.kubelet.parent / "realk8s-device-plugin"

    @property
    def dra_plugin(self) -> Path:
        """The compute-domain DRA kubelet plugin stand-in (tests/realk8s/plugins/dra-plugin), built beside the kubelet."""
        return self.kubelet.parent / "realk8s-dra-plugin"

    @property
    def busybox(self) -> Path:
        """The static busybox every local image is made of."""
        return self.tools / "bin" / "busybox"

    @property
    def ctr(self) -> Path:
        """containerd's client."""
        return self.tools / "bin" / "ctr"


def script_dir(script: Path, override: str) -> Path:
    """The folder a build script fills: the environment variable `override` when set, else what `script --print-dir`
    names for this checkout's script and Go; BinariesMissing when the script cannot be asked."""
    given = os.environ.get(override)
    if given:
        return Path(given)
    try:
        done = subprocess.run(
            ["bash", str(script), "--print-dir"], capture_output=True, text=True, timeout=60, check=True
        )
    except (OSError, subprocess.SubprocessError) as exc:
        raise BinariesMissing(f"cannot ask {script} for its directory: {exc}") from exc
    return Path(done.stdout.strip())


def build_dir() -> Path:
    """K3DEPLOY_REALK8S_BIN, else the directory the build script names for this checkout's script and Go."""
    return script_dir(BUILD_SCRIPT, "K3DEPLOY_REALK8S_BIN")


def find_binaries() -> Binaries:
    """The built plane, or BinariesMissing naming the command that builds it."""
    directory = build_dir()
    missing = [n for n in NAMES if not (directory / n).is_file()]
    if not (directory / ".complete").is_file() or missing:
        raise BinariesMissing(
            f"the real control plane is not built in {directory} (missing: {', '.join(missing) or 'build marker'}); "
            "run: bash .ci/build-realk8s"
        )
    return Binaries(directory)


def binaries_or_skip() -> Binaries:
    """The built plane for a pytest fixture: without it the test skips, and fails under CI=true (the tier must run)."""
    try:
        return find_binaries()
    except BinariesMissing as exc:
        if os.environ.get("CI") == "true":
            pytest.fail(f"realk8s tier under CI=true: {exc}", pytrace=False)
        pytest.skip(str(exc))


def node_tools(binaries: Binaries) -> NodeTools:
    """The real nodes' binaries: the kubelet from the plane's build, containerd, runc, the CNI plugins and busybox from
    .ci/realnodes (K3DEPLOY_REALK8S_NODE_TOOLS overrides its folder); BinariesMissing naming the command otherwise."""
    tools = script_dir(NODES_SCRIPT, "K3DEPLOY_REALK8S_NODE_TOOLS")
    found = NodeTools(Path(binaries.path("kubelet")), tools)
    if not all(p.is_file() for p in (found.kubelet, found.device_plugin, found.dra_plugin)):
        raise BinariesMissing(f"no kubelet or plugin stand-ins in {binaries.directory}; run: bash .ci/build-realk8s")
    if not (found.tools / "stamp").is_file():
        raise BinariesMissing(
            f"containerd, runc and the CNI plugins are not unpacked in {tools}; run: bash .ci/realnodes"
        )
    return found
