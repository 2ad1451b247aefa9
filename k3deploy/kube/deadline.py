"""When a command must be done: one deadline object shared by every Kubernetes API call the command makes. Pure.

Each API request gets connect and read timeouts of its own (`DEFAULT_REQUEST_TIMEOUT`, or what the caller asks,
e.g. a watch's), cut down to what is left of the command's deadline, so `--timeout` bounds the whole command and
not only its waits. Past the deadline a request may still use `GRACE_S`: the diagnosis of a rollout that timed out
reads events and logs after the deadline, and a rollback needs a few calls; after that, requests are refused.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

#: (connect, read) seconds of a request that asks for nothing else. The connect timeout bounds the TCP and TLS
#: handshakes; the read timeout bounds each wait for bytes (an answer's head, and then each part of its body).
DEFAULT_REQUEST_TIMEOUT = (10.0, 30.0)
#: Seconds past the deadline that requests may still take: to diagnose and report what the deadline cut short.
GRACE_S = 10.0
#: Shortest timeout a request is given: urllib3 treats 0 as "no timeout", and a request needs some time.
MIN_REQUEST_S = 0.5


class Deadline:
    """A monotonic instant by which a command must end, or none (`seconds=None`: only per-request timeouts apply)."""

    def __init__(
        self, seconds: float | None = None, *, clock: Callable[[], float] = time.monotonic, flag: str | None = None
    ) -> None:
        self.clock = clock
        #: The command-line flag that sets this deadline (`--timeout`), None on a command that has none: a hint
        #: names the flag only where the user can pass it.
        self.flag = flag
        self.seconds: float | None = None
        self.at: float | None = None
        if seconds is not None:
            self.restart(seconds)

    def hint_tail(self) -> str:
        """ "; --timeout bounds the whole command" where the command has the flag, else nothing."""
        return f"; {self.flag} bounds the whole command" if self.flag else ""

    @property
    def bounded(self) -> bool:
        """True once the command has a deadline."""
        return self.at is not None

    def restart(self, seconds: float) -> None:
        """A fresh budget of `seconds` from now (a rollback after a timed-out rollout gets one of its own)."""
        self.seconds = float(seconds)
        self.at = self.clock() + self.seconds

    def remaining(self) -> float | None:
        """Seconds left before the deadline (negative past it); None without a deadline."""
        return None if self.at is None else self.at - self.clock()

    def expired(self) -> bool:
        """True past the deadline itself (the grace not counted)."""
        left = self.remaining()
        return left is not None and left <= 0

    def request_timeout(self, asked: float | tuple[float, float] | None = None) -> RequestBound | None:
        """(connect, read) seconds for one request: `asked` (or the default), cut to what is left of the deadline.

        Past the deadline, what is left of the grace; None when the grace is spent too: the request must not be sent.
        """
        if asked is None:
            connect, read = DEFAULT_REQUEST_TIMEOUT
        elif isinstance(asked, tuple):
            connect, read = float(asked[0]), float(asked[1])
        else:
            connect = read = float(asked)
        left = self.remaining()
        if left is None:
            return RequestBound(connect, read, cut=False)
        if left <= -GRACE_S:
            return None
        cap = max(left, MIN_REQUEST_S) if left > 0 else left + GRACE_S
        return RequestBound(min(connect, cap), min(read, cap), cut=read > cap)


@dataclass(frozen=True)
class RequestBound:
    """The timeouts of one request, and whether the command's deadline (not the request's own bound) set them."""

    connect: float
    read: float
    cut: bool

    def as_tuple(self) -> tuple[float, float]:
        """(connect, read), as the official client's `_request_timeout` takes it."""
        return self.connect, self.read
