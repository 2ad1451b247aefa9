"""The two names a blue-green upgrade alternates between, and the rendered set recoloured to one of them (pure).

The rendered LeaderWorkerSet is "blue" (the profile's name); a blue-green upgrade creates the other colour beside it
("<name>-green", or blue again when green is live), switches the API Service's selector to it and removes the old
one. Which colour serves is read from the live API Service's selector, so every later command (up, status, down)
works on the colour that is live. See targets/kubernetes/bluegreen.py.
"""

from __future__ import annotations

import copy
from typing import Any

from k3deploy.kobject import KubeObject
from k3deploy.lws import GREEN_SUFFIX, NAME_LABEL, colours
from k3deploy.traffic_gate import selects_gated, without_gate

__all__ = ["GREEN_SUFFIX", "colours"]

PREVIEW_SUFFIX = "-preview"


def other(base: str, live: str) -> str:
    """The colour a blue-green upgrade creates beside `live`."""
    blue, green = colours(base)
    return blue if live == green else green


def preview_name(lws_name: str) -> str:
    """The Service a new group is smoke-tested through before the switch (selecting only its leader)."""
    return lws_name + PREVIEW_SUFFIX


def _renamed(value: Any, base: str, name: str) -> Any:
    """Every `leaderworkerset.sigs.k8s.io/name: <base>` selector or label in `value` pointed at `name`."""
    if isinstance(value, dict):
        return {k: (name if k == NAME_LABEL and v == base else _renamed(v, base, name)) for k, v in value.items()}
    if isinstance(value, list):
        return [_renamed(v, base, name) for v in value]
    return value


def recoloured(objects: list[KubeObject], base: str, name: str) -> list[KubeObject]:
    """The set with its LeaderWorkerSet `base` named `name` and every selector of it by name (API Service, pod
    affinity, PodDisruptionBudget) following; unchanged when `name` is `base`."""
    if name == base:
        return objects
    out = []
    for obj in objects:
        obj = _renamed(copy.deepcopy(obj), base, name)
        if obj.get("kind") == "LeaderWorkerSet" and obj["metadata"]["name"] == base:
            obj["metadata"]["name"] = name
        out.append(obj)
    return out


def selected(service: KubeObject | None) -> str | None:
    """The LeaderWorkerSet a Service's selector picks, if it picks one by name."""
    picked: str | None = ((service or {}).get("spec") or {}).get("selector", {}).get(NAME_LABEL)
    return picked


def preview_service(api_service: KubeObject, lws_name: str) -> KubeObject:
    """A copy of the API Service named after `lws_name` that selects only that set's leaders, gated or not: it is how
    the new group is reached before its gate (k3deploy/traffic_gate.py)."""
    out = copy.deepcopy(api_service)
    out["metadata"]["name"] = preview_name(lws_name)
    out["spec"]["selector"] = {**without_gate(out["spec"]["selector"]), NAME_LABEL: lws_name}
    return out


def gated_service(objects: list[KubeObject]) -> bool:
    """Whether the rendered API Service admits only leaders a gate marked (smoke.gate_traffic)."""
    lws = lws_of(objects)
    service = api_service_of(objects, lws["metadata"]["name"]) if lws is not None else None
    return service is not None and selects_gated((service.get("spec") or {}).get("selector"))


def lws_of(objects: list[KubeObject]) -> KubeObject | None:
    """The LeaderWorkerSet of a rendered set."""
    return next((o for o in objects if o.get("kind") == "LeaderWorkerSet"), None)


def api_service_of(objects: list[KubeObject], lws_name: str) -> KubeObject | None:
    """The Service of a rendered set that selects the LeaderWorkerSet's leaders."""
    return next((o for o in objects if o.get("kind") == "Service" and selected(o) == lws_name), None)
