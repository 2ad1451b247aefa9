"""A simulated controller: a thread that reconciles whenever the store changes (and on a short tick)."""

from __future__ import annotations

import logging
import threading
import traceback

from tests.kubeapi.errors import ApiError
from tests.kubeapi.store import Store

log = logging.getLogger(__name__)


class Controller:
    """Base class: subclasses implement `reconcile()`; `enabled` switches one off without stopping its thread."""

    #: Name used as field manager and event source.
    name = "controller"

    def __init__(self, store: Store, tick: float = 0.05) -> None:
        self.store = store
        self.tick = tick
        #: Held for the whole of one reconcile pass, so switching a controller off waits for its pass in flight.
        self._pass = threading.Lock()
        self._enabled = True
        #: Unexpected exceptions raised by reconcile (tests and the fixture assert there are none).
        self.errors: list[str] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def enabled(self) -> bool:
        """Whether the loop reconciles; once set False, no pass is running or will start (a pass in flight ends
        first), so a test that switches a controller off then changes the store is not raced by it."""
        return self._enabled

    @enabled.setter
    def enabled(self, value: bool) -> None:
        with self._pass:
            self._enabled = value

    def reconcile(self) -> None:
        """One pass over the objects this controller owns."""
        raise NotImplementedError

    def start(self) -> None:
        """Run the reconcile loop in a daemon thread."""
        self._thread = threading.Thread(target=self._loop, name=f"kubeapi-{self.name}", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """End the loop and wait for it."""
        self._stop.set()
        with self.store.lock:
            self.store.changed.notify_all()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def _loop(self) -> None:
        while not self._stop.is_set():
            with self._pass:
                if self._enabled:
                    try:
                        self.reconcile()
                    except ApiError as exc:  # a race with another writer (404/409): the next pass sees the new state
                        log.debug("%s: %s", self.name, exc)
                    except Exception:
                        self.errors.append(traceback.format_exc())
                        log.exception("%s failed", self.name)
            with self.store.lock:
                if not self._stop.is_set():
                    self.store.changed.wait(self.tick)


def set_condition(conditions: list[dict], type_: str, status: str, reason: str, message: str, now: str) -> None:
    """Set a condition in place, keeping lastTransitionTime unless the status flips."""
    for cond in conditions:
        if cond["type"] == type_:
            if cond["status"] != status:
                cond["lastTransitionTime"] = now
            cond.update(status=status, reason=reason, message=message)
            return
    conditions.append(
        {"type": type_, "status": status, "reason": reason, "message": message, "lastTransitionTime": now}
    )
