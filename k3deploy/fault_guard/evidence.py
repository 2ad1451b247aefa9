"""The evidence bundle of one group, before guard deletes anything (pure: objects and log tails in, a document out).

One JSON document per group and action: the decision, every rank's current and previous container log tail, the
pods' events, the ComputeDomains' status and the group's trays' conditions. Bounded: when the document would pass
`max_bytes` the longest log tails are cut from their start (the last lines are the ones that tell) until it fits.
Named by release, group and time (`bundle_name`); the file writer never overwrites (evidence_file.py).
"""

from __future__ import annotations

import datetime
import json
from collections.abc import Iterable, Mapping

from k3deploy.fault_guard.decide import Decision
from k3deploy.kobject import KubeObject

#: Where a cut log tail says it was cut.
CUT_MARK = "[... cut by k3deploy guard to bound the bundle ...]\n"


def bundle_name(release: str, group: int, now: float) -> str:
    """`RELEASE-group-N-YYYYMMDDTHHMMSSZ.json` (UTC)."""
    stamp = datetime.datetime.fromtimestamp(now, datetime.UTC).strftime("%Y%m%dT%H%M%SZ")
    return f"{release}-group-{group}-{stamp}.json"


def _pod_entry(pod: KubeObject, logs: Mapping[tuple[str, str, bool], str]) -> KubeObject:
    meta, spec, status = pod.get("metadata") or {}, pod.get("spec") or {}, pod.get("status") or {}
    name = meta.get("name", "")
    containers = [c.get("name", "") for c in spec.get("containers") or []]
    return {
        "name": name,
        "node": spec.get("nodeName"),
        "phase": status.get("phase"),
        "labels": dict(meta.get("labels") or {}),
        "containerStatuses": status.get("containerStatuses") or [],
        "logs": {
            c: {"current": logs.get((name, c, False), ""), "previous": logs.get((name, c, True), "")}
            for c in containers
        },
    }


def _node_entry(node: KubeObject) -> KubeObject:
    meta, spec, status = node.get("metadata") or {}, node.get("spec") or {}, node.get("status") or {}
    return {
        "name": meta.get("name"),
        "unschedulable": bool(spec.get("unschedulable")),
        "taints": spec.get("taints") or [],
        "annotations": {k: v for k, v in (meta.get("annotations") or {}).items() if k.startswith("k3deploy/")},
        "conditions": status.get("conditions") or [],
    }


def build_bundle(
    *,
    release: str,
    namespace: str,
    decision: Decision,
    now: float,
    pods: Iterable[KubeObject],
    logs: Mapping[tuple[str, str, bool], str],
    events: Iterable[KubeObject],
    domains: Iterable[KubeObject],
    nodes: Iterable[KubeObject],
) -> KubeObject:
    """The document: `logs` maps (pod, container, previous) to a log tail; `events` are the namespace's, of which
    those about the group's pods are kept."""
    listed = list(pods)
    names = {(p.get("metadata") or {}).get("name") for p in listed}
    return {
        "kind": "k3deploy-guard-evidence",
        "release": release,
        "namespace": namespace,
        "group": decision.group,
        "time": datetime.datetime.fromtimestamp(now, datetime.UTC).isoformat().replace("+00:00", "Z"),
        "decision": {
            "verdict": decision.verdict,
            "reason": decision.reason,
            "summary": decision.describe(),
            "sick": {tray: list(why) for tray, why in decision.sick.items()},
            "cordon": list(decision.cordon),
        },
        "pods": [_pod_entry(p, logs) for p in sorted(listed, key=lambda p: p["metadata"]["name"])],
        "events": [
            {k: e.get(k) for k in ("type", "reason", "message", "count", "lastTimestamp", "involvedObject")}
            for e in events
            if (e.get("involvedObject") or {}).get("kind") == "Pod"
            and (e.get("involvedObject") or {}).get("name") in names
        ],
        "computeDomains": [
            {"name": (d.get("metadata") or {}).get("name"), "status": d.get("status") or {}} for d in domains
        ],
        "nodes": [_node_entry(n) for n in nodes],
    }


def _encoded(bundle: KubeObject) -> bytes:
    return json.dumps(bundle, indent=1, sort_keys=True, default=str).encode()


def bounded(bundle: KubeObject, max_bytes: int) -> bytes:
    """The bundle as JSON of at most `max_bytes`: the longest log tails halved from their start until it fits (then,
    should it still not, every log emptied and the events dropped, oldest first)."""
    data = _encoded(bundle)
    while len(data) > max_bytes:
        tails = [
            (len(text), pod_i, container, which)
            for pod_i, pod in enumerate(bundle["pods"])
            for container, pair in pod["logs"].items()
            for which, text in pair.items()
            if len(text) > len(CUT_MARK) * 2
        ]
        if tails:
            _, pod_i, container, which = max(tails)
            text = bundle["pods"][pod_i]["logs"][container][which]
            body = text.removeprefix(CUT_MARK)
            bundle["pods"][pod_i]["logs"][container][which] = CUT_MARK + body[len(body) // 2 :]
        elif bundle["events"]:
            bundle["events"].pop(0)
        else:
            break
        data = _encoded(bundle)
    return data
