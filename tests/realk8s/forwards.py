"""Forward a port of every serving leader pod to a process on this machine: a KWOK PortForward object per leader
(tests/realk8s/objects.py `port_forward`), made as the leaders appear, so `kubectl port-forward` or k3deploy's own
forward through kube-apiserver reaches that process. Used by the launcher's `--forward-pod-port PORT=HOST:PORT`."""

from __future__ import annotations

import threading
from dataclasses import dataclass

import httpx

from tests.realk8s import objects
from tests.realk8s.client import Api, ApiError, resource_path

#: The label the LWS controller puts on every leader pod (kubernetes-sigs/lws WorkerIndexLabelKey, value 0).
LEADER_SELECTOR = "leaderworkerset.sigs.k8s.io/worker-index=0"


@dataclass(frozen=True)
class ForwardSpec:
    """`PORT=HOST:PORT`: the pod port and where on this machine it is served."""

    port: int
    host: str
    host_port: int

    @classmethod
    def parse(cls, text: str) -> ForwardSpec:
        """Parse `8000=127.0.0.1:18000`; ValueError saying what is wrong."""
        pod_port, sep, target = text.partition("=")
        host, colon, host_port = target.rpartition(":")
        if not sep or not colon or not host:
            raise ValueError(f"{text!r} is not PORT=HOST:PORT")
        spec = cls(int(pod_port), host, int(host_port))
        if not (0 < spec.port < 65536 and 0 < spec.host_port < 65536):
            raise ValueError(f"{text!r}: ports must be 1-65535")
        return spec


class LeaderForwards:
    """Polls for leader pods (every namespace) and creates a PortForward for each that has none; `stop()` ends it."""

    def __init__(self, api: Api, specs: list[ForwardSpec], interval_s: float = 1.0) -> None:
        self.api, self.specs, self.interval_s = api, specs, interval_s
        self.made: set[tuple[str, str]] = set()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="realk8s leader forwards", daemon=True)

    def start(self) -> LeaderForwards:
        """Start polling in a thread of its own."""
        self._thread.start()
        return self

    def sync(self) -> None:
        """One pass: a PortForward for every leader pod that has none (forwarding each spec's port)."""
        pods = self.api.get(f"/api/v1/pods?labelSelector={LEADER_SELECTOR}")["items"]
        for pod in pods:
            key = (pod["metadata"]["namespace"], pod["metadata"]["name"])
            if key in self.made:
                continue
            obj = objects.port_forward(key[1], key[0], self.specs[0].port, self.specs[0].host, self.specs[0].host_port)
            obj["spec"]["forwards"] = [
                {"ports": [s.port], "target": {"address": s.host, "port": s.host_port}} for s in self.specs
            ]
            path = resource_path("kwok.x-k8s.io/v1alpha1", "portforwards", key[0])
            try:
                self.api.create(path, obj)
            except ApiError as exc:
                if exc.status != 409:  # 409: one exists already (made by hand, or by a test): left as it is
                    raise
            self.made.add(key)

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            try:
                self.sync()
            except (ApiError, httpx.HTTPError):
                continue  # a namespace being deleted, the server busy: the next pass tries again

    def stop(self) -> None:
        """End the polling thread."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=10)
