"""`k3deploy status` on a cluster: what is live for a profile, as one JSON-able dict."""

from __future__ import annotations

import dataclasses

from k3deploy import kueue
from k3deploy.errors import K3DeployError
from k3deploy.fault_guard.health import GroupHealth, group_health
from k3deploy.fault_guard.signals import CD_API
from k3deploy.kobject import JsonObject, KubeObject
from k3deploy.kube.port import KubePort
from k3deploy.lws import GROUP_INDEX_LABEL, NAME_LABEL, WORKER_INDEX_LABEL
from k3deploy.observe.canary_report import read
from k3deploy.observe.canary_status import from_report
from k3deploy.profile.model import Profile
from k3deploy.profile.object_names import compute_domain_name
from k3deploy.render.canary import canary_names
from k3deploy.rollout.currency import prove_current
from k3deploy.rollout.queue import group_admissions
from k3deploy.rollout.readiness import pod_phase_label, pod_ready, readiness, restarts
from k3deploy.targets.kubernetes.history import read_history


def _node(api: KubePort, name: str, cache: dict[str, KubeObject | None]) -> KubeObject | None:
    if name not in cache:
        try:
            cache[name] = api.get("v1", "Node", name)
        except K3DeployError:
            cache[name] = None  # nodes are cluster-scoped: a namespaced user may not read them
    return cache[name]


def _nodes(api: KubePort, names: set[str]) -> dict[str, KubeObject | None]:
    """The Nodes named, by one list of the cluster's nodes (not a get per node: a fleet has hundreds); a user who
    may not list them gets them one by one, as far as it may read them."""
    if not names:
        return {}
    try:
        items, _ = api.list("v1", "Node")
    except K3DeployError:
        cache: dict[str, KubeObject | None] = {}
        return {name: _node(api, name, cache) for name in sorted(names)}
    listed = {n["metadata"]["name"]: n for n in items}
    return {name: listed.get(name) for name in names}


def _node_labels(name: str, nodes: dict[str, KubeObject | None]) -> dict[str, str]:
    return dict(((nodes.get(name) or {}).get("metadata") or {}).get("labels") or {})


def _pod_nodes(pods: list[KubeObject]) -> set[str]:
    return {name for p in pods if (name := (p.get("spec") or {}).get("nodeName"))}


def _domains(api: KubePort, profile: Profile) -> list[KubeObject]:
    """The release's ComputeDomain, when the profile renders one and it can be read."""
    if not profile.kubernetes.compute_domain:
        return []
    try:
        live = api.get(CD_API, "ComputeDomain", compute_domain_name(profile), profile.kubernetes.namespace)
    except K3DeployError:
        return []  # the CRD not served, or no right to read it: the column says "-"
    return [live] if live is not None else []


#: The serving pods' init container that picks the tray's staged copy or the weight volume (render/staging.py).
PICK_CONTAINER = "pick-weights"


def weights_loaded(pod: KubeObject) -> str | None:
    """Where a serving pod's weights come from, as its pick-weights init container said when it finished ("node-local",
    "shared volume"); None without staging or before it finished."""
    for status in (pod.get("status") or {}).get("initContainerStatuses") or []:
        if status.get("name") != PICK_CONTAINER:
            continue
        for state in (status.get("state") or {}, status.get("lastState") or {}):
            done = state.get("terminated") or {}
            if done.get("exitCode") == 0 and done.get("message"):
                return str(done["message"]).strip()[:80]
    return None


def describe(api: KubePort, profile: Profile, objects: list[KubeObject], endpoint: str) -> JsonObject:
    """Objects with readiness, the serving pods by group (node, clique, where their weights loaded from), each group's
    ComputeDomain state and trays' health (fault_guard/health.py), endpoint, revisions, last smoke verdict."""
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
        row: JsonObject = {"kind": obj["kind"], "name": meta["name"], "exists": live is not None}
        if live is not None and obj["kind"] == "LeaderWorkerSet":
            live_sets.append(live)
            # A controller that has not acted on the latest spec still shows the previous rollout as ready.
            proof = prove_current(live)
            row["proof"] = proof.how
            if ready and not proof.current:
                ready, state, detail = False, "Stale", f"status not yet for the current spec: {row['proof']}"
        rows.append({**row, "ready": ready, "state": state, "detail": detail})
    pods = []
    if any(r["exists"] for r in rows):
        sets = sorted({o["metadata"]["name"] for o in objects if o["kind"] == "LeaderWorkerSet"} or {profile.name})
        items, _ = api.list("v1", "Pod", namespace, label_selector=f"{NAME_LABEL} in ({','.join(sets)})")
        nodes = _nodes(api, _pod_nodes(items))
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
                    "clique": _node_labels(node, nodes).get(profile.kubernetes.clique_label) if node else None,
                    "phase": pod_phase_label(pod),
                    "ready": pod_ready(pod),
                    "restarts": restarts(pod),
                    "weights": weights_loaded(pod),
                }
            )
    groups = group_health(items, nodes, _domains(api, profile), profile.guard.fault_conditions) if pods else []
    admission = _admission(api, namespace, live_sets)
    history = read_history(api, namespace, profile.name) if rows and rows[0]["exists"] else []
    newest = history[-1] if history else None
    previous = history[-2] if len(history) > 1 else None
    return {
        "deployment": profile.name,
        "target": "kubernetes",
        "namespace": namespace,
        "deployed": any(r["exists"] and r["kind"] == "LeaderWorkerSet" for r in rows),
        "ready": all(r["ready"] for r in rows if r["kind"] == "LeaderWorkerSet") and any(r["exists"] for r in rows),
        "objects": rows,
        "pods": pods,
        "groups": groups,
        "endpoint": endpoint,
        "revision": {
            "current": newest["revision"] if newest else None,
            "current_applied_at": newest.get("appliedAt") if newest else None,
            "previous": previous["revision"] if previous else None,
        },
        "smoke": newest.get("smoke") if newest else None,
        **({"canary": last_canary(api, profile)} if profile.observe.canary.enabled else {}),
        "admission": admission,
    }


def read_groups(api: KubePort, profile: Profile) -> list[GroupHealth]:
    """The release's groups as `status` shows them (`group_health`): its LeaderWorkerSet's pods (not being deleted),
    their Nodes and its ComputeDomain, read now (`watch --groups`, every interval)."""
    namespace = profile.kubernetes.namespace
    items, _ = api.list("v1", "Pod", namespace, label_selector=f"{NAME_LABEL}={profile.name}")
    live = [p for p in items if not (p.get("metadata") or {}).get("deletionTimestamp")]
    nodes = _nodes(api, _pod_nodes(live))
    return group_health(live, nodes, _domains(api, profile), profile.guard.fault_conditions)


def last_canary(api: KubePort, profile: Profile) -> dict[str, object] | None:
    """The canary's last run from the report it keeps; None when it has not run yet or cannot be read."""
    try:
        report = read(api, profile.kubernetes.namespace, canary_names(profile.name)["report"])
    except K3DeployError:
        report = None  # a user who may not read ConfigMaps still gets the rest of the status
    return None if report is None else from_report(report, profile).as_dict()


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
