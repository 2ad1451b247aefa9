"""A LeaderWorkerSet controller: groups of leader + worker pods named, labelled and injected as LWS does, group
recreation on restarts and pod deletions, template rollouts one group at a time through ControllerRevisions, and the
LWS status with its conditions, in two versions.

Imitates kubernetes-sigs/lws:
- pkg/controllers/leaderworkerset_controller.go (Reconcile, updateConditions, updateStatus, setCondition): a
  ControllerRevision per template (tests/kubeapi/controllers/lws_revision.py), pods labelled with its key,
  `updatedReplicas` counting groups on the current key, conditions added only when True, Available exclusive with
  Progressing and with UpdateInProgress (setting one True flips the other to False), old revisions truncated once
  every group is updated and ready.
- pkg/controllers/pod_controller.go (handleRestartPolicy) and pkg/utils/pod/pod_utils.go: with `restartPolicy`
  RecreateGroupOnPodRestart a restarted container (pod Running or Pending) or a deleted pod recreates its group by
  deleting the leader; RecreateGroupAfterStart does so only once no pod of the group is Pending; None (and the
  deprecated Default, which the webhook turns into None) recreates nothing.
- `version`: "v0.9" (and later) writes `status.observedGeneration` and each condition's `observedGeneration`
  (added in v0.9.0, api/leaderworkerset/v1/leaderworkerset_types.go); "v0.8" writes neither, so right after a
  template change its status still shows the old Available=True with every group ready and updated.
  `reaction_delay` holds a new generation back that long before the controller acts on it (a busy controller).

Ownership is flat: pods are owned by the LeaderWorkerSet itself, not by leader and worker StatefulSets as upstream;
nothing in k3deploy reads the StatefulSet chain (it finds pods by the `leaderworkerset.sigs.k8s.io/name` label and
the current template by the LWS's ControllerRevisions), and deleting the group's pods at once stands in for the
foreground deletion of the leader: the group's new leader is created only once every pod of the old group is gone
(pkg/controllers/pod_controller.go handleRestartPolicy deletes the leader with DeletePropagationForeground).
Several groups (`replicas`) are created together, each leader at once, as upstream's leader StatefulSet does.
"""

from __future__ import annotations

import contextlib
import copy
import hashlib
import time

from tests.kubeapi.apply import now
from tests.kubeapi.controllers.base import Controller
from tests.kubeapi.controllers.events import record
from tests.kubeapi.controllers.lws_revision import REVISION_KEY, new_revision, patch
from tests.kubeapi.errors import ApiError

KEY = ("leaderworkerset.x-k8s.io", "leaderworkersets")
PREFIX = "leaderworkerset.sigs.k8s.io"
#: The policies that recreate a group (pod_controller.go handleRestartPolicy); None and Default do not.
RECREATING = ("RecreateGroupOnPodRestart", "RecreateGroupAfterStart")
#: Condition pairs that cannot both be True (leaderworkerset_controller.go exclusiveConditionTypes).
EXCLUSIVE = ({"Available", "Progressing"}, {"Available", "UpdateInProgress"})
MESSAGES = {
    "Available": ("AllGroupsReady", "All replicas are ready"),
    "UpdateInProgress": ("GroupsUpdating", "Rolling Upgrade is in progress"),
    "Progressing": ("GroupsProgressing", "Replicas are progressing"),
}


def _ready(pod: dict) -> bool:
    return any(c["type"] == "Ready" and c["status"] == "True" for c in pod.get("status", {}).get("conditions", []))


def _restarted(pod: dict) -> bool:
    """podutils.ContainerRestarted: a container or init container restarted while the pod is Running or Pending."""
    status = pod.get("status", {})
    if status.get("phase", "Pending") not in ("Running", "Pending"):
        return False
    return any(
        s.get("restartCount", 0) > 0
        for s in status.get("containerStatuses", []) + status.get("initContainerStatuses", [])
    )


def _key(pod: dict) -> str | None:
    return pod["metadata"].get("labels", {}).get(REVISION_KEY)


def set_conditions(conditions: list[dict], wanted: list[str], generation: int | None, stamp: str) -> None:
    """setConditions/setCondition: add each wanted type as True (only True ones are ever added), flip an exclusive
    True partner to False; with `generation` (v0.9+) stamp every condition's observedGeneration."""
    for type_ in wanted:
        reason, message = MESSAGES[type_]
        new = {"type": type_, "status": "True", "reason": reason, "message": message, "lastTransitionTime": stamp}
        if generation is not None:
            new["observedGeneration"] = generation
        found = False
        for i, cur in enumerate(conditions):
            if cur["type"] == type_:
                found = True
                if cur["status"] != "True" or (generation is not None and cur.get("observedGeneration") != generation):
                    conditions[i] = new
            elif {cur["type"], type_} in EXCLUSIVE and cur["status"] == "True":
                cur["status"] = "False"
        if not found:
            conditions.append(new)
    if generation is not None:
        for cur in conditions:
            cur["observedGeneration"] = generation


class LeaderWorkerSetController(Controller):
    """Reconciles every LeaderWorkerSet once its CRD exists; `version` "v0.9" (default) or "v0.8"."""

    name = "lws-controller"

    def __init__(self, store, tick: float = 0.05) -> None:  # Store
        super().__init__(store, tick)
        self.version = "v0.9"
        #: Seconds a new generation waits before the controller acts on it.
        self.reaction_delay = 0.0
        #: uid -> (generation, when first seen) of generations not acted on yet.
        self._first_seen: dict[str, tuple[int, float]] = {}
        self._acted: dict[str, int] = {}

    @property
    def writes_observed_generation(self) -> bool:
        """v0.9.0 added status.observedGeneration (and stamps conditions with it)."""
        major, minor = (int(part) for part in self.version.lstrip("v").split(".")[:2])
        return (major, minor) >= (0, 9)

    def reconcile(self) -> None:
        """Sync every LWS."""
        rtype = self.store.registry.by_key(KEY)
        if rtype is None:
            return
        for lws in self.store.list(rtype):
            if self._react(lws):
                self._sync(rtype, lws)

    def _react(self, lws: dict) -> bool:
        """Whether the controller acts on this generation now (after `reaction_delay` since it first appeared)."""
        uid, generation = lws["metadata"]["uid"], int(lws["metadata"].get("generation", 1))
        if self._acted.get(uid) == generation or self.reaction_delay <= 0:
            self._acted[uid] = generation
            return True
        seen = self._first_seen.get(uid)
        if seen is None or seen[0] != generation:
            self._first_seen[uid] = (generation, time.monotonic())
            return False
        if time.monotonic() - seen[1] < self.reaction_delay:
            return False
        self._acted[uid] = generation
        return True

    def _revision(self, lws: dict) -> str:
        """getOrCreateRevisionIfNonExist + getUpdatedRevision: the key of the revision matching the current template,
        created (revision number highest + 1) when none does."""
        meta = lws["metadata"]
        data = patch(lws)
        revisions = [
            r
            for r in self.store.list("controllerrevisions", meta["namespace"], label=f"{PREFIX}/name={meta['name']}")
            if any(ref.get("uid") == meta["uid"] for ref in r["metadata"].get("ownerReferences", []))
        ]
        for revision in sorted(revisions, key=lambda r: -r.get("revision", 0)):
            if revision.get("data") == data:
                return revision["metadata"]["labels"][REVISION_KEY]
        number = max((r.get("revision", 0) for r in revisions), default=0) + 1
        created = self.store.create(
            "controllerrevisions", new_revision(lws, number), meta["namespace"], manager=self.name
        )
        key = created["metadata"]["labels"][REVISION_KEY]
        why = "for updated LWS" if revisions else "for a newly created LeaderWorkerSet"
        record(self.store, lws, "Normal", "CreatingRevision", f"Creating revision with key {key} {why}", self.name)
        return key

    def _truncate(self, lws: dict, key: str) -> None:
        """TruncateRevisions: once the update is done, only the current revision stays."""
        meta = lws["metadata"]
        for revision in self.store.list(
            "controllerrevisions", meta["namespace"], label=f"{PREFIX}/name={meta['name']}"
        ):
            if revision["metadata"]["labels"].get(REVISION_KEY) != key:
                with contextlib.suppress(ApiError):
                    self.store.delete("controllerrevisions", revision["metadata"]["name"], meta["namespace"])

    def _sync(self, rtype, lws: dict) -> None:  # ResourceType
        meta, spec = lws["metadata"], lws["spec"]
        name, ns = meta["name"], meta["namespace"]
        replicas = spec.get("replicas", 1)
        size = spec.get("leaderWorkerTemplate", {}).get("size", 1)
        current = self._revision(lws)
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
            if policy in RECREATING and index < replicas:
                self._handle_restart(lws, index, members, size, policy)
        self._roll(lws, groups, current, replicas, size)
        pods = self.store.list("pods", ns, label=f"{PREFIX}/name={name}")
        existing = {p["metadata"]["name"]: p for p in pods}
        startup = spec.get("startupPolicy", "LeaderCreated")
        for index in range(replicas):
            leader_name = f"{name}-{index}"
            if leader_name not in existing:
                # Foreground deletion: upstream's leader is gone only once its worker StatefulSet's pods are, so a
                # new leader never meets a terminating worker of the old group (which would recreate it again).
                if not any(p["metadata"]["labels"].get(f"{PREFIX}/group-index") == str(index) for p in pods):
                    self._create_pod(lws, index, 0, size, current)
                continue
            leader = existing[leader_name]
            if _key(leader) != current or leader["metadata"].get("deletionTimestamp"):
                continue
            if startup == "LeaderReady" and not _ready(leader):
                continue
            for worker in range(1, size):
                if f"{name}-{index}-{worker}" not in existing:
                    self._create_pod(lws, index, worker, size, current)
        self._status(rtype, lws, current, replicas, size)

    def _handle_restart(self, lws: dict, index: int, members: list[dict], size: int, policy: str) -> None:
        """handleRestartPolicy: a restarted container or a deleted pod of the group deletes its leader (here: the
        whole group); RecreateGroupAfterStart waits while the group is incomplete or a pod is Pending."""
        live = [p for p in members if not p["metadata"].get("deletionTimestamp")]
        leader = next((p for p in members if p["metadata"]["labels"].get(f"{PREFIX}/worker-index") == "0"), None)
        if leader is None or leader["metadata"].get("deletionTimestamp"):
            return
        # A worker from an older template is about to be replaced; it does not recreate the new group.
        triggers = [
            p for p in members if (_restarted(p) or p["metadata"].get("deletionTimestamp")) and _key(p) == _key(leader)
        ]
        if not triggers:
            return
        if policy == "RecreateGroupAfterStart" and (
            len(members) != size or any(p.get("status", {}).get("phase", "Pending") == "Pending" for p in members)
        ):
            return
        pod = triggers[0]["metadata"]["name"]
        self._delete_group(
            live,
            lws,
            f"Worker pod {pod} failed, deleted leader pod {leader['metadata']['name']} to recreate group {index}",
        )

    def _roll(self, lws: dict, groups: dict[int, list[dict]], current: str, replicas: int, size: int) -> None:
        """Recreate outdated groups from the highest index down, at most maxUnavailable groups down at once."""
        rolling = lws["spec"].get("rolloutStrategy", {}).get("rollingUpdateConfiguration", {})
        partition, max_unavailable = rolling.get("partition", 0), rolling.get("maxUnavailable", 1)
        outdated = sorted(
            (
                i
                for i, members in groups.items()
                if i < replicas and i >= partition and any(_key(p) != current for p in members)
            ),
            reverse=True,
        )
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
        self.store.create(
            "services",
            {
                "metadata": {
                    "name": meta["name"],
                    "namespace": meta["namespace"],
                    "ownerReferences": [self._owner(lws)],
                },
                "spec": {
                    "clusterIP": "None",
                    "publishNotReadyAddresses": True,
                    "selector": {f"{PREFIX}/name": meta["name"]},
                },
            },
            meta["namespace"],
            manager=self.name,
        )

    @staticmethod
    def _owner(lws: dict) -> dict:
        return {
            "apiVersion": lws["apiVersion"],
            "kind": "LeaderWorkerSet",
            "name": lws["metadata"]["name"],
            "uid": lws["metadata"]["uid"],
            "controller": True,
            "blockOwnerDeletion": True,
        }

    def _create_pod(self, lws: dict, group: int, worker: int, size: int, current: str) -> None:
        meta, lwt = lws["metadata"], lws["spec"].get("leaderWorkerTemplate", {})
        name, ns = meta["name"], meta["namespace"]
        template = copy.deepcopy(
            lwt.get("leaderTemplate") if worker == 0 and lwt.get("leaderTemplate") else lwt.get("workerTemplate", {})
        )
        pod_name = f"{name}-{group}" if worker == 0 else f"{name}-{group}-{worker}"
        group_key = hashlib.sha1(f"{ns}/{name}-{group}".encode()).hexdigest()
        labels = dict(template.get("metadata", {}).get("labels", {}))
        labels.update(
            {
                f"{PREFIX}/name": name,
                f"{PREFIX}/group-index": str(group),
                f"{PREFIX}/worker-index": str(worker),
                f"{PREFIX}/template-revision-hash": current,
                f"{PREFIX}/group-key": group_key,
            }
        )
        annotations = dict(template.get("metadata", {}).get("annotations", {}))
        annotations[f"{PREFIX}/size"] = str(size)
        if worker:
            annotations[f"{PREFIX}/leader-name"] = f"{name}-{group}"
        spec = template.get("spec", {})
        env = [
            {"name": "LWS_LEADER_ADDRESS", "value": f"{name}-{group}.{name}.{ns}"},
            {"name": "LWS_GROUP_SIZE", "value": str(size)},
            {"name": "LWS_WORKER_INDEX", "value": str(worker)},
        ]
        for container in spec.get("containers", []) + spec.get("initContainers", []):
            container["env"] = env + [
                e
                for e in container.get("env", [])
                if e["name"] not in {"LWS_LEADER_ADDRESS", "LWS_GROUP_SIZE", "LWS_WORKER_INDEX"}
            ]
        spec["hostname"] = pod_name
        spec["subdomain"] = name
        topology = meta.get("annotations", {}).get(f"{PREFIX}/exclusive-topology")
        if topology:
            affinity = spec.setdefault("affinity", {})
            affinity.setdefault("podAffinity", {}).setdefault(
                "requiredDuringSchedulingIgnoredDuringExecution", []
            ).append(
                {
                    "labelSelector": {
                        "matchExpressions": [{"key": f"{PREFIX}/group-key", "operator": "In", "values": [group_key]}]
                    },
                    "topologyKey": topology,
                }
            )
            affinity.setdefault("podAntiAffinity", {}).setdefault(
                "requiredDuringSchedulingIgnoredDuringExecution", []
            ).append(
                {
                    "labelSelector": {
                        "matchExpressions": [
                            {"key": f"{PREFIX}/group-key", "operator": "Exists"},
                            {"key": f"{PREFIX}/group-key", "operator": "NotIn", "values": [group_key]},
                        ]
                    },
                    "topologyKey": topology,
                }
            )
        try:
            self.store.create(
                "pods",
                {
                    "metadata": {
                        "name": pod_name,
                        "namespace": ns,
                        "labels": labels,
                        "annotations": annotations,
                        "ownerReferences": [self._owner(lws)],
                    },
                    "spec": spec,
                },
                ns,
                manager=self.name,
            )
        except ApiError:
            return
        record(self.store, lws, "Normal", "CreatedPod", f"Created pod {pod_name}", self.name)

    def _status(self, rtype, lws: dict, current: str, replicas: int, size: int) -> None:
        """updateStatus/updateConditions: counts per existing leader, then the one condition they call for."""
        meta, spec = lws["metadata"], lws["spec"]
        partition = spec.get("rolloutStrategy", {}).get("rollingUpdateConfiguration", {}).get("partition", 0)
        everything = self.store.list("pods", meta["namespace"], label=f"{PREFIX}/name={meta['name']}")
        groups: dict[int, list[dict]] = {}
        for pod in everything:
            groups.setdefault(int(pod["metadata"]["labels"][f"{PREFIX}/group-index"]), []).append(pod)
        ready = updated = ready_in_set = current_in_partition = updated_in_partition = ready_updated = 0
        for index, members in groups.items():
            if not any(p["metadata"]["labels"].get(f"{PREFIX}/worker-index") == "0" for p in members):
                continue
            is_ready = self._group_ready(members, size)
            is_updated = all(_key(p) == current for p in members)
            ready += is_ready
            updated += is_updated
            in_partition = partition <= index < replicas
            current_in_partition += in_partition
            updated_in_partition += in_partition and is_updated
            ready_in_set += index < replicas and is_ready
            ready_updated += in_partition and is_ready and is_updated
        if updated_in_partition < current_in_partition:
            wanted = ["UpdateInProgress", "Progressing"]
        elif ready_in_set == replicas and ready_updated == current_in_partition:
            wanted = ["Available"]
        else:
            wanted = ["Progressing"]
        generation = int(meta.get("generation", 1)) if self.writes_observed_generation else None
        stamp = now()

        def write(obj: dict) -> None:
            status = obj.setdefault("status", {})
            status.update(
                replicas=len([i for i in groups if i < replicas]),
                readyReplicas=ready,
                updatedReplicas=updated,
                hpaPodSelector=f"{PREFIX}/name={meta['name']},{PREFIX}/worker-index=0",
            )
            if generation is not None:
                status["observedGeneration"] = generation
            set_conditions(status.setdefault("conditions", []), wanted, generation, stamp)

        self.store.update(rtype, meta["name"], meta["namespace"], write, subresource="status", manager=self.name)
        if partition == 0 and ready_updated == replicas:
            self._truncate(lws, current)
