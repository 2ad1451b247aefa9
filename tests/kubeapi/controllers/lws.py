"""A LeaderWorkerSet controller: groups of leader + worker pods named, labelled and injected as LWS does, group
recreation on restarts and template changes (one group at a time), and the LWS status with its conditions.
"""

from __future__ import annotations

import copy
import hashlib
import json

from tests.kubeapi.apply import now
from tests.kubeapi.controllers.base import Controller, set_condition
from tests.kubeapi.controllers.events import record
from tests.kubeapi.errors import ApiError

KEY = ("leaderworkerset.x-k8s.io", "leaderworkersets")
PREFIX = "leaderworkerset.sigs.k8s.io"


def _ready(pod: dict) -> bool:
    return any(c["type"] == "Ready" and c["status"] == "True" for c in pod.get("status", {}).get("conditions", []))


def _restarted(pod: dict) -> bool:
    return any(s.get("restartCount", 0) > 0 for s in pod.get("status", {}).get("containerStatuses", []))


class LeaderWorkerSetController(Controller):
    """Reconciles every LeaderWorkerSet once its CRD exists."""

    name = "lws-controller"

    def __init__(self, store, tick: float = 0.05) -> None:  # noqa: ANN001 - Store
        super().__init__(store, tick)
        #: uids of LWSs rolling to a new template (UpdateInProgress until every group is ready on it).
        self._updating: set[str] = set()

    def reconcile(self) -> None:
        """Sync every LWS."""
        rtype = self.store.registry.by_key(KEY)
        if rtype is None:
            return
        for lws in self.store.list(rtype):
            self._sync(rtype, lws)

    @staticmethod
    def template_hash(lws: dict) -> str:
        """The template-revision-hash label value of the current leaderWorkerTemplate."""
        template = lws["spec"].get("leaderWorkerTemplate", {})
        return hashlib.sha256(json.dumps(template, sort_keys=True).encode()).hexdigest()[:10]

    def _sync(self, rtype, lws: dict) -> None:  # noqa: ANN001 - ResourceType
        meta, spec = lws["metadata"], lws["spec"]
        name, ns = meta["name"], meta["namespace"]
        replicas = spec.get("replicas", 1)
        size = spec.get("leaderWorkerTemplate", {}).get("size", 1)
        current = self.template_hash(lws)
        self._ensure_service(lws)
        pods = self.store.list("pods", ns, label=f"{PREFIX}/name={name}")
        groups: dict[int, list[dict]] = {}
        for pod in pods:
            groups.setdefault(int(pod["metadata"]["labels"].get(f"{PREFIX}/group-index", "0")), []).append(pod)
        for index, members in groups.items():
            if index >= replicas:
                self._delete_group(members)
        policy = spec.get("leaderWorkerTemplate", {}).get("restartPolicy", "RecreateGroupOnPodRestart")
        for index, members in groups.items():
            live = [p for p in members if not p["metadata"].get("deletionTimestamp")]
            if policy in ("RecreateGroupOnPodRestart", "Default") and any(_restarted(p) for p in live):
                self._delete_group(live, lws, f"group {index} recreated after a pod restart")
            elif policy == "RecreateGroupAfterStart" and any(_restarted(p) for p in live) \
                    and not any(p.get("status", {}).get("phase") == "Pending" for p in live):
                self._delete_group(live, lws, f"group {index} recreated after a pod restart")
        self._roll(lws, groups, current, replicas, size)
        pods = self.store.list("pods", ns, label=f"{PREFIX}/name={name}")
        existing = {p["metadata"]["name"]: p for p in pods}
        startup = spec.get("startupPolicy", "LeaderCreated")
        for index in range(replicas):
            leader_name = f"{name}-{index}"
            if leader_name not in existing:
                self._create_pod(lws, index, 0, size, current)
                continue
            leader = existing[leader_name]
            if leader["metadata"]["labels"].get(f"{PREFIX}/template-revision-hash") != current:
                continue
            if startup == "LeaderReady" and not _ready(leader):
                continue
            for worker in range(1, size):
                if f"{name}-{index}-{worker}" not in existing:
                    self._create_pod(lws, index, worker, size, current)
        self._status(rtype, lws, current, replicas, size)

    def _roll(self, lws: dict, groups: dict[int, list[dict]], current: str, replicas: int, size: int) -> None:
        """Recreate outdated groups from the highest index down, at most maxUnavailable groups down at once."""
        rolling = lws["spec"].get("rolloutStrategy", {}).get("rollingUpdateConfiguration", {})
        partition, max_unavailable = rolling.get("partition", 0), rolling.get("maxUnavailable", 1)
        outdated = sorted((i for i, members in groups.items() if i < replicas and i >= partition and any(
            p["metadata"]["labels"].get(f"{PREFIX}/template-revision-hash") != current for p in members)),
            reverse=True)
        unavailable = sum(1 for i in range(replicas) if not self._group_ready(groups.get(i, []), size))
        for index in outdated:
            if self._group_ready(groups[index], size):
                if unavailable >= max_unavailable:
                    continue
                unavailable += 1
            self._delete_group(groups[index], lws, f"group {index} recreated with template {current}")

    @staticmethod
    def _group_ready(members: list[dict], size: int) -> bool:
        live = [p for p in members if not p["metadata"].get("deletionTimestamp")]
        return len(live) == size and all(_ready(p) for p in live)

    def _delete_group(self, members: list[dict], lws: dict | None = None, why: str = "") -> None:
        deleted = False
        for pod in members:
            if pod["metadata"].get("deletionTimestamp"):
                continue
            try:
                self.store.delete("pods", pod["metadata"]["name"], pod["metadata"]["namespace"])
                deleted = True
            except ApiError:
                pass
        if deleted and lws is not None:
            record(self.store, lws, "Normal", "RecreateGroup", why, self.name)

    def _ensure_service(self, lws: dict) -> None:
        meta = lws["metadata"]
        if self.store.get("services", meta["name"], meta["namespace"]) is not None:
            return
        self.store.create("services", {
            "metadata": {"name": meta["name"], "namespace": meta["namespace"],
                         "ownerReferences": [self._owner(lws)]},
            "spec": {"clusterIP": "None", "publishNotReadyAddresses": True,
                     "selector": {f"{PREFIX}/name": meta["name"]}},
        }, meta["namespace"], manager=self.name)

    @staticmethod
    def _owner(lws: dict) -> dict:
        return {"apiVersion": lws["apiVersion"], "kind": "LeaderWorkerSet", "name": lws["metadata"]["name"],
                "uid": lws["metadata"]["uid"], "controller": True, "blockOwnerDeletion": True}

    def _create_pod(self, lws: dict, group: int, worker: int, size: int, current: str) -> None:
        meta, lwt = lws["metadata"], lws["spec"].get("leaderWorkerTemplate", {})
        name, ns = meta["name"], meta["namespace"]
        template = copy.deepcopy(lwt.get("leaderTemplate") if worker == 0 and lwt.get("leaderTemplate")
                                 else lwt.get("workerTemplate", {}))
        pod_name = f"{name}-{group}" if worker == 0 else f"{name}-{group}-{worker}"
        group_key = hashlib.sha1(f"{ns}/{name}-{group}".encode()).hexdigest()
        labels = dict(template.get("metadata", {}).get("labels", {}))
        labels.update({f"{PREFIX}/name": name, f"{PREFIX}/group-index": str(group),
                       f"{PREFIX}/worker-index": str(worker), f"{PREFIX}/template-revision-hash": current,
                       f"{PREFIX}/group-key": group_key})
        annotations = dict(template.get("metadata", {}).get("annotations", {}))
        annotations[f"{PREFIX}/size"] = str(size)
        if worker:
            annotations[f"{PREFIX}/leader-name"] = f"{name}-{group}"
        spec = template.get("spec", {})
        env = [{"name": "LWS_LEADER_ADDRESS", "value": f"{name}-{group}.{name}.{ns}"},
               {"name": "LWS_GROUP_SIZE", "value": str(size)},
               {"name": "LWS_WORKER_INDEX", "value": str(worker)}]
        for container in spec.get("containers", []) + spec.get("initContainers", []):
            container["env"] = env + [e for e in container.get("env", []) if e["name"] not in
                                      {"LWS_LEADER_ADDRESS", "LWS_GROUP_SIZE", "LWS_WORKER_INDEX"}]
        spec["hostname"] = pod_name
        spec["subdomain"] = name
        topology = meta.get("annotations", {}).get(f"{PREFIX}/exclusive-topology")
        if topology:
            affinity = spec.setdefault("affinity", {})
            affinity.setdefault("podAffinity", {}).setdefault(
                "requiredDuringSchedulingIgnoredDuringExecution", []).append({
                    "labelSelector": {"matchExpressions": [
                        {"key": f"{PREFIX}/group-key", "operator": "In", "values": [group_key]}]},
                    "topologyKey": topology})
            affinity.setdefault("podAntiAffinity", {}).setdefault(
                "requiredDuringSchedulingIgnoredDuringExecution", []).append({
                    "labelSelector": {"matchExpressions": [
                        {"key": f"{PREFIX}/group-key", "operator": "Exists"},
                        {"key": f"{PREFIX}/group-key", "operator": "NotIn", "values": [group_key]}]},
                    "topologyKey": topology})
        try:
            self.store.create("pods", {
                "metadata": {"name": pod_name, "namespace": ns, "labels": labels, "annotations": annotations,
                             "ownerReferences": [self._owner(lws)]},
                "spec": spec,
            }, ns, manager=self.name)
        except ApiError:
            return
        record(self.store, lws, "Normal", "CreatedPod", f"Created pod {pod_name}", self.name)

    def _status(self, rtype, lws: dict, current: str, replicas: int, size: int) -> None:  # noqa: ANN001
        meta = lws["metadata"]
        everything = self.store.list("pods", meta["namespace"], label=f"{PREFIX}/name={meta['name']}")
        pods = [p for p in everything if not p["metadata"].get("deletionTimestamp")]
        groups: dict[int, list[dict]] = {}
        for pod in pods:
            groups.setdefault(int(pod["metadata"]["labels"][f"{PREFIX}/group-index"]), []).append(pod)
        updated = [i for i, m in groups.items() if i < replicas and
                   all(p["metadata"]["labels"].get(f"{PREFIX}/template-revision-hash") == current for p in m)]
        ready = [i for i, m in groups.items() if i < replicas and self._group_ready(m, size)]
        ready_updated = [i for i in ready if i in updated]
        if any(p["metadata"]["labels"].get(f"{PREFIX}/template-revision-hash") != current for p in everything):
            self._updating.add(meta["uid"])
        elif len(ready_updated) >= replicas:
            self._updating.discard(meta["uid"])
        rolling = meta["uid"] in self._updating
        stamp = now()

        def write(obj: dict) -> None:
            status = obj.setdefault("status", {})
            status.update(replicas=len([i for i in groups if i < replicas]), readyReplicas=len(ready),
                          updatedReplicas=len(updated), observedGeneration=obj["metadata"].get("generation", 1),
                          hpaPodSelector=f"{PREFIX}/name={meta['name']},{PREFIX}/worker-index=0")
            conditions = status.setdefault("conditions", [])
            available = len(ready_updated) >= replicas
            if available:
                set_condition(conditions, "Available", "True", "AllGroupsReady", "All replicas are ready", stamp)
                set_condition(conditions, "Progressing", "False", "GroupsProgressing", "Replicas are progressing",
                              stamp)
            else:
                set_condition(conditions, "Available", "False", "AllGroupsReady", "All replicas are ready", stamp)
                set_condition(conditions, "Progressing", "True", "GroupsProgressing", "Replicas are progressing",
                              stamp)
            if rolling or any(c["type"] == "UpdateInProgress" for c in conditions):
                set_condition(conditions, "UpdateInProgress", "True" if rolling else "False", "GroupsUpdating",
                              "Rolling Upgrade is in progress", stamp)

        self.store.update(rtype, meta["name"], meta["namespace"], write, subresource="status", manager=self.name)
