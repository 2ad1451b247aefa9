"""The thread the plane's stand-ins poll the API from (the storage provisioner, the DRA driver): `sync()` every
`interval_s` until `stop()`, a failed pass recorded in `errors` and retried at the next, so a stand-in never dies
silently (a dead one would leave every later test waiting on a volume or a gate that never comes)."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from typing import Self

from tests.realk8s.client import Api


class Poller:
    """Runs `sync()` (a subclass's one pass) from a daemon thread every `interval_s` until `stop()`."""

    def __init__(self, api: Api, interval_s: float, name: str) -> None:
        self.api = api
        self.errors: list[str] = []
        self._interval = interval_s
        self._stop = threading.Event()
        self._paused = threading.Event()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    @property
    def name(self) -> str:
        """The thread's name (what the stand-in is)."""
        return self._thread.name

    def start(self) -> Self:
        """Start the thread."""
        self._thread.start()
        return self

    def alive(self) -> bool:
        """The thread runs (started and not stopped)."""
        return self._thread.is_alive()

    def stop(self) -> None:
        """Stop the thread and wait for it."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=10)

    @contextlib.contextmanager
    def paused(self) -> Iterator[None]:
        """No pass runs inside the block (a stand-in that does not answer)."""
        self._paused.set()
        try:
            time.sleep(self._interval * 2)  # a pass under way ends
            yield
        finally:
            self._paused.clear()

    def sync(self) -> None:
        """One pass."""
        raise NotImplementedError

    def _run(self) -> None:
        while not self._stop.wait(self._interval):
            if self._paused.is_set():
                continue
            try:
                self.sync()
            except Exception as exc:  # the next pass retries; the tier's fixture reports what was recorded
                self.errors.append(f"{type(exc).__name__}: {exc}")
