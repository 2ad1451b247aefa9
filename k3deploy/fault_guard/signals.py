"""What marks a tray sick, read from the objects as the API server sends them (pure: plain dicts in, words out).

Three documented inputs, each with its source:
- a Node condition of a configured type whose status is "True" (NVSentinel's health monitors, or
  node-problem-detector, set them; profile/guard_spec.py DEFAULT_FAULT_CONDITIONS cites each default);
- a ComputeDomain's `status.nodes[]` entry whose `status` is not "Ready" (the NVIDIA DRA driver's ComputeDomain
  status, one entry per node running the domain's IMEX daemon: api/nvidia.com/resource/v1beta1/computedomain.go
  ComputeDomainNode.Status, "Ready" or "NotReady");
- a leader whose /health fails while every pod of its group is Running and started (its startup probe passed), so
  a model still loading is never taken for a fault: as the kubelet sees it, the leader's readiness probe (GET
  /health, templates/leaderworkerset.yaml.j2) failing, its Ready condition False. The kubelet probes from the
  node, so no network policy or API-server proxy stands between guard and the answer.
"""

from __future__ import annotations

from collections.abc import Iterable

from k3deploy.kobject import KubeObject

#: The annotations guard leaves on a node it cordons: when (RFC 3339, UTC), why, and by whom.
CORDONED_AT = "k3deploy/guard-cordoned-at"
CORDON_REASON = "k3deploy/guard-reason"
CORDONED_BY = "k3deploy/guard-cordoned-by"
#: The ComputeDomain API of the NVIDIA DRA driver.
CD_API = "resource.nvidia.com/v1beta1"
#: The Ready value of a ComputeDomain node entry (computedomain.go ComputeDomainStatusReady).
CD_NODE_READY = "Ready"


def condition_faults(node: KubeObject, types: Iterable[str]) -> list[str]:
    """The node's conditions of `types` whose status is "True", each as `Type: reason: message`."""
    wanted = set(types)
    out = []
    for cond in (node.get("status") or {}).get("conditions") or []:
        if cond.get("type") in wanted and str(cond.get("status")) == "True":
            detail = ": ".join(str(part) for part in (cond.get("reason"), cond.get("message")) if part)
            out.append(f"{cond['type']}: {detail}" if detail else str(cond["type"]))
    return sorted(out)


def compute_domain_faults(domains: Iterable[KubeObject]) -> dict[str, list[str]]:
    """Node name -> `ComputeDomain NAME reports the node STATUS`, for every status.nodes entry not Ready."""
    out: dict[str, list[str]] = {}
    for cd in domains:
        name = (cd.get("metadata") or {}).get("name", "?")
        for entry in (cd.get("status") or {}).get("nodes") or []:
            status = entry.get("status") or "no status"
            if entry.get("name") and status != CD_NODE_READY:
                out.setdefault(entry["name"], []).append(f"ComputeDomain {name} reports the node {status}")
    return out


def group_started(pods: Iterable[KubeObject]) -> bool:
    """Every pod Running, not being deleted, and every container of it started (startup probe passed)."""
    listed = list(pods)
    if not listed:
        return False
    for pod in listed:
        if (pod.get("metadata") or {}).get("deletionTimestamp"):
            return False
        status = pod.get("status") or {}
        if status.get("phase") != "Running":
            return False
        containers = status.get("containerStatuses") or []
        if not containers or not all(c.get("started") is True for c in containers):
            return False
    return True


def leader_unready(pods: Iterable[KubeObject], leader: str) -> bool:
    """The group is started (`group_started`) and its leader pod `leader` reports Ready False."""
    listed = list(pods)
    if not group_started(listed):
        return False
    for pod in listed:
        if (pod.get("metadata") or {}).get("name") == leader:
            conditions = {c.get("type"): c.get("status") for c in (pod.get("status") or {}).get("conditions") or []}
            return conditions.get("Ready") == "False"
    return False


def unschedulable(pods: Iterable[KubeObject]) -> bool:
    """Some pod (not being deleted) is not scheduled and the scheduler says why: PodScheduled False, Unschedulable."""
    for pod in pods:
        if (pod.get("metadata") or {}).get("deletionTimestamp") or (pod.get("spec") or {}).get("nodeName"):
            continue
        for cond in (pod.get("status") or {}).get("conditions") or []:
            scheduled = (cond.get("type"), cond.get("status"), cond.get("reason"))
            if scheduled == ("PodScheduled", "False", "Unschedulable"):
                return True
    return False


def cordoned(node: KubeObject) -> bool:
    """The node is marked unschedulable (cordoned by anyone: guard, NVSentinel, a person)."""
    return bool((node.get("spec") or {}).get("unschedulable"))
