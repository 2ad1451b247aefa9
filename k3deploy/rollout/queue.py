"""Kueue's view of the serving groups, as pure functions over the Workloads and pods the server returns.

With `kubernetes.gang_admission: kueue`, Kueue's LeaderWorkerSet integration makes one Workload per group (owned by the
LeaderWorkerSet, annotated with its name and the group's index: sigs.k8s.io/kueue
pkg/controller/jobs/leaderworkerset/leaderworkerset_reconciler.go `constructWorkload`) and holds the group's pods
behind scheduling gates until the Workload is admitted whole (pkg/controller/jobs/pod/constants `SchedulingGateName`,
apis/kueue/v1beta2/topology_types.go `TopologySchedulingGate`). A gated pod is queued, not broken: the waiter says
why from its Workload's conditions instead of timing out on "SchedulingGated".
"""

from __future__ import annotations

from dataclasses import dataclass

from k3deploy.kobject import KubeObject
from k3deploy.kueue import GATES, GROUP_INDEX, OWNER_NAME


@dataclass(frozen=True)
class GroupAdmission:
    """One group's Workload: admitted or not, and the condition that says why."""

    group: int
    workload: str
    admitted: bool
    reason: str
    message: str

    def line(self) -> str:
        """One line for a diagnosis or `status`."""
        state = "admitted" if self.admitted else "queued"
        why = f" ({self.reason}: {self.message})" if not self.admitted and (self.reason or self.message) else ""
        return f"group {self.group}: {state} by Kueue, Workload/{self.workload}{why}"


def gated_by_kueue(pod: KubeObject) -> bool:
    """Whether Kueue still holds the pod behind one of its scheduling gates."""
    gates = (pod.get("spec") or {}).get("schedulingGates") or []
    return any(g.get("name") in GATES for g in gates)


def _condition(workload: KubeObject, kind: str) -> KubeObject:
    for c in (workload.get("status") or {}).get("conditions") or []:
        if c.get("type") == kind:
            return dict(c)
    return {}


def group_admissions(workloads: list[KubeObject], lws_name: str) -> list[GroupAdmission]:
    """The groups of LeaderWorkerSet `lws_name` that have a Workload, by group index. A Workload is admitted when its
    Admitted condition is True; otherwise QuotaReserved (or Admitted) carries Kueue's reason and message (e.g.
    "couldn't assign flavors to pod set leader: topology ... doesn't allow to fit any of 4 pod(s)")."""
    found = []
    for wl in workloads:
        meta = wl.get("metadata") or {}
        annotations = meta.get("annotations") or {}
        index = str(annotations.get(GROUP_INDEX, ""))
        if annotations.get(OWNER_NAME) != lws_name or not index.isdigit():
            continue
        admitted = _condition(wl, "Admitted")
        reserved = _condition(wl, "QuotaReserved")
        ok = str(admitted.get("status")) == "True"
        why = reserved if reserved and str(reserved.get("status")) != "True" else admitted
        found.append(
            GroupAdmission(
                int(index),
                str(meta.get("name", "")),
                ok,
                "" if ok else str(why.get("reason") or "Pending"),
                "" if ok else str(why.get("message") or "not yet considered by Kueue"),
            )
        )
    return sorted(found, key=lambda g: g.group)
