"""A bandwidth cap shared by every copier (`--max-mb-s`): a token bucket that says how long to wait.

The bucket starts empty and holds at most one second of bytes, so a pause never lets a burst past the cap. Pure: the caller
passes the clock reading and does the sleeping.
"""

from __future__ import annotations

import threading


class Throttle:
    """Bytes per second at most, over all threads; `rate` None lets everything through."""

    def __init__(self, rate: float | None, now: float) -> None:
        if rate is not None and rate <= 0:
            raise ValueError("a bandwidth cap must be positive")
        self.rate = rate
        self._tokens = 0.0  # empty at the start: not even the first second may pass the cap
        self._last = now
        self._lock = threading.Lock()

    def take(self, nbytes: int, now: float) -> float:
        """Account `nbytes` at clock `now`; the seconds the caller must sleep before it goes on."""
        if self.rate is None:
            return 0.0
        with self._lock:
            self._tokens = min(self.rate, self._tokens + (now - self._last) * self.rate)
            self._last = now
            self._tokens -= nbytes
            return 0.0 if self._tokens >= 0 else -self._tokens / self.rate
