"""The thread the plane's stand-ins poll the API from (the storage provisioner): `sync()` every
`interval_s` until `stop()`, a failed pass recorded in `errors` and retried at the next."""

from __future__ import annotations

import threading
from typing import Self

import httpx

from tests.realk8s.client import Api, ApiError


class Poller:
    """Runs `sync()` (a subclass's one pass) from a daemon thread every `interval_s` until `stop()`."""

    def __init__(self, api: Api, interval_s: float, name: str) -> None:
        self.api = api
        self.errors: list[str] = []
        self._interval = interval_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    def start(self) -> Self:
        """Start the thread."""
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop the thread and wait for it."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=10)

    def sync(self) -> None:
        """One pass."""
        raise NotImplementedError

    def _run(self) -> None:
        while not self._stop.wait(self._interval):
            try:
                self.sync()
            except (ApiError, httpx.HTTPError, OSError) as exc:
                # A slow or refused request (a loaded machine, the server stopping): the next pass retries.
                self.errors.append(f"{type(exc).__name__}: {exc}")
