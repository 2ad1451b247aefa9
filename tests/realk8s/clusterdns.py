"""Cluster DNS for the real nodes' pods: a small resolver inside a node's network namespace, the kubelet's
`clusterDNS`, answering the records CoreDNS's kubernetes plugin answers for what the tier's pods look up (the
Kubernetes DNS specification, kubernetes/dns docs/specification.md, 2.4.1 and 2.4.2; coredns/coredns
plugin/kubernetes/kubernetes.go `findPods`/`findServices`):

- `<hostname>.<subdomain>.<namespace>.svc.<domain>`: A of the pod of that namespace with that `spec.hostname` and
  `spec.subdomain`, only if a headless Service named `subdomain` exists there (how `LWS_LEADER_ADDRESS`,
  `<lws>-<group>.<lws>.<namespace>`, resolves);
- `<service>.<namespace>.svc.<domain>`: A of the Service's cluster IP, or of its ready pods' IPs when headless.

Anything else in the cluster domain is NXDOMAIN, as CoreDNS answers it; anything outside it is REFUSED (the
tier's pods reach nothing outside this machine). Only A over UDP is served."""

from __future__ import annotations

import contextlib
import socket
import struct
import threading
from typing import Any

from tests.realk8s.client import Api
from tests.realk8s.nsrelay import entered

DOMAIN = "cluster.local"
_NOERROR, _NXDOMAIN, _REFUSED = 0, 3, 5
_TYPE_A, _CLASS_IN = 1, 1


def _question(packet: bytes) -> tuple[str, int, int, int]:
    """(name, qtype, qclass, end offset) of the first question."""
    labels, offset = [], 12
    while (length := packet[offset]) != 0:
        if length & 0xC0:
            raise ValueError("compressed name in a question")
        labels.append(packet[offset + 1 : offset + 1 + length].decode("ascii").lower())
        offset += 1 + length
    qtype, qclass = struct.unpack("!HH", packet[offset + 1 : offset + 5])
    return ".".join(labels), qtype, qclass, offset + 5


def answer(packet: bytes, addresses: list[str] | None, rcode: int) -> bytes:
    """The response to `packet` (its first question only) with `addresses` as A records and `rcode`."""
    ident, flags = struct.unpack("!HH", packet[:4])
    _, _, _, end = _question(packet)
    records = b"".join(
        struct.pack("!HHHIH", 0xC00C, _TYPE_A, _CLASS_IN, 5, 4) + socket.inet_aton(a) for a in addresses or []
    )
    # QR, the query's opcode and RD, AA; RA stays clear (this server does not recurse).
    out_flags = 0x8000 | (flags & 0x7900) | 0x0400 | rcode
    header = struct.pack("!HHHHHH", ident, out_flags, 1, len(addresses or []), 0, 0)
    return header + packet[12:end] + records


def resolve(api: Api, name: str) -> tuple[list[str] | None, int]:
    """The A records of `name` and the response code, read from the API server."""
    suffix = f".svc.{DOMAIN}"
    if not name.endswith(suffix):
        return None, _REFUSED if not name.endswith(DOMAIN) else _NXDOMAIN
    parts = name[: -len(suffix)].split(".")
    if len(parts) == 2:
        service, namespace = parts
        svc = api.find(f"/api/v1/namespaces/{namespace}/services/{service}")
        if svc is None:
            return None, _NXDOMAIN
        if svc["spec"].get("clusterIP") not in (None, "", "None"):
            return [svc["spec"]["clusterIP"]], _NOERROR
        return _pod_ips(api, namespace, svc["spec"].get("selector") or {}, None, None), _NOERROR
    if len(parts) == 3:
        hostname, subdomain, namespace = parts
        svc = api.find(f"/api/v1/namespaces/{namespace}/services/{subdomain}")
        if svc is None or svc["spec"].get("clusterIP") != "None":
            return None, _NXDOMAIN
        ips = _pod_ips(api, namespace, {}, hostname, subdomain)
        return (ips, _NOERROR) if ips else (None, _NXDOMAIN)
    return None, _NXDOMAIN


def _pod_ips(
    api: Api, namespace: str, selector: dict[str, str], hostname: str | None, subdomain: str | None
) -> list[str]:
    query = ",".join(f"{k}={v}" for k, v in selector.items())
    pods: list[dict[str, Any]] = api.get(f"/api/v1/namespaces/{namespace}/pods?labelSelector={query}")["items"]
    ips = []
    for pod in pods:
        spec, status = pod["spec"], pod.get("status", {})
        if hostname is not None and (spec.get("hostname"), spec.get("subdomain")) != (hostname, subdomain):
            continue
        if status.get("podIP"):
            ips.append(status["podIP"])
    return ips


class ClusterDns:
    """The resolver on UDP port 53 of every address of the network namespace `netns_fd`."""

    def __init__(self, api: Api, netns_fd: int) -> None:
        self.api = api
        with entered(netns_fd):
            self._sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self._sock.bind(("0.0.0.0", 53))
        self._closed = threading.Event()
        self._thread = threading.Thread(target=self._serve, name="realk8s-dns", daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._closed.is_set():
            try:
                packet, peer = self._sock.recvfrom(512)
            except OSError:
                return
            with contextlib.suppress(Exception):
                name, qtype, qclass, _ = _question(packet)
                addresses, rcode = resolve(self.api, name)
                if qtype != _TYPE_A or qclass != _CLASS_IN:
                    addresses = None
                self._sock.sendto(answer(packet, addresses, rcode), peer)

    def close(self) -> None:
        """Stop serving."""
        self._closed.set()
        with contextlib.suppress(OSError):
            self._sock.shutdown(socket.SHUT_RDWR)
        self._sock.close()
        self._thread.join(timeout=5)
