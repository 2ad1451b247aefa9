"""A real watch of a Service's EndpointSlices on the plane, for the tests that check who a Service sent traffic to
during an upgrade (cluster_fixtures.SliceRecorder: its ready endpoints; traffic.GateWatch: that each is gated)."""

from __future__ import annotations

import contextlib
import json
import ssl
import threading
from collections.abc import Callable
from typing import Any

import httpx

from tests.realk8s.client import resource_path
from tests.realk8s.plane import Plane

#: The longest a watch runs (one upgrade).
WATCH_S = 500


class SliceWatch:
    """The EndpointSlices of `service`, by name: listed, then watched from that list's resourceVersion (so no write is
    missed) in a thread until `stop()`; `changed(slices)` is called after each write the watch delivers (and once
    with the list, before the watch begins, when `initial`)."""

    def __init__(
        self,
        plane: Plane,
        namespace: str,
        service: str,
        changed: Callable[[dict[str, dict[str, Any]]], None],
        *,
        initial: bool = False,
    ) -> None:
        self.plane, self.changed = plane, changed
        self._path = resource_path("discovery.k8s.io/v1", "endpointslices", namespace)
        self._selector = f"kubernetes.io/service-name={service}"
        self._http = httpx.Client(
            base_url=plane.url,
            headers={"Authorization": f"Bearer {plane.tokens['realk8s-admin']}", "Accept": "application/json"},
            verify=ssl.create_default_context(cafile=str(plane.ca_file)),
            timeout=httpx.Timeout(30.0, read=WATCH_S + 30),
        )
        self.slices, rv = self._list()
        if initial:
            changed(self.slices)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, args=(rv,), name="realk8s slice watch", daemon=True)
        self._thread.start()

    def _list(self) -> tuple[dict[str, dict[str, Any]], str]:
        listed = self.plane.api.get(f"{self._path}?labelSelector={self._selector}")
        return {s["metadata"]["name"]: s for s in listed["items"]}, listed["metadata"]["resourceVersion"]

    def _watch(self, rv: str) -> None:
        params = {
            "watch": "true",
            "labelSelector": self._selector,
            "resourceVersion": rv,
            "timeoutSeconds": str(WATCH_S),
            "allowWatchBookmarks": "false",
        }
        with contextlib.suppress(httpx.HTTPError), self._http.stream("GET", self._path, params=params) as response:
            for line in response.iter_lines():
                if self._stop.is_set():
                    return
                if not line:
                    continue
                event = json.loads(line)
                obj = event["object"]
                if event["type"] == "DELETED":
                    self.slices.pop(obj["metadata"]["name"], None)
                elif event["type"] in ("ADDED", "MODIFIED"):
                    self.slices[obj["metadata"]["name"]] = obj
                else:
                    continue
                self.changed(self.slices)

    def stop(self) -> None:
        """Stop watching."""
        self._stop.set()
        self._http.close()
        self._thread.join(timeout=10)

    def relist(self) -> dict[str, dict[str, Any]]:
        """The slices as the server holds them now (what a stopped watch had not delivered yet too)."""
        self.slices, _ = self._list()
        return self.slices
