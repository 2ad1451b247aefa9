"""Watch plumbing for the waiter: one thread per watched kind feeding one inbox with typed events.

Each stream lists, then watches from the list's resourceVersion, resumes from the last seen version after a
dropped connection, re-lists after `410 Gone`, and stops on a non-transient error (or, for an optional kind,
reports it unavailable and ends).
"""

from __future__ import annotations

import queue
import threading
import time
from dataclasses import dataclass
from typing import Any

from k3deploy.errors import K3DeployError, KubeError
from k3deploy.kobject import KubeObject
from k3deploy.kube.port import KubePort

#: How long the server keeps one watch connection open before the waiter re-opens it.
WATCH_TIMEOUT_S = 60


@dataclass(frozen=True)
class Synced:
    """A (re-)list of one kind: every object of it in the namespace."""

    kind: str
    items: list[KubeObject]


@dataclass(frozen=True)
class Changed:
    """One object added, modified or deleted."""

    kind: str
    type: str
    obj: KubeObject


@dataclass(frozen=True)
class Note:
    """Something worth a line of its own (a re-list)."""

    text: str


@dataclass(frozen=True)
class Broken:
    """A stream ended on an error waiting will not fix."""

    error: K3DeployError


@dataclass(frozen=True)
class Unavailable:
    """An optional kind could not be read (forbidden, not served): the judge goes without it."""

    kind: str
    reason: str


Event = Synced | Changed | Note | Broken | Unavailable


class Stream(threading.Thread):
    """List then watch one kind in a namespace (a cluster-scoped kind: all of it; `field_selector`: only what it
    selects), forever resuming, until stopped; events go to `out`."""

    def __init__(
        self,
        api: KubePort,
        api_version: str,
        kind: str,
        namespace: str,
        out: queue.Queue[Event],
        stop: threading.Event,
        optional: bool = False,
        field_selector: str | None = None,
    ) -> None:
        super().__init__(name=f"watch-{kind}", daemon=True)
        self.api, self.api_version, self.kind, self.namespace = api, api_version, kind, namespace
        self.out, self.stop, self.optional = out, stop, optional
        self.field_selector = field_selector
        self._watcher: Any = None

    def halt(self) -> None:
        """Stop now: end the open watch connection instead of waiting for the server to close it."""
        self.stop.set()
        watcher = self._watcher
        if watcher is not None:
            watcher.stop()

    def _fail(self, error: K3DeployError, status: int | None) -> None:
        if self.optional:
            self.out.put(Unavailable(self.kind, f"{status}: {error}" if status else str(error)))
        else:
            self.out.put(Broken(error))

    def run(self) -> None:
        """The thread: list, watch, resume or re-list, until stopped or a non-transient error."""
        version: str | None = None
        backoff = 0.2
        while not self.stop.is_set():
            try:
                if version is None:
                    try:
                        items, version = self.api.list(
                            self.api_version, self.kind, self.namespace, field_selector=self.field_selector
                        )
                    except K3DeployError as exc:  # already retried: a list that fails ends the stream
                        self._fail(exc, None)
                        return
                    self.out.put(Synced(self.kind, items))
                opened = time.monotonic()
                seen = 0
                self._watcher = self.api.new_watcher()
                if self.stop.is_set():
                    return
                for event in self.api.watch(
                    self.api_version,
                    self.kind,
                    self.namespace,
                    version,
                    timeout_s=WATCH_TIMEOUT_S,
                    field_selector=self.field_selector,
                    watcher=self._watcher,
                ):
                    if self.stop.is_set():
                        return
                    obj = event["object"]
                    version = obj.get("metadata", {}).get("resourceVersion") or version
                    seen += 1
                    if event["type"] in ("ADDED", "MODIFIED", "DELETED"):
                        self.out.put(Changed(self.kind, event["type"], obj))
                if not seen and time.monotonic() - opened < 1:
                    # A server that ends watches at once must not turn this loop into a busy one.
                    self.stop.wait(backoff)
                    backoff = min(backoff * 2, 5.0)
                else:
                    backoff = 0.2
            except KubeError as exc:
                if exc.status == 410:
                    self.out.put(Note(f"watch of {self.kind} expired (410 Gone): re-listing"))
                    version = None
                    continue
                if not exc.transient:
                    self._fail(exc, exc.status or None)
                    return
                # Transient statuses and dropped or timed-out connections: resume from the last version seen.
                self.stop.wait(backoff)
                backoff = min(backoff * 2, 5.0)
            except K3DeployError as exc:
                self._fail(exc, None)
                return


class Inbox:
    """Streams for several kinds of one namespace feeding one queue; a context manager that halts them on exit.
    `selectors`: a field selector per kind, for kinds read only in part."""

    def __init__(
        self,
        api: KubePort,
        namespace: str,
        kinds: list[tuple[str, str]],
        optional: frozenset[str] = frozenset(),
        selectors: dict[str, str] | None = None,
    ) -> None:
        self._queue: queue.Queue[Event] = queue.Queue()
        self._stop = threading.Event()
        self.kinds = [kind for _, kind in kinds]
        self._streams = [
            Stream(
                api,
                api_version,
                kind,
                namespace,
                self._queue,
                self._stop,
                kind in optional,
                (selectors or {}).get(kind),
            )
            for api_version, kind in kinds
        ]

    def __enter__(self) -> Inbox:
        for stream in self._streams:
            stream.start()
        return self

    def __exit__(self, *exc: object) -> None:
        for stream in self._streams:
            stream.halt()

    def drain(self, timeout_s: float) -> list[Event]:
        """What arrived: waits up to `timeout_s` for the first event, then takes every one already queued."""
        try:
            events = [self._queue.get(timeout=max(timeout_s, 0.01))]
        except queue.Empty:
            return []
        while True:
            try:
                events.append(self._queue.get_nowait())
            except queue.Empty:
                return events
