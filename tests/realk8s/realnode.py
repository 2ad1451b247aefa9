"""A real kubelet node beside the plane's KWOK nodes: containerd 1.6 and a kubelet v1.34 in a mount, network and PID
namespace of their own (tests/realk8s/nodefiles.py), joined to the plane with a `system:node:<name>` client
certificate, tainted and labelled so only pods that ask land on it.

kube-apiserver reaches the kubelet, and the kubelet kube-apiserver, through loopback relays (tests/realk8s/nsrelay.py).
The kubelet runs with `--cloud-provider=external`, so it leaves the node's addresses to a cloud controller; this
module plays that part (as cloud-provider's node controller does, staging/src/k8s.io/cloud-provider/controllers/node/
node_controller.go): it sets InternalIP 127.0.0.1, where the relay to the kubelet listens, and lifts the
`node.cloudprovider.kubernetes.io/uninitialized` taint. A kubelet with `--node-ip` would refuse a loopback address.

What is left on the host while a node runs is its cgroup under each v1 hierarchy and its folder; both are removed
on stop, and by `sweep()` at the next start after a SIGKILL of the process that started it (whose death kills the
node: `setpriv --pdeathsig` and `unshare --kill-child`)."""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.realk8s import nodefiles
from tests.realk8s.binaries import NodeTools
from tests.realk8s.certs import CertAuthority
from tests.realk8s.client import Api, wait_until
from tests.realk8s.clusterdns import ClusterDns
from tests.realk8s.nsrelay import Relay
from tests.realk8s.ociimage import PAUSE_COMMAND, Image, write_archive
from tests.realk8s.procs import Process, free_port

#: Taint and label of every real node: a pod lands there only if it tolerates the taint (and selects the label).
REAL_NODE_KEY = "realk8s.k3deploy/real-node"
CGROUP_FS = Path("/sys/fs/cgroup")
#: One file per running node (its starter's pid and start time, its cgroup and folder), for `sweep()`.
REGISTRY = Path(tempfile.gettempdir()) / "k3deploy-realk8s-nodes"
START_TIMEOUT_S = 120.0
_UNINITIALIZED = "node.cloudprovider.kubernetes.io/uninitialized"


def _start_time(pid: int) -> str | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[1].split()[19]


def _remove_cgroups(name: str, timeout_s: float = 20.0) -> None:
    """Remove `name`'s cgroup tree under every hierarchy, deepest first, once its processes are gone."""
    deadline = time.monotonic() + timeout_s
    for hierarchy in sorted(CGROUP_FS.iterdir()):
        top = hierarchy / name
        if not top.is_dir():
            continue
        dirs = sorted((Path(d) for d, _, _ in os.walk(top)), key=lambda p: len(p.parts), reverse=True)
        for directory in dirs:
            while True:
                try:
                    directory.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.2)


def sweep() -> list[str]:
    """Stop and remove what nodes of an earlier run left (their starter was SIGKILLed): their namespace's starter
    (only if it is still the process recorded: same pid, same start time), their cgroups and folders. Returns the
    names of the nodes swept."""
    swept = []
    for entry in sorted(REGISTRY.glob("*.json")) if REGISTRY.is_dir() else []:
        record = json.loads(entry.read_text())
        pid = int(record["pid"])
        if _start_time(pid) == record["start"]:
            if pid_owner_alive(record):
                continue
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
            wait_until(f"the earlier node {record['cgroup']} to stop", lambda p=pid: _start_time(p) is None, 30)
        _remove_cgroups(record["cgroup"])
        shutil.rmtree(record["dir"], ignore_errors=True)
        entry.unlink()
        swept.append(record["cgroup"])
    return swept


def pid_owner_alive(record: dict[str, Any]) -> bool:
    """True while the process that started the recorded node still runs (its node is in use, not left behind)."""
    owner = int(record["owner"])
    return _start_time(owner) == record["owner_start"]


@dataclass
class RealNode:
    """One real node named `name` with its folder `dir`, joined to the plane at `api_port` through `api`."""

    name: str
    dir: Path
    api: Api
    api_port: int
    ca: CertAuthority
    tools: NodeTools
    images: list[Image] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.cgroup = f"realk8s-{self.name}-{secrets.token_hex(3)}"
        self.process: Process | None = None
        self.kubelet_port = 0
        self._relays: list[Relay] = []
        self._netns: int | None = None
        self.dns: ClusterDns | None = None
        self._record = REGISTRY / f"{self.cgroup}.json"

    @property
    def socket(self) -> Path:
        """containerd's socket."""
        return self.dir / "containerd.sock"

    # -- start -------------------------------------------------------------------------------------------------
    def start(self) -> RealNode:
        """Start containerd and the kubelet, import the images, wait until the node is Ready; stops on failure."""
        try:
            self._start()
        except BaseException:
            self.stop()
            raise
        return self

    def _write_files(self) -> list[str]:
        d = self.dir
        for sub in (
            "pki",
            "logs",
            "cni",
            "cni-ipam",
            "sysctl",
            "kubelet",
            *(f"fs/{n}" for n in nodefiles.BOUND_DIRS.values()),
        ):
            (d / sub).mkdir(parents=True, exist_ok=True)
        for key, value in nodefiles.KUBELET_SYSCTLS.items():
            (d / "sysctl" / key.replace("/", ".")).write_text(f"{value}\n")
        (d / "containerd.toml").write_text(nodefiles.containerd_config(d, self.tools.tools))
        (d / "cni" / "10-realk8s.conflist").write_text(nodefiles.cni_config(d))
        serving = self.ca.serving(f"kubelet-{self.name}", [self.name])
        shutil.move(serving.cert, d / "pki" / "kubelet.crt")
        shutil.move(serving.key, d / "pki" / "kubelet.key")
        client = self.ca.client(f"node-{self.name}", f"system:node:{self.name}", ["system:nodes"])
        kubeconfig = d / "kubelet.kubeconfig"
        kubeconfig.write_text(
            json.dumps(
                {
                    "apiVersion": "v1",
                    "kind": "Config",
                    "clusters": [
                        {
                            "name": "realk8s",
                            "cluster": {
                                "server": f"https://127.0.0.1:{self.api_port}",
                                "certificate-authority": str(self.ca.cert_file),
                            },
                        }
                    ],
                    "users": [
                        {
                            "name": "node",
                            "user": {"client-certificate": str(client.cert), "client-key": str(client.key)},
                        }
                    ],
                    "contexts": [{"name": "realk8s", "context": {"cluster": "realk8s", "user": "node"}}],
                    "current-context": "realk8s",
                }
            )
        )
        self.kubelet_port = free_port()
        config = d / "kubelet.yaml"
        config.write_text(
            nodefiles.kubelet_config(d, self.kubelet_port, f"/{self.cgroup}", self.ca.cert_file, REAL_NODE_KEY)
        )
        script = d / "node.sh"
        script.write_text(nodefiles.setup_script())
        return [
            f"--config={config}",
            f"--kubeconfig={kubeconfig}",
            # The default, inside the node's mount namespace where it is the node's fs/var-lib/kubelet: unix socket
            # paths under it (plugin registration, DRA) must stay under 108 bytes, which the plane's folder can exceed.
            "--root-dir=/var/lib/kubelet",
            f"--cert-dir={d / 'pki'}",
            f"--hostname-override={self.name}",
            "--cloud-provider=external",
            # tests/realk8s/dra.py publishes a real node's gpu.nvidia.com and compute-domain.nvidia.com ResourceSlices
            # (whose channel claims the DRA plugin stand-in prepares) by this label. Not nvidia.com/gpu.present: a
            # GPU node without GPU Feature Discovery's labels FAILs preflight, and the real nodes join a plane that
            # later tests deploy GB300 releases on.
            f"--node-labels={REAL_NODE_KEY}=true",
            "--v=2",
        ]

    def _make_cgroups(self) -> None:
        for hierarchy in sorted(CGROUP_FS.iterdir()):
            if not (hierarchy / "cgroup.procs").exists():
                continue
            top = hierarchy / self.cgroup
            top.mkdir()
            # A new v1 cpuset is empty and takes no task until given its parent's CPUs and memory nodes.
            for knob in ("cpuset.cpus", "cpuset.mems"):
                if (hierarchy / knob).exists():
                    (top / knob).write_text((hierarchy / knob).read_text())

    def _start(self) -> None:
        sweep()
        args = self._write_files()
        REGISTRY.mkdir(exist_ok=True)
        self._make_cgroups()
        argv = [
            "setpriv",
            "--pdeathsig=KILL",
            "--",
            "unshare",
            "--mount",
            "--net",
            "--pid",
            "--fork",
            "--kill-child",
            "--mount-proc",
            "--propagation=private",
            "--",
            "sh",
            str(self.dir / "node.sh"),
            str(self.dir),
            str(self.tools.tools),
            str(self.tools.kubelet),
            *args,
        ]
        self.process = Process(f"node-{self.name}", argv, self.dir / "logs" / "node.log").start(
            {
                "DEVICE_PLUGIN": str(self.tools.device_plugin),
                "DRA_PLUGIN": str(self.tools.dra_plugin),
                "NODE_NAME": self.name,
            }
        )
        pid = self.process.pid
        assert pid is not None
        self._record.write_text(
            json.dumps(
                {
                    "pid": pid,
                    "start": _start_time(pid),
                    "owner": os.getpid(),
                    "owner_start": _start_time(os.getpid()),
                    "cgroup": self.cgroup,
                    "dir": str(self.dir),
                }
            )
        )
        self._wait("containerd's socket", self.socket.exists)
        own = os.stat("/proc/self/ns/net").st_ino
        self._wait("the node's network namespace", lambda: os.stat(f"/proc/{pid}/ns/net").st_ino != own)
        self._netns = os.open(f"/proc/{pid}/ns/net", os.O_RDONLY)
        self._relays = [
            Relay(self._netns, self.api_port, None, self.api_port),
            Relay(None, self.kubelet_port, self._netns, self.kubelet_port),
        ]
        self.dns = ClusterDns(self.api, self._netns)
        self._import_images()
        self._initialise()

    def _wait(self, what: str, probe: Any) -> None:
        process = self.process
        assert process is not None

        def checked() -> Any:
            if not process.running():
                raise RuntimeError(f"node {self.name} exited:\n{self.tail()}")
            return probe()

        try:
            wait_until(f"{what} on node {self.name}", checked, START_TIMEOUT_S)
        except TimeoutError as exc:
            raise TimeoutError(f"{exc}\n{self.tail()}") from None

    def tail(self, lines: int = 15) -> str:
        """The last lines of the node's, containerd's and the kubelet's logs."""
        out = []
        for name in ("node", "containerd", "kubelet", "device-plugin", "dra-plugin"):
            path = self.dir / "logs" / f"{name}.log"
            if path.exists():
                text = path.read_text(errors="replace").splitlines()[-lines:]
                out.append(f"--- {name}.log\n" + "\n".join(text))
        return "\n".join(out)

    def import_images(self, images: list[Image]) -> None:
        """Write `images` (with the pause image) as an OCI layout and import them into the node's containerd."""
        archive = write_archive(
            self.dir / f"images-{secrets.token_hex(3)}.tar",
            [Image(nodefiles.PAUSE_IMAGE, cmd=PAUSE_COMMAND), *images],
            self.tools.busybox,
        )
        try:
            subprocess.run(
                [
                    str(self.tools.ctr),
                    f"--address={self.socket}",
                    "--namespace=k8s.io",
                    "images",
                    "import",
                    str(archive),
                ],
                check=True,
                capture_output=True,
                timeout=120,
            )
        except subprocess.CalledProcessError as exc:
            raise RuntimeError(f"ctr images import: {exc.stderr.decode(errors='replace')}") from None
        finally:
            archive.unlink()

    def _import_images(self) -> None:
        self.import_images(self.images)

    def _initialise(self) -> None:
        path = f"/api/v1/nodes/{self.name}"
        self._wait("the kubelet to register", lambda: self.api.find(path))
        self.api.request(
            "PATCH",
            f"{path}/status",
            content=json.dumps(
                {
                    "status": {
                        "addresses": [
                            {"type": "InternalIP", "address": "127.0.0.1"},
                            {"type": "Hostname", "address": self.name},
                        ]
                    }
                }
            ),
            headers={"Content-Type": "application/merge-patch+json"},
        ).raise_for_status()

        def untainted() -> bool:
            node = self.api.get(path)
            taints = [t for t in node["spec"].get("taints", []) if t["key"] != _UNINITIALIZED]
            patch = {"metadata": {"resourceVersion": node["metadata"]["resourceVersion"]}, "spec": {"taints": taints}}
            headers = {"Content-Type": "application/merge-patch+json"}
            done = self.api.request("PATCH", path, content=json.dumps(patch), headers=headers)
            if done.status_code == 409:  # the kubelet wrote the node in between: read it again
                return False
            done.raise_for_status()
            return True

        self._wait("the uninitialized taint to be lifted", untainted)

        def ready() -> bool:
            live = self.api.get(path)
            conditions = {c["type"]: c["status"] for c in live.get("status", {}).get("conditions", [])}
            # The node lifecycle controller lifts its not-ready taint once it has seen the node Ready.
            held = [t for t in live["spec"].get("taints", []) if t["key"].startswith("node.kubernetes.io/")]
            return conditions.get("Ready") == "True" and not held

        self._wait("the node to be Ready and untainted by the node lifecycle controller", ready)

    # -- stop --------------------------------------------------------------------------------------------------
    def stop(self) -> None:
        """Delete the Node, stop every process of the node (its PID namespace dies with its first process), remove
        its cgroups, folder and record."""
        with contextlib.suppress(Exception):
            self.api.request("DELETE", f"/api/v1/nodes/{self.name}")
        for relay in self._relays:
            relay.close()
        self._relays = []
        if self.dns is not None:
            self.dns.close()
            self.dns = None
        if self.process is not None:
            self.process.stop(grace_s=10)
        if self._netns is not None:
            os.close(self._netns)
            self._netns = None
        _remove_cgroups(self.cgroup)
        shutil.rmtree(self.dir, ignore_errors=True)
        self._record.unlink(missing_ok=True)
