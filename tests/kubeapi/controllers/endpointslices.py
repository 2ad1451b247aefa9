"""An EndpointSlice controller: for every Service with a selector, one `discovery.k8s.io/v1` EndpointSlice listing the
pods it selects, with the conditions a proxy or a gateway routes by.

Imitates kubernetes pkg/controller/endpointslice (endpointslice_controller.go syncService) and the reconciler in
staging/src/k8s.io/endpointslice (reconciler.go; utils.go podToEndpoint; util/controller_utils.go
ShouldPodBeInEndpoints):
- a Service without a selector gets no managed slice; one whose selector changes gets its slice rewritten at once
  (the pods of the old selector leave it in the same write);
- a pod is listed once it has an IP and is not terminal (Never: not Failed or Succeeded; OnFailure: not Succeeded);
  terminating pods stay listed (includeTerminating) with `terminating: true`;
- `serving` is the pod's Ready condition; `ready` is `serving and not terminating`, or always True when the Service
  publishes not-ready addresses;
- the slice is labelled `kubernetes.io/service-name` and `endpointslice.kubernetes.io/managed-by:
  endpointslice-controller.k8s.io`, owned by the Service (so it goes with it), named `<service>-<5 characters>`;
  its ports are the Service's with a named targetPort resolved on the pods' containers;
- an unchanged slice is not rewritten (the reconciler compares before it updates).

Simplified: one slice per Service and address type IPv4 only (upstream splits at maxEndpointsPerSlice, 100); no
topology hints or zones.
"""

from __future__ import annotations

import contextlib
import hashlib

from tests.kubeapi.controllers.base import Controller
from tests.kubeapi.errors import ApiError
from tests.kubeapi.selectors import match_label_selector

PLURAL = "endpointslices"
SERVICE_NAME_LABEL = "kubernetes.io/service-name"
MANAGED_BY_LABEL = "endpointslice.kubernetes.io/managed-by"
MANAGED_BY = "endpointslice-controller.k8s.io"


def _ready(pod: dict) -> bool:
    return any(
        c.get("type") == "Ready" and c.get("status") == "True"
        for c in (pod.get("status") or {}).get("conditions") or []
    )


def listed(pod: dict) -> bool:
    """ShouldPodBeInEndpoints(pod, includeTerminating=true): an IP, and not terminal for its restart policy."""
    status = pod.get("status") or {}
    if not status.get("podIP") and not status.get("podIPs"):
        return False
    phase, policy = status.get("phase"), (pod.get("spec") or {}).get("restartPolicy", "Always")
    if policy == "Never":
        return phase not in ("Failed", "Succeeded")
    if policy == "OnFailure":
        return phase != "Succeeded"
    return True


def endpoint(pod: dict, service: dict) -> dict:
    """podToEndpoint: the pod's address, conditions, node and reference."""
    meta, spec = pod["metadata"], pod.get("spec") or {}
    serving = _ready(pod)
    terminating = bool(meta.get("deletionTimestamp"))
    ready = bool((service.get("spec") or {}).get("publishNotReadyAddresses")) or (serving and not terminating)
    out = {
        "addresses": [pod["status"]["podIP"]],
        "conditions": {"ready": ready, "serving": serving, "terminating": terminating},
        "targetRef": {"kind": "Pod", "namespace": meta["namespace"], "name": meta["name"], "uid": meta["uid"]},
    }
    if spec.get("nodeName"):
        out["nodeName"] = spec["nodeName"]
    if spec.get("hostname") and spec.get("subdomain") == service["metadata"]["name"]:
        out["hostname"] = spec["hostname"]
    return out


def _find_port(pods: list[dict], target: object) -> int | None:
    """podutil.FindPort: a number as is, a name looked up in the first pod's containers that declares it."""
    if isinstance(target, int):
        return target
    for pod in pods:
        for container in (pod.get("spec") or {}).get("containers") or []:
            for port in container.get("ports") or []:
                if port.get("name") == target:
                    return int(port["containerPort"])
    return None


def _ports(service: dict, pods: list[dict]) -> list[dict]:
    ports = []
    for port in (service.get("spec") or {}).get("ports") or []:
        number = _find_port(pods, port.get("targetPort", port.get("port")))
        if number is not None:
            entry = {"port": number, "protocol": port.get("protocol", "TCP")}
            if port.get("name"):
                entry["name"] = port["name"]
            ports.append(entry)
    return ports


class EndpointSliceController(Controller):
    """Keeps one EndpointSlice per selecting Service in step with the pods."""

    name = "endpointslice-controller"

    def reconcile(self) -> None:
        """Sync every Service's slice."""
        rtype = self.store.registry.by_key(("discovery.k8s.io", PLURAL))
        if rtype is None:
            return
        for service in self.store.list("services"):
            self._sync(service)

    def _sync(self, service: dict) -> None:
        meta = service["metadata"]
        ns, name = meta["namespace"], meta["name"]
        selector = (service.get("spec") or {}).get("selector")
        slices = [
            s
            for s in self.store.list(PLURAL, ns, label=f"{SERVICE_NAME_LABEL}={name}")
            if (s["metadata"].get("labels") or {}).get(MANAGED_BY_LABEL) == MANAGED_BY
        ]
        if not selector or meta.get("deletionTimestamp"):
            for stale in slices:
                self._delete(stale)
            return
        pods = [
            p
            for p in self.store.list("pods", ns)
            if match_label_selector({"matchLabels": selector}, p["metadata"].get("labels") or {}) and listed(p)
        ]
        pods.sort(key=lambda p: p["metadata"]["name"])
        wanted = {
            "addressType": "IPv4",
            "endpoints": [endpoint(p, service) for p in pods],
            "ports": _ports(service, pods),
        }
        suffix = hashlib.sha1(meta["uid"].encode()).hexdigest()[:5]
        slice_name = f"{name[:57]}-{suffix}"
        for stale in (s for s in slices if s["metadata"]["name"] != slice_name):
            self._delete(stale)
        current = next((s for s in slices if s["metadata"]["name"] == slice_name), None)
        if current is None:
            with contextlib.suppress(ApiError):
                self.store.create(
                    PLURAL,
                    {
                        "apiVersion": "discovery.k8s.io/v1",
                        "kind": "EndpointSlice",
                        "metadata": {
                            "name": slice_name,
                            "namespace": ns,
                            "labels": {SERVICE_NAME_LABEL: name, MANAGED_BY_LABEL: MANAGED_BY},
                            "ownerReferences": [
                                {
                                    "apiVersion": "v1",
                                    "kind": "Service",
                                    "name": name,
                                    "uid": meta["uid"],
                                    "controller": True,
                                    "blockOwnerDeletion": True,
                                }
                            ],
                        },
                        **wanted,
                    },
                    ns,
                    manager=self.name,
                )
            return
        if all(current.get(key) == value for key, value in wanted.items()):
            return

        def write(obj: dict) -> None:
            obj.update(wanted)

        self.store.update(PLURAL, slice_name, ns, write, manager=self.name)

    def _delete(self, obj: dict) -> None:
        with contextlib.suppress(ApiError):
            self.store.delete(PLURAL, obj["metadata"]["name"], obj["metadata"]["namespace"])


def ready_endpoints(store: object, namespace: str, service: str) -> list[str]:
    """The pods behind `service` whose endpoint is ready, as its managed slices say (for tests)."""
    slices = store.list(PLURAL, namespace, label=f"{SERVICE_NAME_LABEL}={service}")  # type: ignore[attr-defined]
    return sorted(
        e["targetRef"]["name"]
        for s in slices
        for e in s.get("endpoints") or []
        if (e.get("conditions") or {}).get("ready")
    )
