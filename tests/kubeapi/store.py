"""The object store behind the test API server: objects, resourceVersions, watch history, garbage collection.

Every write goes through here (HTTP handlers, simulated controllers and tests alike), so resourceVersion,
generation, managedFields, watch events and owner-reference garbage collection behave the same for all.
"""

from __future__ import annotations

import contextlib
import copy
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from tests.kubeapi import apply as ssa
from tests.kubeapi.errors import ApiError, FieldError, GoValue, invalid
from tests.kubeapi.registry import Registry, ResourceType, crd_types
from tests.kubeapi.selectors import field_selector, label_selector

ObjKey = tuple[str, str]  # (namespace or "", name)
#: Admission of one HTTP write (see admission.py): admit(new, old, applied=...) mutates or raises ApiError.
Admit = Callable[..., None]


@dataclass(frozen=True)
class WatchEvent:
    """One change: its resourceVersion, ADDED/MODIFIED/DELETED, the type's (group, plural), new and old objects,
    and when it happened (time.monotonic(), for benchmarks that time reactions to it).
    """

    rv: int
    type: str
    key: tuple[str, str]
    obj: dict
    old: dict | None
    at: float = field(default_factory=time.monotonic)


def _spec_part(obj: dict) -> dict:
    return {k: v for k, v in obj.items() if k not in ("metadata", "status", "apiVersion", "kind")}


class Store:
    """Thread-safe in-memory objects keyed by type, namespace and name, with a bounded change history."""

    def __init__(self, registry: Registry, history_limit: int = 1000) -> None:
        self.registry = registry
        self.lock = threading.RLock()
        self.changed = threading.Condition(self.lock)
        self.rv = 0
        self.objects: dict[tuple[str, str], dict[ObjKey, dict]] = {}
        self.history: deque[WatchEvent] = deque(maxlen=history_limit)
        #: Oldest resourceVersion a watch may resume from (older ones get 410 Gone).
        self.compacted_rv = 0
        self.logs: dict[tuple[str, str, str], list[str]] = {}
        self.previous_logs: dict[tuple[str, str, str], list[str]] = {}
        #: Seconds a deleted pod stays (with deletionTimestamp) before it is removed; the kubelet removes it.
        self.pod_termination_delay = 0.0
        #: Dependents of a deleted owner are left to the garbage collector controller (asynchronous, as in a
        #: cluster) instead of being deleted with their owner.
        self.async_gc = False
        self.closed = False
        #: Bumped by break_watches(); open watches end the way `watch_break_mode` says.
        self.watch_breaks = 0
        self.watch_break_mode = "drop"

    # ----- reading -----------------------------------------------------------------------------------------
    def rtype(self, ref: str | ResourceType) -> ResourceType:
        """Resolve a type reference (plural, kind, `plural.group` or a ResourceType)."""
        return self.registry.resolve(ref)

    def get(self, ref: str | ResourceType, name: str, namespace: str | None = None) -> dict | None:
        """A copy of one object, or None."""
        rtype = self.rtype(ref)
        with self.lock:
            obj = self.objects.get(rtype.key, {}).get((namespace or "" if rtype.namespaced else "", name))
            return copy.deepcopy(obj) if obj is not None else None

    def list(
        self, ref: str | ResourceType, namespace: str | None = None, label: str | None = None, field: str | None = None
    ) -> list[dict]:
        """Copies of the matching objects, oldest first (namespace None: all namespaces)."""
        rtype = self.rtype(ref)
        by_label, by_field = label_selector(label), field_selector(field)
        with self.lock:
            items = [
                o
                for (ns, _), o in self.objects.get(rtype.key, {}).items()
                if (namespace is None or not rtype.namespaced or ns == namespace) and by_label(o) and by_field(o)
            ]
            items.sort(key=lambda o: int(o["metadata"]["resourceVersion"]))
            return copy.deepcopy(items)

    # ----- writing -----------------------------------------------------------------------------------------
    def _check_namespace(self, rtype: ResourceType, namespace: str, name: str = "", creating: bool = True) -> None:
        if rtype.namespaced:
            if not namespace:
                raise ApiError.bad_request("the server could not find the requested resource: namespace required")
            ns = self.objects.get(("", "namespaces"), {}).get(("", namespace))
            if ns is None:
                raise ApiError(
                    404, f'namespaces "{namespace}" not found', details={"name": namespace, "kind": "namespaces"}
                )
            if ns["metadata"].get("deletionTimestamp") and creating:
                # kubernetes staging/src/k8s.io/apiserver/pkg/admission/plugin/namespace/lifecycle/admission.go
                raise ApiError(
                    403,
                    f'{rtype.group_resource} "{name}" is forbidden: unable to create new content in '
                    f"namespace {namespace} because it is being terminated",
                    details={
                        "name": name,
                        "group": rtype.group,
                        "kind": rtype.plural,
                        "causes": [
                            {
                                "reason": "NamespaceTerminating",
                                "field": "metadata.namespace",
                                "message": f"namespace {namespace} is being terminated",
                            }
                        ],
                    },
                )

    def _commit(self, rtype: ResourceType, obj: dict, old: dict | None, event: str, dry_run: bool) -> dict:
        """Assign a resourceVersion, store (unless dry run), record the event and run the server-side hooks."""
        meta = obj["metadata"]
        key = (meta.get("namespace", "") if rtype.namespaced else "", meta["name"])
        if dry_run:
            meta["resourceVersion"] = (
                (old or {}).get("metadata", {}).get("resourceVersion", "0") if event != "ADDED" else "0"
            )
            return copy.deepcopy(obj)
        self.rv += 1
        meta["resourceVersion"] = str(self.rv)
        bucket = self.objects.setdefault(rtype.key, {})
        if event == "DELETED":
            bucket.pop(key, None)
        else:
            bucket[key] = obj
        self.history.append(WatchEvent(self.rv, event, rtype.key, copy.deepcopy(obj), old))
        if len(self.history) == self.history.maxlen:
            self.compacted_rv = max(self.compacted_rv, self.history[0].rv - 1)
        self._after_write(rtype, obj, event)
        self.changed.notify_all()
        return copy.deepcopy(obj)

    def _new_metadata(self, rtype: ResourceType, obj: dict, namespace: str | None) -> dict:
        meta = obj.setdefault("metadata", {})
        if not meta.get("name") and meta.get("generateName"):
            meta["name"] = meta["generateName"] + uuid.uuid4().hex[:5]
        if not meta.get("name"):
            raise ApiError.invalid(rtype, "", "metadata.name", "Required value: name or generateName is required")
        if rtype.namespaced:
            meta["namespace"] = namespace or meta.get("namespace") or "default"
        else:
            meta.pop("namespace", None)
        meta["uid"] = str(uuid.uuid4())
        meta["creationTimestamp"] = ssa.now()
        meta["generation"] = 1
        for key in ("resourceVersion", "deletionTimestamp", "selfLink"):
            meta.pop(key, None)
        return meta

    def create(
        self,
        ref: str | ResourceType,
        obj: dict,
        namespace: str | None = None,
        *,
        manager: str = "test",
        dry_run: bool = False,
        version: str | None = None,
        admit: Admit | None = None,
    ) -> dict:
        """POST semantics: 409 if it exists, 404 if the namespace does not; `admit` for writes from clients."""
        rtype = self.rtype(ref)
        obj = copy.deepcopy(obj)
        obj["apiVersion"], obj["kind"] = rtype.api_version(version), rtype.kind
        with self.lock:
            meta = self._new_metadata(rtype, obj, namespace)
            self._check_namespace(rtype, meta.get("namespace", ""), meta["name"])
            if self.get(rtype, meta["name"], meta.get("namespace")) is not None:
                raise ApiError.already_exists(rtype, meta["name"])
            self._defaults(rtype, obj)
            if admit is not None:
                admit(obj, None)
            obj["metadata"].pop("managedFields", None)
            ssa.record_update(None, obj, rtype, manager, None, obj["apiVersion"])
            return self._commit(rtype, obj, None, "ADDED", dry_run)

    def _finish_update(self, rtype: ResourceType, old: dict, new: dict, dry_run: bool) -> dict:
        """Carry server-owned metadata over, bump generation on spec change, commit unless nothing changed."""
        meta, old_meta = new.setdefault("metadata", {}), old["metadata"]
        for key in ("uid", "creationTimestamp", "namespace", "name", "deletionTimestamp", "generation"):
            if key in old_meta:
                meta[key] = old_meta[key]
        meta["resourceVersion"] = old_meta["resourceVersion"]
        self._validate_update(rtype, old, new)
        if _spec_part(new) != _spec_part(old):
            meta["generation"] = old_meta.get("generation", 1) + 1
        if new == old:
            return copy.deepcopy(old)
        if meta.get("deletionTimestamp") and not meta.get("finalizers") and rtype.plural not in ("pods", "namespaces"):
            return self._commit(rtype, new, old, "DELETED", dry_run)
        return self._commit(rtype, new, old, "MODIFIED", dry_run)

    def _live(self, rtype: ResourceType, name: str, namespace: str | None) -> dict:
        live = self.get(rtype, name, namespace if rtype.namespaced else None)
        if live is None:
            raise ApiError.not_found(rtype, name)
        return live

    def replace(
        self,
        ref: str | ResourceType,
        obj: dict,
        namespace: str | None = None,
        *,
        subresource: str | None = None,
        manager: str = "test",
        dry_run: bool = False,
        admit: Admit | None = None,
    ) -> dict:
        """PUT semantics: optimistic concurrency on metadata.resourceVersion; status only via the subresource."""
        rtype = self.rtype(ref)
        with self.lock:
            name = obj.get("metadata", {}).get("name", "")
            old = self._live(rtype, name, namespace or obj.get("metadata", {}).get("namespace"))
            sent_rv = obj.get("metadata", {}).get("resourceVersion")
            if sent_rv and sent_rv != old["metadata"]["resourceVersion"]:
                raise ApiError.stale(rtype, name)
            new = self._merge_scope(rtype, old, copy.deepcopy(obj), subresource)
            if admit is not None:
                admit(new, old)
            ssa.record_update(old, new, rtype, manager, subresource, new["apiVersion"])
            return self._finish_update(rtype, old, new, dry_run)

    def _merge_scope(self, rtype: ResourceType, old: dict, new: dict, subresource: str | None) -> dict:
        """A main-resource write keeps the live status; a status write keeps everything but status."""
        if subresource == "status":
            merged = copy.deepcopy(old)
            merged["status"] = new.get("status", {})
            return merged
        new["apiVersion"], new["kind"] = old["apiVersion"], old["kind"]
        new.setdefault("metadata", {})["managedFields"] = old["metadata"].get("managedFields", [])
        if rtype.has_status:
            if "status" in old:
                new["status"] = old["status"]
            else:
                new.pop("status", None)
        return new

    def update(
        self,
        ref: str | ResourceType,
        name: str,
        namespace: str | None,
        mutate: Callable[[dict], None],
        *,
        subresource: str | None = None,
        manager: str = "test",
        dry_run: bool = False,
        admit: Admit | None = None,
    ) -> dict:
        """Read-modify-write under the store lock (merge patches and controllers use this)."""
        rtype = self.rtype(ref)
        with self.lock:
            old = self._live(rtype, name, namespace)
            new = copy.deepcopy(old)
            mutate(new)
            new = self._merge_scope(rtype, old, new, subresource)
            if admit is not None:
                admit(new, old)
            ssa.record_update(old, new, rtype, manager, subresource, new["apiVersion"])
            return self._finish_update(rtype, old, new, dry_run)

    def apply(
        self,
        ref: str | ResourceType,
        config: dict,
        namespace: str | None = None,
        *,
        manager: str,
        force: bool = False,
        subresource: str | None = None,
        dry_run: bool = False,
        admit: Admit | None = None,
    ) -> dict:
        """Server-side apply: create when missing, field ownership, conflicts (409 unless force), removals."""
        rtype = self.rtype(ref)
        meta = config.get("metadata") or {}
        if (
            config.get("apiVersion") not in [rtype.api_version(v) for v in rtype.versions]
            or config.get("kind") != rtype.kind
        ):
            raise ApiError.bad_request(f"apply config must be a {rtype.kind} of {rtype.api_version()}")
        with self.lock:
            live = self.get(rtype, meta.get("name", ""), namespace if rtype.namespaced else None)
            if live is None:
                if subresource:
                    raise ApiError.not_found(rtype, meta.get("name", ""))
                self._check_namespace(rtype, namespace or "", meta.get("name", ""))
                merged = ssa.apply(None, config, rtype, manager, force, None, config["apiVersion"])
                merged["metadata"]["name"] = meta.get("name")
                self._new_metadata(rtype, merged, namespace)
                self._defaults(rtype, merged)
                if admit is not None:
                    admit(merged, None, applied=True)
                return self._commit(rtype, merged, None, "ADDED", dry_run)
            sent_rv = meta.get("resourceVersion")
            if sent_rv and sent_rv != live["metadata"]["resourceVersion"]:
                raise ApiError.stale(rtype, meta["name"])
            merged = ssa.apply(live, config, rtype, manager, force, subresource, config["apiVersion"])
            if admit is not None:
                admit(merged, live, applied=True)
            return self._finish_update(rtype, live, merged, dry_run)

    def delete(
        self,
        ref: str | ResourceType,
        name: str,
        namespace: str | None = None,
        *,
        dry_run: bool = False,
        propagation: str = "Background",
        grace: float | None = None,
    ) -> dict:
        """Delete (pods linger `pod_termination_delay` seconds with a deletionTimestamp); dependents are collected."""
        rtype = self.rtype(ref)
        with self.lock:
            live = self._live(rtype, name, namespace)
            delay = self.pod_termination_delay if grace is None else grace
            if rtype.plural == "pods" and delay > 0 and not dry_run and live.get("spec", {}).get("nodeName"):
                if not live["metadata"].get("deletionTimestamp"):
                    new = copy.deepcopy(live)
                    new["metadata"]["deletionTimestamp"] = ssa.now()
                    new["metadata"]["deletionGracePeriodSeconds"] = int(delay)
                    return self._commit(rtype, new, live, "MODIFIED", False)
                return live
            if rtype.key == ("", "namespaces") and not dry_run:
                # The namespace controller empties it, then finalizes it (pkg/controller/namespace/deletion).
                if live["metadata"].get("deletionTimestamp"):
                    return live
                new = copy.deepcopy(live)
                new["metadata"]["deletionTimestamp"] = ssa.now()
                new.setdefault("status", {})["phase"] = "Terminating"
                return self._commit(rtype, new, live, "MODIFIED", False)
            if live["metadata"].get("finalizers") and not dry_run:
                new = copy.deepcopy(live)
                new["metadata"].setdefault("deletionTimestamp", ssa.now())
                return self._commit(rtype, new, live, "MODIFIED", False)
            gone = self._commit(rtype, copy.deepcopy(live), live, "DELETED", dry_run)
            if not dry_run and propagation != "Orphan" and not self.async_gc:
                self._collect(live["metadata"]["uid"])
            return gone

    def remove_now(self, ref: str | ResourceType, name: str, namespace: str | None = None) -> None:
        """Remove an object at once, whatever its grace period (the kubelet finishing a pod's termination)."""
        rtype = self.rtype(ref)
        with self.lock:
            live = self.get(rtype, name, namespace)
            if live is not None:
                self._commit(rtype, live, live, "DELETED", False)
                if not self.async_gc:
                    self._collect(live["metadata"]["uid"])

    def orphans(self) -> list[tuple[ResourceType, dict]]:
        """Objects with owner references whose every owner is gone (what the garbage collector deletes)."""
        with self.lock:
            live_uids = {o["metadata"]["uid"] for bucket in self.objects.values() for o in bucket.values()}
            found = []
            for key, bucket in self.objects.items():
                rtype = self.registry.by_key(key)
                for obj in bucket.values():
                    owners = [o for o in obj["metadata"].get("ownerReferences") or [] if o.get("uid")]
                    if rtype is not None and owners and not any(o["uid"] in live_uids for o in owners):
                        found.append((rtype, copy.deepcopy(obj)))
            return found

    def _collect(self, owner_uid: str) -> None:
        """Background cascading deletion: remove objects whose every owner is gone."""
        live_uids = {o["metadata"]["uid"] for bucket in self.objects.values() for o in bucket.values()}
        for key, bucket in list(self.objects.items()):
            rtype = self.registry.by_key(key)
            for (ns, name), obj in list(bucket.items()):
                owners = obj["metadata"].get("ownerReferences") or []
                if (
                    any(o.get("uid") == owner_uid for o in owners)
                    and not any(o.get("uid") in live_uids for o in owners)
                    and rtype is not None
                ):
                    with contextlib.suppress(ApiError):
                        self.delete(rtype, name, ns or None)

    # ----- server-side behaviour -------------------------------------------------------------------------
    def _defaults(self, rtype: ResourceType, obj: dict) -> None:
        if rtype.key == ("", "namespaces"):
            obj["status"] = {"phase": "Active"}
            obj.setdefault("spec", {}).setdefault("finalizers", ["kubernetes"])
            obj["metadata"].setdefault("labels", {})["kubernetes.io/metadata.name"] = obj["metadata"]["name"]
        elif rtype.key == ("", "pods"):
            obj.setdefault("status", {"phase": "Pending", "qosClass": "BestEffort"})
            spec = obj.setdefault("spec", {})
            spec.setdefault("restartPolicy", "Always")
            spec.setdefault("schedulerName", "default-scheduler")
        elif rtype.key == ("apiextensions.k8s.io", "customresourcedefinitions"):
            names = obj["spec"]["names"]
            obj["status"] = {
                "acceptedNames": names,
                "storedVersions": [v["name"] for v in obj["spec"]["versions"] if v.get("storage")],
                "conditions": [
                    {"type": t, "status": "True", "reason": r, "message": m, "lastTransitionTime": ssa.now()}
                    for t, r, m in (
                        ("NamesAccepted", "NoConflicts", "no conflicts found"),
                        ("Established", "InitialNamesAccepted", "the initial names have been accepted"),
                    )
                ],
            }
        elif rtype.key == ("", "persistentvolumeclaims"):
            obj.setdefault("status", {"phase": "Pending"})
            # plugin/pkg/admission/storage/storageobjectinuseprotection: every claim gets the protection finalizer.
            finalizers = obj["metadata"].setdefault("finalizers", [])
            if "kubernetes.io/pvc-protection" not in finalizers:
                finalizers.append("kubernetes.io/pvc-protection")

    def _validate_update(self, rtype: ResourceType, old: dict, new: dict) -> None:
        if rtype.key == ("batch", "jobs"):
            for part in ("template", "selector", "completions"):
                if old.get("spec", {}).get(part) != new.get("spec", {}).get(part):
                    # apivalidation.ValidateImmutableField prints the new value with Go's %#v; abridged here.
                    shown = {"template": "core.PodTemplateSpec{...}", "selector": "&v1.LabelSelector{...}"}
                    raise invalid(
                        rtype,
                        old["metadata"]["name"],
                        [
                            FieldError(
                                "Invalid",
                                f"spec.{part}",
                                GoValue(shown.get(part, str(new["spec"].get(part)))),
                                "field is immutable",
                            )
                        ],
                    )

    def _after_write(self, rtype: ResourceType, obj: dict, event: str) -> None:
        if rtype.key == ("apiextensions.k8s.io", "customresourcedefinitions"):
            declared = crd_types(obj)
            if event == "DELETED":
                self.registry.remove(declared.key)
                self.objects.pop(declared.key, None)
            else:
                self.registry.add(declared)
        elif rtype.key == ("", "pods") and event == "DELETED":
            for logs in (self.logs, self.previous_logs):
                for key in [k for k in logs if k[:2] == (obj["metadata"]["namespace"], obj["metadata"]["name"])]:
                    del logs[key]
        elif rtype.key == ("", "namespaces") and event == "DELETED":
            ns = obj["metadata"]["name"]
            for key, bucket in list(self.objects.items()):
                for objkey in [k for k in bucket if k[0] == ns]:
                    gone = bucket[objkey]
                    typ = self.registry.by_key(key)
                    if typ is not None:
                        self._commit(typ, copy.deepcopy(gone), gone, "DELETED", False)

    def compact(self) -> None:
        """Forget the change history (as etcd compaction does): resuming a watch from before now gets 410 Gone."""
        with self.lock:
            self.history.clear()
            self.compacted_rv = self.rv

    def break_watches(self, how: str = "drop") -> None:
        """End every open watch: "drop" (connection cut), "close" (clean end of stream) or "expire" (history
        compacted and an in-stream ERROR 410 Expired, as when etcd compacts under a watch).
        """
        if how not in ("drop", "close", "expire"):
            raise ValueError(f"unknown watch break {how!r}")
        with self.lock:
            if how == "expire":
                self.compact()
            self.watch_break_mode = how
            self.watch_breaks += 1
            self.changed.notify_all()

    def close(self) -> None:
        """Wake and end every watch (server shutdown)."""
        with self.lock:
            self.closed = True
            self.changed.notify_all()
