"""`k3deploy status` on a cluster: what is live for a profile, as one JSON-able dict."""

from __future__ import annotations

import dataclasses
from typing import Any

from k3deploy import kueue
from k3deploy.errors import K3DeployError
from k3deploy.kobject import KubeObject
from k3deploy.kube.port import KubePort
from k3deploy.lws import GROUP_INDEX_LABEL, NAME_LABEL, WORKER_INDEX_LABEL
from k3deploy.profile.model import Profile
from k3deploy.rollout.currency import prove_current
from k3deploy.rollout.queue import group_admissions
from k3deploy.rollout.readiness import pod_phase_label, pod_ready, readiness, restarts
from k3deploy.targets.kubernetes.history import read_history


def _node_labels(api: KubePort, name: str, cache: dict[str, dict[str, str]]) -> dict[str, str]:
    if name not in cache:
        try:
            node = api.get("v1", "Node", name)
        except K3DeployError:
            node = None  # nodes are cluster-scoped: a namespaced user may not read them
        cache[name] = (node or {}).get("metadata", {}).get("labels") or {}
    return cache[name]


def _currency(api: KubePort, lws: KubeObject, namespace: str) -> tuple[bool, str]:
    """Whether a LeaderWorkerSet's status is its current spec's (as `wait` decides it), and the proof used."""
    selector = f"{NAME_LABEL}={lws['metadata']['name']}"
    try:
        revisions, _ = api.list("apps/v1", "ControllerRevision", namespace, label_selector=selector)
    except K3DeployError:
        revisions = None  # without the right to list them, the status is taken as is (and labelled unproven)
    pods, _ = api.list("v1", "Pod", namespace, label_selector=selector)
    live = [pod for pod in pods if not pod["metadata"].get("deletionTimestamp")]
    proof = prove_current(lws, revisions, live)
    return proof.current, proof.how


def describe(api: KubePort, profile: Profile, objects: list[KubeObject], endpoint: str) -> dict[str, Any]:
    """Objects with readiness, the serving pods by group (node, clique), endpoint, revisions, last smoke verdict."""
    namespace = profile.kubernetes.namespace
    rows = []
    live_sets: list[KubeObject] = []
    for obj in objects:
        meta = obj["metadata"]
        live = api.get(obj["apiVersion"], obj["kind"], meta["name"], meta.get("namespace"))
        verdict = readiness(live) if live is not None else None
        ready = bool(verdict and verdict.ready)
        state = "NotFound" if verdict is None else (verdict.reason or ("Ready" if verdict.ready else "Progressing"))
        detail = verdict.message if verdict else ""
        row: dict[str, Any] = {"kind": obj["kind"], "name": meta["name"], "exists": live is not None}
        if live is not None and obj["kind"] == "LeaderWorkerSet":
            live_sets.append(live)
            # A controller that has not acted on the latest spec still shows the previous rollout as ready.
            current, row["proof"] = _currency(api, live, namespace)
            if ready and not current:
                ready, state, detail = False, "Stale", f"status not yet for the current spec: {row['proof']}"
        rows.append({**row, "ready": ready, "state": state, "detail": detail})
    pods = []
    if any(r["exists"] for r in rows):
        sets = sorted({o["metadata"]["name"] for o in objects if o["kind"] == "LeaderWorkerSet"} or {profile.name})
        items, _ = api.list("v1", "Pod", namespace, label_selector=f"{NAME_LABEL} in ({','.join(sets)})")
        nodes: dict[str, dict[str, str]] = {}
        for pod in sorted(
            items,
            key=lambda p: (
                p["metadata"].get("labels", {}).get(GROUP_INDEX_LABEL, ""),
                p["metadata"].get("labels", {}).get(WORKER_INDEX_LABEL, ""),
            ),
        ):
            labels = pod["metadata"].get("labels") or {}
            node = (pod.get("spec") or {}).get("nodeName")
            pods.append(
                {
                    "name": pod["metadata"]["name"],
                    "group": labels.get(GROUP_INDEX_LABEL),
                    "worker": labels.get(WORKER_INDEX_LABEL),
                    "node": node,
                    "clique": _node_labels(api, node, nodes).get(profile.kubernetes.clique_label) if node else None,
                    "phase": pod_phase_label(pod),
                    "ready": pod_ready(pod),
                    "restarts": restarts(pod),
                }
            )
    admission = _admission(api, namespace, live_sets)
    history = read_history(api, namespace, profile.name) if rows and rows[0]["exists"] else []
    newest = history[-1] if history else None
    previous = history[-2] if len(history) > 1 else None
    return {
        "deployment": profile.name,
        "target": "kubernetes",
        "namespace": namespace,
        "deployed": any(r["exists"] and r["kind"] == "LeaderWorkerSet" for r in rows),
        "ready": all(r["ready"] for r in rows if r["kind"] in ("LeaderWorkerSet",)) and any(r["exists"] for r in rows),
        "objects": rows,
        "pods": pods,
        "endpoint": endpoint,
        "revision": {
            "current": newest["revision"] if newest else None,
            "current_applied_at": newest.get("appliedAt") if newest else None,
            "previous": previous["revision"] if previous else None,
        },
        "smoke": newest.get("smoke") if newest else None,
        "admission": admission,
    }


def _admission(api: KubePort, namespace: str, live_sets: list[KubeObject]) -> list[dict[str, object]]:
    """Kueue's word on each group of a live LeaderWorkerSet queued to it (rollout/queue.py), from one list of the
    namespace's Workloads; nothing for a set that Kueue does not admit."""
    queued = [o["metadata"]["name"] for o in live_sets if kueue.QUEUE_LABEL in (o["metadata"].get("labels") or {})]
    if not queued or not api.served(kueue.API_VERSION, kueue.WORKLOAD_KIND):
        return []
    workloads, _ = api.list(kueue.API_VERSION, kueue.WORKLOAD_KIND, namespace)
    return [
        {"lws": name, **dataclasses.asdict(group)} for name in queued for group in group_admissions(workloads, name)
    ]
