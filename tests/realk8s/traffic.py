"""What the traffic-gate tests run beside an upgrade on the real plane: a bounded load generator on the server the
leaders' forwarded port reaches, and a watch of the API Service's EndpointSlices that checks every pod it lists
carries the gate's label (tests/realk8s/test_traffic_gate.py)."""

from __future__ import annotations

import contextlib
import json
import ssl
import threading
from dataclasses import dataclass, field

import httpx

from tests.realk8s.client import ApiError, resource_path
from tests.realk8s.plane import Plane

GATED_LABEL = "k3deploy/gated"
#: The longest a watch runs (one upgrade).
WATCH_S = 500


@dataclass
class Load:
    """Requests sent to `url` one after another from a thread until stopped, at most `limit` of them, each bounded by
    `timeout_s`: users' traffic on the server the gates also smoke."""

    url: str
    model: str
    limit: int = 5000
    timeout_s: float = 60.0
    ok: int = 0
    failed: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="realk8s load", daemon=True)

    def __enter__(self) -> Load:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=self.timeout_s + 10)

    def _run(self) -> None:
        body = {"model": self.model, "prompt": "The quick brown fox", "max_tokens": 24, "temperature": 0}
        with httpx.Client(timeout=self.timeout_s) as client:
            for _ in range(self.limit):
                if self._stop.is_set():
                    return
                try:
                    response = client.post(f"{self.url}/v1/completions", json=body)
                    response.raise_for_status()
                    self.ok += 1
                except httpx.HTTPError as exc:
                    self.failed.append(f"{type(exc).__name__}: {exc}")


class GateWatch:
    """A real watch of a Service's EndpointSlices (from a list's resourceVersion, so no write is missed); each pod an
    endpoint names (ready or not) is read back: one that still exists with the same uid and no gate label was listed
    ungated (the label is only ever added to a pod, so a pod the Service selected by it carries it for life)."""

    def __init__(self, plane: Plane, namespace: str, service: str) -> None:
        self.plane, self.namespace = plane, namespace
        self.listed: list[list[str]] = []
        self.ungated: list[str] = []
        self._checked: set[str] = set()
        self._path = resource_path("discovery.k8s.io/v1", "endpointslices", namespace)
        self._selector = f"kubernetes.io/service-name={service}"
        self._http = httpx.Client(
            base_url=plane.url,
            headers={"Authorization": f"Bearer {plane.tokens['realk8s-admin']}", "Accept": "application/json"},
            verify=ssl.create_default_context(cafile=str(plane.ca_file)),
            timeout=httpx.Timeout(30.0, read=WATCH_S + 30),
        )
        listed = plane.api.get(f"{self._path}?labelSelector={self._selector}")
        self._slices = {s["metadata"]["name"]: s for s in listed["items"]}
        self._rv = listed["metadata"]["resourceVersion"]
        self._record()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="realk8s gate watch", daemon=True)
        self._thread.start()

    def _record(self) -> None:
        pods = sorted(
            {
                (e["targetRef"]["name"], e["targetRef"].get("uid", ""))
                for s in self._slices.values()
                for e in s.get("endpoints") or []
                if e.get("targetRef")
            }
        )
        self.listed.append([name for name, _ in pods])
        for name, uid in pods:
            if uid in self._checked:
                continue
            self._checked.add(uid)
            try:
                pod = self.plane.api.get(resource_path("v1", "pods", self.namespace, name))
            except ApiError:
                continue  # gone since: nothing to read back
            meta = pod["metadata"]
            if meta.get("uid") == uid and (meta.get("labels") or {}).get(GATED_LABEL) != "true":
                self.ungated.append(f"{name} ({uid})")

    def _watch(self) -> None:
        params = {"watch": "true", "labelSelector": self._selector, "resourceVersion": self._rv}
        params["timeoutSeconds"] = str(WATCH_S)
        with contextlib.suppress(httpx.HTTPError), self._http.stream("GET", self._path, params=params) as response:
            for line in response.iter_lines():
                if self._stop.is_set():
                    return
                if not line:
                    continue
                event = json.loads(line)
                obj = event["object"]
                if event["type"] == "DELETED":
                    self._slices.pop(obj["metadata"]["name"], None)
                elif event["type"] in ("ADDED", "MODIFIED"):
                    self._slices[obj["metadata"]["name"]] = obj
                else:
                    continue
                self._record()

    def stop(self) -> GateWatch:
        """Stop watching, then check the slices as the server holds them now (what the watch had not delivered yet)."""
        self._stop.set()
        self._http.close()
        self._thread.join(timeout=10)
        listed = self.plane.api.get(f"{self._path}?labelSelector={self._selector}")
        self._slices = {s["metadata"]["name"]: s for s in listed["items"]}
        self._record()
        return self
