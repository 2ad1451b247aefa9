"""What `k3deploy guard` does on the cluster, in its order: keep the evidence, cordon, delete the group's pods, say it.

Every call through the command's `KubeApi`. A cordon is a server-side apply of the node's `spec.unschedulable` and
guard's three annotations (signals.py CORDONED_AT, CORDON_REASON, CORDONED_BY) under a field manager of guard's
own, made only when the node, read again just before, is still not cordoned. The group is deleted through its leader
(`delete_group`) so the LeaderWorkerSet controller recreates it, and the scheduler places it on trays with room. Events go on the LeaderWorkerSet, as a controller's do.
"""

from __future__ import annotations

import datetime
import socket
from collections.abc import Callable

from k3deploy.fault_guard.decide import Decision
from k3deploy.fault_guard.evidence import bounded, build_bundle, bundle_name
from k3deploy.fault_guard.signals import CORDON_REASON, CORDONED_AT, CORDONED_BY
from k3deploy.fault_guard.snapshot import Observed
from k3deploy.kobject import KubeObject
from k3deploy.kube.api import KubeApi
from k3deploy.lws import API_VERSION as LWS_API
from k3deploy.lws import WORKER_INDEX_LABEL

#: The field manager of guard's cordons, and the component its Events name.
GUARD = "k3deploy-guard"
#: Longest annotation value guard writes (the reason, cut).
MAX_REASON = 1024


def utc(now: float) -> str:
    """RFC 3339 UTC with seconds: `2026-12-05T11:00:00Z`."""
    return datetime.datetime.fromtimestamp(now, datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def keep_evidence(
    api: KubeApi,
    observed: Observed,
    decision: Decision,
    *,
    release: str,
    namespace: str,
    store: Callable[[str, bytes], str],
    tail_lines: int,
    max_bytes: int,
) -> str:
    """Build the group's evidence bundle and keep it with `store(name, data)` (a new file under --evidence-dir, or a
    new ConfigMap: never one that exists); where it went, as `store` says it."""
    pods = observed.pods.get(decision.group, [])
    logs: dict[tuple[str, str, bool], str] = {}
    for pod in pods:
        name = pod["metadata"]["name"]
        for container in (pod.get("spec") or {}).get("containers") or []:
            for previous in (False, True):
                logs[(name, container["name"], previous)] = api.pod_log(
                    name, namespace, container["name"], tail_lines=tail_lines, previous=previous
                )
    trays = set(decision.sick) | {(p.get("spec") or {}).get("nodeName") for p in pods}
    bundle = build_bundle(
        release=release,
        namespace=namespace,
        decision=decision,
        now=observed.snapshot.now,
        pods=pods,
        logs=logs,
        events=api.events(namespace),
        domains=observed.domains,
        nodes=[observed.nodes[t] for t in sorted(n for n in trays if n in observed.nodes)],
    )
    name = bundle_name(release, decision.group, observed.snapshot.now)
    return store(name, bounded(bundle, max_bytes))


def cordon(api: KubeApi, node: str, reason: str, by: str, now: float) -> bool:
    """Cordon `node` with guard's annotations; False (nothing done) when it is cordoned already or gone."""
    live = api.get("v1", "Node", node)
    if live is None or (live.get("spec") or {}).get("unschedulable"):
        return False
    patch = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": node,
            "annotations": {CORDONED_AT: utc(now), CORDON_REASON: reason[:MAX_REASON], CORDONED_BY: by},
        },
        "spec": {"unschedulable": True},
    }
    api.apply(patch, force=True, manager=GUARD)
    return True


def delete_group(api: KubeApi, namespace: str, pods: list[KubeObject]) -> list[str]:
    """Delete the group through its leader, in the foreground: the leader pod goes only once its worker StatefulSet
    and their pods are gone, so the leader's StatefulSet recreates it when no pod of the group is left. Deleting
    every pod at once let the worker StatefulSet, still owned by the terminating leader, recreate workers in the old
    clique, and the new leader's pod affinity (one clique per group key) then held the group there. Without a leader,
    the pods there are are deleted. The names of the group's pods deleted (with the leader's, its workers')."""
    names = sorted(p["metadata"]["name"] for p in pods)
    leader = next(
        (p["metadata"]["name"] for p in pods if (p["metadata"].get("labels") or {}).get(WORKER_INDEX_LABEL) == "0"),
        None,
    )
    if leader is not None:
        return names if api.delete("v1", "Pod", leader, namespace, propagation="Foreground") else []
    return [name for name in names if api.delete("v1", "Pod", name, namespace)]


def event(
    api: KubeApi,
    lws: KubeObject | None,
    namespace: str,
    name: str,
    *,
    reason: str,
    message: str,
    warning: bool,
    now: float,
) -> None:
    """An Event about the LeaderWorkerSet `name` (its uid when it was read), from component k3deploy-guard."""
    stamp = utc(now)
    api.create(
        {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"generateName": f"{name}.guard-", "namespace": namespace},
            "involvedObject": {
                "apiVersion": LWS_API,
                "kind": "LeaderWorkerSet",
                "name": name,
                "namespace": namespace,
                **({"uid": lws["metadata"]["uid"]} if lws and lws.get("metadata", {}).get("uid") else {}),
            },
            "reason": reason,
            "message": message[:1024],
            "type": "Warning" if warning else "Normal",
            "source": {"component": GUARD, "host": socket.gethostname()},
            "firstTimestamp": stamp,
            "lastTimestamp": stamp,
            "count": 1,
        }
    )
