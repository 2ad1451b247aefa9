"""The files a real node (tests/realk8s/realnode.py) starts from, as pure functions of its paths: containerd's
config, the CNI network, the kubelet's KubeletConfiguration and the shell script that sets up the node's namespaces.

What each setting avoids is said where it is set; the host side effects they keep inside the node's own mount and
network namespace are the kubelet's sysctl rewrites (pkg/kubelet/cm/container_manager_linux.go `setupKernelTunables`),
the bridge plugin's `net.ipv4.ip_forward` and the directories kubelet, containerd and CNI write by fixed path."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

#: The sysctls the kubelet sets when they differ (pkg/util/sysctl: the kubelet's defaults), faked in the node's mount
#: namespace by files that already hold the kubelet's values, so it reads what it wants and writes nothing.
KUBELET_SYSCTLS = {
    "vm/overcommit_memory": "1",
    "vm/panic_on_oom": "0",
    "kernel/panic": "10",
    "kernel/panic_on_oops": "1",
    "kernel/keys/root_maxkeys": "1000000",
    "kernel/keys/root_maxbytes": "25000000",
}
#: The directories written by fixed path (kubelet: /var/lib/kubelet, /var/log/pods, /var/log/containers; containerd:
#: /run/containerd and its shims' sockets, /var/run/netns; CNI: /var/lib/cni), each bound over by a folder of the
#: node's inside its mount namespace.
BOUND_DIRS = {"/run": "run", "/var/lib": "var-lib", "/var/log": "var-log"}
#: The image every pod sandbox runs (containerd's `sandbox_image`), written locally (tests/realk8s/ociimage.py).
PAUSE_IMAGE = "registry.k8s.io/pause:3.10.1"
#: Pod addresses: one bridge per node, inside the node's network namespace, with no route out of it.
POD_SUBNET = "10.88.0.0/24"
POD_GATEWAY = "10.88.0.1"


def containerd_config(node_dir: Path, tools: Path) -> str:
    """containerd 1.6's config (version 2) with its root, state and sockets under `node_dir`."""
    disabled = [
        "io.containerd.snapshotter.v1.aufs",
        "io.containerd.snapshotter.v1.btrfs",
        "io.containerd.snapshotter.v1.zfs",
        "io.containerd.snapshotter.v1.devmapper",
        # It writes /opt/containerd on the host.
        "io.containerd.internal.v1.opt",
        "io.containerd.tracing.processor.v1.otlp",
    ]
    cri = 'plugins."io.containerd.grpc.v1.cri"'
    return f"""version = 2
root = "{node_dir / "containerd" / "root"}"
state = "{node_dir / "containerd" / "state"}"
disabled_plugins = {json.dumps(disabled)}

[grpc]
  address = "{node_dir / "containerd.sock"}"
[ttrpc]
  address = "{node_dir / "containerd.sock.ttrpc"}"
[metrics]
  address = ""

[{cri}]
  sandbox_image = "{PAUSE_IMAGE}"
  # Root here lacks CAP_SYS_RESOURCE: without this every sandbox fails (`can't get final child's PID from pipe`).
  restrict_oom_score_adj = true
  enable_selinux = false
  disable_apparmor = true
[{cri}.cni]
  bin_dir = "{tools / "cni"}"
  conf_dir = "{node_dir / "cni"}"
[{cri}.containerd]
  snapshotter = "overlayfs"
  default_runtime_name = "runc"
[{cri}.containerd.runtimes.runc]
  runtime_type = "io.containerd.runc.v2"
[{cri}.containerd.runtimes.runc.options]
  BinaryName = "{tools / "bin" / "runc"}"
  SystemdCgroup = false
# The handler of the serving pods' RuntimeClass `nvidia` (the NVIDIA Container Toolkit's runtime wraps runc; with
# no GPU there is nothing for it to add).
[{cri}.containerd.runtimes.nvidia]
  runtime_type = "io.containerd.runc.v2"
[{cri}.containerd.runtimes.nvidia.options]
  BinaryName = "{tools / "bin" / "runc"}"
  SystemdCgroup = false
"""


def cni_config(node_dir: Path) -> str:
    """The pod network: a bridge with the node's side as the gateway, no default route and no masquerade."""
    bridge = {
        "type": "bridge",
        "bridge": "realk8s0",
        "isGateway": True,
        "ipMasq": False,
        "hairpinMode": True,
        "ipam": {
            "type": "host-local",
            "ranges": [[{"subnet": POD_SUBNET}]],
            "dataDir": str(node_dir / "cni-ipam"),
        },
    }
    return json.dumps({"cniVersion": "1.0.0", "name": "realk8s", "plugins": [bridge]}, indent=2)


def kubelet_config(node_dir: Path, port: int, cgroup_root: str, ca_file: Path, taint_key: str) -> str:
    """The KubeletConfiguration: serving on 127.0.0.1:`port` in the node's namespace with a certificate of the plane's
    CA, clients authenticated by that CA and authorised by kube-apiserver (Webhook), pods' cgroups under
    `cgroup_root`, every new pod tainted away unless it tolerates `taint_key`."""
    config = {
        "apiVersion": "kubelet.config.k8s.io/v1beta1",
        "kind": "KubeletConfiguration",
        "address": "127.0.0.1",
        "port": port,
        "readOnlyPort": 0,
        "healthzBindAddress": "127.0.0.1",
        "healthzPort": 10248,
        "tlsCertFile": str(node_dir / "pki" / "kubelet.crt"),
        "tlsPrivateKeyFile": str(node_dir / "pki" / "kubelet.key"),
        "authentication": {
            "anonymous": {"enabled": False},
            "webhook": {"enabled": True},
            "x509": {"clientCAFile": str(ca_file)},
        },
        "authorization": {"mode": "Webhook"},
        "cgroupDriver": "cgroupfs",
        "cgroupRoot": cgroup_root,
        "containerRuntimeEndpoint": f"unix://{node_dir / 'containerd.sock'}",
        "failSwapOn": False,
        "makeIPTablesUtilChains": False,
        "resolvConf": "",
        # The resolver of tests/realk8s/clusterdns.py, on the bridge's (gateway) address in the node's namespace.
        "clusterDNS": [POD_GATEWAY],
        "clusterDomain": "cluster.local",
        # The machine is shared: nothing a pod of the tier uses is worth evicting it for, nor its images.
        "evictionHard": {"memory.available": "1Mi", "nodefs.available": "1%", "imagefs.available": "1%"},
        "imageGCHighThresholdPercent": 100,
        "imageGCLowThresholdPercent": 99,
        "registerWithTaints": [{"key": taint_key, "value": "true", "effect": "NoSchedule"}],
        "nodeStatusUpdateFrequency": "2s",
        "syncFrequency": "5s",
        "fileCheckFrequency": "5s",
        "serializeImagePulls": False,
    }
    return yaml.safe_dump(config, sort_keys=False)


def setup_script() -> str:
    """The node's PID 1 (run by `unshare --mount --net --pid --fork --mount-proc`, so every process of the node,
    containers included, dies with it): loopback up, the fixed-path directories and faked sysctls bound over inside
    the node's mount namespace, containerd, then the kubelet and, if $DEVICE_PLUGIN and $DRA_PLUGIN name them, the GPU
    device plugin and compute-domain DRA kubelet plugin stand-ins (tests/realk8s/plugins); then it reaps orphans (the runc shims) until SIGTERM.
    Arguments: NODE_DIR TOOLS_DIR KUBELET KUBELET_ARGS..."""
    binds = "\n".join(f'mount --bind "$D/fs/{name}" {path}' for path, name in BOUND_DIRS.items())
    sysctls = "\n".join(f'mount --bind "$D/sysctl/{key.replace("/", ".")}" /proc/sys/{key}' for key in KUBELET_SYSCTLS)
    return f"""#!/bin/sh
set -eu
D=$1 TOOLS=$2 KUBELET=$3
shift 3
ip link set lo up
{binds}
{sysctls}
export PATH="$TOOLS/bin:$PATH"
containerd --config "$D/containerd.toml" >>"$D/logs/containerd.log" 2>&1 &
i=0
until [ -S "$D/containerd.sock" ]; do
  i=$((i + 1))
  [ $i -lt 600 ] || {{ echo "containerd did not open its socket" >&2; exit 1; }}
  sleep 0.1
done
"$KUBELET" "$@" >>"$D/logs/kubelet.log" 2>&1 &
if [ -n "${{DEVICE_PLUGIN:-}}" ]; then
  "$DEVICE_PLUGIN" --plugin-dir=/var/lib/kubelet/device-plugins >>"$D/logs/device-plugin.log" 2>&1 &
fi
if [ -n "${{DRA_PLUGIN:-}}" ]; then
  "$DRA_PLUGIN" --node-name="$NODE_NAME" --kubeconfig="$D/kubelet.kubeconfig" \
    --registrar-dir=/var/lib/kubelet/plugins_registry --plugin-dir=/var/lib/kubelet/plugins/compute-domain.nvidia.com \
    >>"$D/logs/dra-plugin.log" 2>&1 &
fi
exec python3 -c '
import os, signal, sys
signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
while True:
    try:
        os.waitpid(-1, 0)
    except ChildProcessError:
        signal.pause()
'
"""
