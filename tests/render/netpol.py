"""NetworkPolicy semantics, for judging the rendered policies by what they let through (test helper).

As the API documents it (kubernetes/api networking/v1/types.go NetworkPolicySpec, NetworkPolicyPeer,
NetworkPolicyPort) and CNIs implement it: a pod selected by no policy of a direction is open in that direction;
a selected pod admits a connection when any rule of any selecting policy admits it (policies add up). A peer's
podSelector alone means the policy's own namespace; namespaceSelector alone means every pod of the matching
namespaces; both in one peer mean those pods of those namespaces. No `from`/`to` means every peer, no `ports`
every port; `endPort` makes a range. Namespaces carry kubernetes.io/metadata.name, as the API server sets it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tests.kubeapi.selectors import match_label_selector


@dataclass(frozen=True)
class Pod:
    """A pod as policies see it: namespace and labels."""

    namespace: str
    labels: dict[str, str]


def _peer_matches(peer: dict[str, Any], policy_ns: str, pod: Pod) -> bool:
    if "ipBlock" in peer:
        return False  # pods are reached by pod IP; the rendered policies use no ipBlock
    ns_labels = {"kubernetes.io/metadata.name": pod.namespace}
    if "namespaceSelector" in peer:
        if not match_label_selector(peer["namespaceSelector"], ns_labels):
            return False
    elif pod.namespace != policy_ns:
        return False
    return "podSelector" not in peer or match_label_selector(peer["podSelector"], pod.labels)


def _port_matches(ports: list[dict[str, Any]] | None, port: int, protocol: str) -> bool:
    if not ports:
        return True
    for entry in ports:
        if entry.get("protocol", "TCP") != protocol:
            continue
        if "port" not in entry:
            return True
        low = int(entry["port"])
        if low <= port <= int(entry.get("endPort", low)):
            return True
    return False


def _selects(policy: dict[str, Any], pod: Pod, direction: str) -> bool:
    meta, spec = policy["metadata"], policy["spec"]
    types = spec.get("policyTypes") or (["Ingress", "Egress"] if "egress" in spec else ["Ingress"])
    return (
        meta["namespace"] == pod.namespace
        and direction in types
        and match_label_selector(spec["podSelector"], pod.labels)
    )


def _admits(policies: list[dict[str, Any]], pod: Pod, peer: Pod, port: int, protocol: str, direction: str) -> bool:
    selecting = [p for p in policies if _selects(p, pod, direction)]
    if not selecting:
        return True
    key, peers_key = ("ingress", "from") if direction == "Ingress" else ("egress", "to")
    for policy in selecting:
        for rule in policy["spec"].get(key) or []:
            peers = rule.get(peers_key)
            if peers is not None and not any(_peer_matches(p, policy["metadata"]["namespace"], peer) for p in peers):
                continue
            if _port_matches(rule.get("ports"), port, protocol):
                return True
    return False


def allowed(policies: list[dict[str, Any]], src: Pod, dst: Pod, port: int, protocol: str = "TCP") -> bool:
    """Whether a connection from `src` to `dst` on `port` gets through: the source's egress and the target's ingress."""
    return _admits(policies, src, dst, port, protocol, "Egress") and _admits(
        policies, dst, src, port, protocol, "Ingress"
    )
