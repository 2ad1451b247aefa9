"""One deadline loop for the Kubernetes target's waits on the API server (a Job gone or finished, a group ready on
its new template, a Service's EndpointSlices listing the new leader): ask, and between asks sleep no longer than
the time that is left."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def poll(
    until: Callable[[], T | None],
    remaining: Callable[[], float | None],
    every: float,
    *,
    sleep: Callable[[float], None] = time.sleep,
) -> T | None:
    """What `until()` returns once it is not None; None when `remaining()` (seconds left, None for no deadline) says
    the time is up before it did. `until` is always asked once, even with no time left; each sleep is `every`
    seconds, or what is left when that is less."""
    while True:
        found = until()
        if found is not None:
            return found
        left = remaining()
        if left is not None and left <= 0:
            return None
        sleep(every if left is None else min(every, left))


def time_left(deadline: float) -> Callable[[], float]:
    """`remaining` for a deadline on the monotonic clock."""
    return lambda: deadline - time.monotonic()
