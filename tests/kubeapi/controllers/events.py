"""Recording core/v1 Events about objects, with the count/lastTimestamp de-duplication the real recorder does."""

from __future__ import annotations

import uuid

from tests.kubeapi.apply import now
from tests.kubeapi.store import Store


def record(
    store: Store, obj: dict, type_: str, reason: str, message: str, component: str, host: str | None = None
) -> None:
    """Record (or bump the count of) an Event about `obj`."""
    meta = obj["metadata"]
    namespace = meta.get("namespace") or "default"
    involved = {
        "apiVersion": obj.get("apiVersion", "v1"),
        "kind": obj.get("kind", ""),
        "name": meta["name"],
        "namespace": meta.get("namespace", ""),
        "uid": meta.get("uid", ""),
        "resourceVersion": meta.get("resourceVersion", ""),
    }
    stamp = now()
    with store.lock:
        for event in store.list("events", namespace, field=f"involvedObject.uid={meta.get('uid', '')}"):
            if event.get("reason") == reason and event.get("message") == message:

                def bump(ev: dict) -> None:
                    ev["count"] = ev.get("count", 1) + 1
                    ev["lastTimestamp"] = stamp

                store.update("events", event["metadata"]["name"], namespace, bump, manager=component)
                return
        source = {"component": component}
        if host:
            source["host"] = host
        store.create(
            "events",
            {
                "metadata": {"name": f"{meta['name']}.{uuid.uuid4().hex[:16]}", "namespace": namespace},
                "involvedObject": involved,
                "reason": reason,
                "message": message,
                "type": type_,
                "source": source,
                "firstTimestamp": stamp,
                "lastTimestamp": stamp,
                "count": 1,
                "reportingComponent": component,
                "reportingInstance": host or "",
            },
            namespace,
            manager=component,
        )
