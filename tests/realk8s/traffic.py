"""What the traffic-gate tests run beside an upgrade on the real plane: a bounded load generator on the server the
leaders' forwarded port reaches, and a watch of the API Service's EndpointSlices that checks every pod it lists
carries the gate's label (tests/realk8s/test_traffic_gate.py)."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

import httpx

from tests.realk8s.client import ApiError, resource_path
from tests.realk8s.plane import Plane
from tests.realk8s.slices import SliceWatch

GATED_LABEL = "k3deploy/gated"


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
    """A real watch of a Service's EndpointSlices (tests/realk8s/slices.py); each pod an endpoint names (ready or
    not) is read back: one that still exists with the same uid and no gate label was listed ungated (the label is
    only ever added to a pod, so a pod the Service selected by it carries it for life)."""

    def __init__(self, plane: Plane, namespace: str, service: str) -> None:
        self.plane, self.namespace = plane, namespace
        self.listed: list[list[str]] = []
        self.ungated: list[str] = []
        self._checked: set[str] = set()
        self._watch = SliceWatch(plane, namespace, service, self._record, initial=True)

    def _record(self, slices: dict[str, dict]) -> None:
        pods = sorted(
            {
                (e["targetRef"]["name"], e["targetRef"].get("uid", ""))
                for s in slices.values()
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

    def stop(self) -> GateWatch:
        """Stop watching, then check the slices as the server holds them now (what the watch had not delivered yet)."""
        self._watch.stop()
        self._record(self._watch.relist())
        return self
