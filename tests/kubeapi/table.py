"""meta.k8s.io/v1 Table output (what `kubectl get` asks for): pods like the server prints them, CRDs by their
additionalPrinterColumns, everything else by name and age.
"""

from __future__ import annotations

from datetime import UTC, datetime

from tests.kubeapi.registry import ResourceType


def _age(timestamp: str | None) -> str:
    if not timestamp:
        return "<unknown>"
    then = datetime.strptime(timestamp, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    seconds = int((datetime.now(UTC) - then).total_seconds())
    return f"{seconds}s" if seconds < 120 else f"{seconds // 60}m"


def _json_path(obj: dict, path: str) -> object:
    value: object = obj
    for part in path.strip(".").split("."):
        value = value.get(part) if isinstance(value, dict) else None
    return value


def pod_status(pod: dict) -> str:
    """The STATUS column of `kubectl get pods`."""
    if pod["metadata"].get("deletionTimestamp"):
        return "Terminating"
    status = pod.get("status", {})
    for cs in status.get("containerStatuses", []):
        state = cs.get("state", {})
        if "waiting" in state and state["waiting"].get("reason"):
            return state["waiting"]["reason"]
        if "terminated" in state and state["terminated"].get("reason"):
            return state["terminated"]["reason"]
    return status.get("phase", "Pending")


def _pod_row(pod: dict) -> list:
    statuses = pod.get("status", {}).get("containerStatuses", [])
    ready = sum(1 for s in statuses if s.get("ready"))
    total = len(pod.get("spec", {}).get("containers", []))
    restarts = sum(s.get("restartCount", 0) for s in statuses)
    return [
        pod["metadata"]["name"],
        f"{ready}/{total}",
        pod_status(pod),
        restarts,
        _age(pod["metadata"].get("creationTimestamp")),
        pod.get("status", {}).get("podIP") or "<none>",
        pod.get("spec", {}).get("nodeName") or "<none>",
    ]


_POD_COLUMNS = [
    ("Name", "string", 0),
    ("Ready", "string", 0),
    ("Status", "string", 0),
    ("Restarts", "string", 0),
    ("Age", "string", 0),
    ("IP", "string", 1),
    ("Node", "string", 1),
]


def as_table(rtype: ResourceType, items: list[dict], resource_version: str) -> dict:
    """A Table of `items` with PartialObjectMetadata row objects."""
    if rtype.key == ("", "pods"):
        columns, rows = _POD_COLUMNS, [_pod_row(p) for p in items]
    elif rtype.printer_columns:
        columns = [("Name", "string", 0)] + [
            (c["name"], c.get("type", "string"), c.get("priority", 0)) for c in rtype.printer_columns
        ]
        rows = []
        for obj in items:
            row = [obj["metadata"]["name"]]
            for c in rtype.printer_columns:
                value = _json_path(obj, c["jsonPath"])
                row.append(_age(value) if c.get("type") == "date" else value)
            rows.append(row)
    else:
        columns = [("Name", "string", 0), ("Age", "string", 0)]
        rows = [[o["metadata"]["name"], _age(o["metadata"].get("creationTimestamp"))] for o in items]
    return {
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": {"resourceVersion": resource_version},
        "columnDefinitions": [
            {
                "name": n,
                "type": "integer" if t == "integer" else "string",
                "format": "",
                "description": n,
                "priority": p,
            }
            for n, t, p in columns
        ],
        "rows": [
            {
                "cells": row,
                "object": {
                    "kind": "PartialObjectMetadata",
                    "apiVersion": "meta.k8s.io/v1",
                    "metadata": obj["metadata"],
                },
            }
            for row, obj in zip(rows, items, strict=True)
        ],
    }
