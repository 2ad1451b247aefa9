"""Each serving group's ComputeDomain state and its trays' health, as `status` shows them (pure: objects in, rows out).

The same signals guard acts on (signals.py): a tray is sick when a Node condition of `guard.fault_conditions` is
True or the ComputeDomain reports it not Ready; `cordoned` says whether anyone took it out of scheduling, and
`guard_cordoned` whether guard did (its annotation). The ComputeDomain state is the driver's own
(`status.status`, Ready or NotReady: k8s-dra-driver-gpu api/nvidia.com/resource/v1beta1/computedomain.go) with how
many of the group's trays it lists as Ready.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TypedDict

from k3deploy.fault_guard.signals import CD_NODE_READY, CORDONED_AT, compute_domain_faults, condition_faults, cordoned
from k3deploy.kobject import KubeObject
from k3deploy.lws import GROUP_INDEX_LABEL


class DomainState(TypedDict):
    """The ComputeDomain as a group sees it."""

    name: str | None
    status: str
    trays_ready: int
    trays: int


class TrayHealth(TypedDict, total=False):
    """One tray of a group: `healthy`, `sick` (with why) or `unknown`; cordoned by anyone, by guard."""

    node: str
    health: str
    faults: list[str]
    cordoned: bool | None
    guard_cordoned: bool


class GroupHealth(TypedDict):
    """One serving group: its index, its ComputeDomain's state (None without one) and its trays."""

    group: str
    compute_domain: DomainState | None
    trays: list[TrayHealth]


def _domain_state(domains: list[KubeObject], trays: list[str]) -> DomainState | None:
    """The ComputeDomain's state and how many of `trays` it lists Ready (None without a ComputeDomain)."""
    if not domains:
        return None
    cd = domains[0]
    status = cd.get("status") or {}
    entries = {e.get("name"): e.get("status") for e in status.get("nodes") or [] if e.get("name")}
    return {
        "name": (cd.get("metadata") or {}).get("name"),
        "status": status.get("status") or "Unknown",
        "trays_ready": sum(1 for t in trays if entries.get(t) == CD_NODE_READY),
        "trays": len(trays),
    }


def group_health(
    pods: Iterable[KubeObject],
    nodes: Mapping[str, KubeObject | None],
    domains: Iterable[KubeObject],
    fault_conditions: Iterable[str],
) -> list[GroupHealth]:
    """One row per group of `pods` (by group index): its ComputeDomain state and each of its trays' health; a tray
    whose Node could not be read is `unknown`."""
    listed_domains = list(domains)
    types = list(fault_conditions)
    cd_faults = compute_domain_faults(listed_domains)
    by_group: dict[str, set[str]] = {}
    for pod in pods:
        index = ((pod.get("metadata") or {}).get("labels") or {}).get(GROUP_INDEX_LABEL)
        node = (pod.get("spec") or {}).get("nodeName")
        if index is not None:
            placed = by_group.setdefault(index, set())
            if node:
                placed.add(node)
    rows: list[GroupHealth] = []
    for index in sorted(by_group, key=lambda i: (len(i), i)):
        trays = sorted(by_group[index])
        health: list[TrayHealth] = []
        for tray in trays:
            node = nodes.get(tray)
            if node is None:
                health.append({"node": tray, "health": "unknown", "faults": [], "cordoned": None})
                continue
            faults = condition_faults(node, types) + cd_faults.get(tray, [])
            annotations = (node.get("metadata") or {}).get("annotations") or {}
            health.append(
                {
                    "node": tray,
                    "health": "sick" if faults else "healthy",
                    "faults": faults,
                    "cordoned": cordoned(node),
                    "guard_cordoned": CORDONED_AT in annotations,
                }
            )
        rows.append({"group": index, "compute_domain": _domain_state(listed_domains, trays), "trays": health})
    return rows


def tray_text(tray: TrayHealth) -> str:
    """One tray in a line: `node healthy`, `node sick (why; why) cordoned by guard`, `node unknown`."""
    text = f"{tray['node']} {tray['health']}"
    if tray.get("faults"):
        text += f" ({'; '.join(tray['faults'])})"
    if tray.get("cordoned"):
        text += " cordoned by guard" if tray.get("guard_cordoned") else " cordoned"
    return text


def domain_text(state: DomainState | None) -> str:
    """The ComputeDomain column: `Ready (4/4 trays Ready)`, or `-` without one."""
    if state is None:
        return "-"
    return f"{state['status']} ({state['trays_ready']}/{state['trays']} trays Ready)"
