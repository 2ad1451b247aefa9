"""The ports a vLLM group uses between its pods, and who may reach the API port: what the NetworkPolicies open. Pure.

What a multi-node group (`--nnodes N`, workers `--headless`, the multiprocessing executor) listens on, from vLLM
0.32's own code:

- the torch.distributed rendezvous (a TCPStore) on the leader at `--master-port`, default 29501
  (vllm/config/parallel.py ParallelConfig.master_port; vllm/distributed/parallel_state.py
  init_distributed_environment builds `tcp://master_addr:master_port` when nnodes > 1);
- the executor's message queues across nodes: ZeroMQ XPUB sockets bound to `tcp://<pod IP>:0` on every node
  (vllm/distributed/device_communicators/shm_broadcast.py MessageQueue, created by
  vllm/v1/executor/multiproc_executor.py for the scheduler broadcast and the workers' responses);
- the gloo (CPU) process groups and NCCL's bootstrap and socket transport, which listen on port 0.

Everything but the master port is thus a kernel-chosen ephemeral port. A NetworkPolicy cannot name "whatever
port the kernel picked", so the serving pods pin the ephemeral range with the namespaced, Kubernetes-"safe"
sysctl `net.ipv4.ip_local_port_range` (allowed by the baseline and restricted Pod Security Standards), and the
policy opens exactly the master port plus that range between the group's pods. GPU traffic over NVLink (CUDA
IPC, IMEX fabric handles) and RDMA verbs is not IP traffic and is not subject to NetworkPolicy.
"""

from __future__ import annotations

from k3deploy.errors import ProfileError
from k3deploy.kobject import KubeObject
from k3deploy.profile.model import Profile
from k3deploy.render.argv import spans_nodes

#: vLLM's default `--master-port` (vllm/config/parallel.py ParallelConfig.master_port).
VLLM_DEFAULT_MASTER_PORT = 29501
#: The ephemeral port range the serving pods pin (Linux's default, net.ipv4.ip_local_port_range): every port a
#: vLLM process binds with port 0 comes from it.
EPHEMERAL_PORTS = (32768, 60999)
#: The sysctl that pins it (namespaced per pod; a "safe" sysctl the kubelet allows without configuration).
EPHEMERAL_SYSCTL = "net.ipv4.ip_local_port_range"
#: Label the API server sets on every namespace (Kubernetes >= 1.22): what a namespaceSelector names one by.
NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"
#: Port of the cluster DNS (kube-dns, CoreDNS, NodeLocal DNSCache), UDP and TCP.
DNS_PORT = 53


def master_port(profile: Profile) -> int:
    """The torch.distributed master port the group uses: `--master-port` from vllm.extra_args, else vLLM's default."""
    args = list(profile.vllm.extra_args)
    for index, arg in enumerate(args):
        value = args[index + 1] if arg == "--master-port" and index + 1 < len(args) else None
        if arg.startswith("--master-port="):
            value = arg.split("=", 1)[1]
        if value is None:
            continue
        if not value.isdigit() or not 0 < int(value) < 65536:
            raise ProfileError(
                f"vllm.extra_args: --master-port {value!r} is not a TCP port",
                hint="give --master-port a number from 1 to 65535, or leave it to vLLM (29501)",
            )
        return int(value)
    return VLLM_DEFAULT_MASTER_PORT


def pins_ephemeral_ports(profile: Profile) -> bool:
    """True when the serving pods pin their ephemeral range: NetworkPolicies on and a group that spans nodes."""
    return profile.kubernetes.network_policy and spans_nodes(profile)


def ephemeral_sysctls(profile: Profile) -> list[dict[str, str]]:
    """The serving pods' securityContext.sysctls (empty when nothing needs pinning)."""
    if not pins_ephemeral_ports(profile):
        return []
    low, high = EPHEMERAL_PORTS
    return [{"name": EPHEMERAL_SYSCTL, "value": f"{low} {high}"}]


def group_ports(profile: Profile) -> list[KubeObject]:
    """NetworkPolicy ports open between a group's pods: the master port and the pinned ephemeral range (TCP).

    Empty for a single-node group: its ranks talk over loopback and shared memory inside one pod.
    """
    if not spans_nodes(profile):
        return []
    low, high = EPHEMERAL_PORTS
    return [
        {"protocol": "TCP", "port": master_port(profile)},
        {"protocol": "TCP", "port": low, "endPort": high},
    ]


def api_namespaces(profile: Profile) -> list[str]:
    """Other namespaces whose pods may reach the API port: kubernetes.api_namespaces, the gateway's (its proxies
    forward to the leaders) and the monitoring namespace."""
    kube = profile.kubernetes
    names = set(kube.api_namespaces)
    for extra in (kube.monitoring_namespace, kube.gateway_namespace):
        if extra is not None:
            names.add(extra)
    names.discard(kube.namespace)
    return sorted(names)
